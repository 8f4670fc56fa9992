"""The in-memory vector index of one tier: derived from `learning_embeddings`, rebuilt at start-up.

Small tiers are searched exactly (one matrix product, recall 1.0: ≈ 0.9 ms at 10k vectors here on one
BLAS thread). Past `exact_limit` vectors an HNSW graph (usearch, inner product on unit vectors) answers
instead, because an exact scan grows faster than linearly once the matrix leaves the cache while HNSW stays
near a millisecond (figures in docs/performance-history.md, `benchmarks.ann`). The matrix is kept in both
cases: it is what the graph is built from, what exact search uses while the graph is being built, and what
removals move rows within. usearch was chosen over hnswlib (no wheels, unmaintained) and faiss (its HNSW
cannot remove a vector).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from groove.coordinator.search.embedder import Vectors
from groove.protocol import constants as C

if TYPE_CHECKING:  # usearch is imported with the first graph: a start, and a tier searched exactly, go without it
    from usearch.index import BatchMatches, Index, Matches

_HNSW_M = 16
# The graph stores its vectors in half precision and its answers are re-scored from the f32 matrix: on 100k real
# MiniLM vectors the same recall@10 as f32 (0.984 at k=10, 0.990 at k=50), 41 % less memory (110 vs 187 MB),
# 33 % faster builds, queries within 5 % of f32 (benchmarks.ann, docs/performance-history.md), and cosines exact.
_GRAPH_DTYPE = "f16"
_HNSW_EF_CONSTRUCTION = 100
_HNSW_EF_MIN = 64
# A background build leaves one core to serving: on 2 cores, a build on both made searches 3x slower.
_BUILD_THREADS = max(1, (os.cpu_count() or 2) - 1)
_REPLAY_UNDER_LOCK = 2000  # rows changed during a build that are replayed while searches wait
_NEIGHBOUR_CHUNK = 8  # learnings compared per hold of the lock

log = logging.getLogger(__name__)

_COST_WEIGHT = 0.2  # of the latest call in `WorkCost`'s moving average


_FIRST_ROWS = 1024  # rows of a new index's matrix; it doubles when full


class WorkCost:
    """Seconds of work per vector, a moving average over the latest calls: the embedding pool paces the vectors
    it stores by it while clients write. Written by one thread; read by any (a float is assigned whole)."""

    def __init__(self) -> None:
        self.per_vector = 0.0

    def add(self, seconds: float, vectors: int) -> None:
        """One call's time over its vectors."""
        if vectors <= 0:
            return
        sample = seconds / vectors
        last = self.per_vector
        self.per_vector = sample if last == 0.0 else last + _COST_WEIGHT * (sample - last)


class VectorIndex:
    """Learning id -> unit vector, searchable by inner product. Thread-safe: one lock guards it all.

    Rows of the matrix are the graph's keys. The graph is built on a background thread from a snapshot of the
    matrix, while searches stay exact; rows written or moved meanwhile are recorded in `_dirty` and replayed
    into the graph before it takes over. So neither opening a large tier nor crossing `exact_limit` in the
    middle of a write burst stalls the coordinator.
    """

    def __init__(self, exact_limit: int = 10_000, dim: int = C.EMBEDDING_DIM) -> None:
        self.dim = dim
        self.exact_limit = exact_limit
        self._lock = threading.Lock()
        self._matrix: Vectors = np.zeros((_FIRST_ROWS, dim), dtype=np.float32)
        self._ids: list[str] = []  # row -> id
        self._rows: dict[str, int] = {}  # id -> row
        self._hnsw: Index | None = None
        self._dirty: set[int] | None = None  # while a graph is being built: rows changed since its snapshot
        self._builder: threading.Thread | None = None

    def __len__(self) -> int:
        return len(self._ids)

    def memory_bytes(self) -> int:
        """What it holds: the matrix, the id maps (about 170 B an id) and any graph. The first matrix's untouched
        rows are not resident (numpy asks for zeroed pages, which the system gives on first write); a grown one
        was copied whole, spare rows too."""
        rows = len(self._ids) if len(self._matrix) == _FIRST_ROWS else len(self._matrix)
        graph = self._hnsw
        return rows * self.dim * 4 + 170 * len(self._ids) + (int(graph.memory_usage) if graph is not None else 0)

    def heap_bytes(self) -> int:
        """What it took from the C heap, resident or not: the whole matrix (numpy's zeroed pages count there before
        they are touched) and any graph."""
        graph = self._hnsw
        return int(self._matrix.nbytes) + (int(graph.memory_usage) if graph is not None else 0)

    def __contains__(self, learning_id: object) -> bool:
        return learning_id in self._rows

    @property
    def uses_hnsw(self) -> bool:
        """Whether searches go to the HNSW graph."""
        return self._hnsw is not None

    @property
    def state(self) -> str:
        """ "exact", "building" (searched exactly while the graph is built) or "hnsw"."""
        if self._hnsw is not None:
            return "hnsw"
        return "exact" if self._dirty is None else "building"

    def wait_built(self, timeout: float | None = None) -> bool:
        """Block until no graph build is running; True if none is."""
        builder = self._builder
        if builder is not None:
            builder.join(timeout)
        return self._dirty is None

    def upsert(self, ids: list[str], vectors: Vectors) -> None:
        """Add or replace the vectors of these (distinct) learnings."""
        with self._lock:
            rows = []
            for lid in ids:
                row = self._rows.get(lid)
                if row is None:
                    row = len(self._ids)
                    if row == len(self._matrix):
                        self._matrix = np.concatenate([self._matrix, np.zeros_like(self._matrix)])
                    self._ids.append(lid)
                    self._rows[lid] = row
                rows.append(row)
            self._matrix[rows] = vectors
            if self._hnsw is not None:
                _put(self._hnsw, self._matrix[rows], rows, threads=_BUILD_THREADS)
            elif self._dirty is not None:
                self._dirty.update(rows)
            elif len(self._ids) > self.exact_limit:
                self._start_build()

    def remove(self, ids: list[str]) -> None:
        """Forget these learnings' vectors (unknown ids are ignored). The last row fills the freed one."""
        with self._lock:
            for lid in ids:
                row = self._rows.pop(lid, None)
                if row is None:
                    continue
                last = len(self._ids) - 1
                if row != last:
                    moved = self._ids[last]
                    self._matrix[row] = self._matrix[last]
                    self._ids[row] = moved
                    self._rows[moved] = row
                    if self._hnsw is not None:
                        # the graph's keys are rows: key `row` now holds the moved vector
                        _put(self._hnsw, self._matrix[row].reshape(1, -1), [row], threads=1)
                if self._hnsw is not None:
                    self._hnsw.remove(last)
                elif self._dirty is not None:
                    self._dirty.update((row, last))
                self._ids.pop()

    def similarity(self, learning_id: str, query: Vectors) -> float | None:
        """Cosine similarity of one learning to the query; None if it has no vector."""
        with self._lock:
            row = self._rows.get(learning_id)
            return None if row is None else float(self._matrix[row] @ query.reshape(-1))

    def search(self, query: Vectors, k: int) -> list[tuple[str, float]]:
        """The `k` nearest learnings by cosine similarity, best first."""
        with self._lock:
            n = len(self._ids)
            if n == 0 or k <= 0:
                return []
            k = min(k, n)
            if self._hnsw is not None:
                _search_depth(self._hnsw, 2 * k)
                rows = self._hnsw.search(query.reshape(-1), k, threads=1).keys.astype(np.intp)
                exact = self._matrix[rows] @ query.reshape(-1)
                order = np.argsort(-exact)
                return [(self._ids[int(rows[i])], float(exact[i])) for i in order]
            scores = self._matrix[:n] @ query.reshape(-1)
            top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
            top = top[np.argsort(-scores[top])]
            return [(self._ids[int(i)], float(scores[i])) for i in top]

    def neighbours(self, ids: list[str], threshold: float, k: int = 4) -> list[tuple[str, str, float]]:
        """(id, other id, cosine) for each of these learnings' `k` nearest others, those at least `threshold`
        similar. Never more than `k` a learning, searched exactly or not: a tier of a thousand near-identical
        learnings would otherwise relate each to every other, half a million relations.

        The lock is taken for a few learnings at a time, so searches never wait long behind this.
        """
        found: list[tuple[str, str, float]] = []
        for start in range(0, len(ids), _NEIGHBOUR_CHUNK):
            with self._lock:
                rows = [self._rows[lid] for lid in ids[start : start + _NEIGHBOUR_CHUNK] if lid in self._rows]
                if not rows or len(self._ids) < 2:
                    continue
                queries = self._matrix[rows]
                want = min(k + 1, len(self._ids))  # each one itself and its k nearest, searched exactly or not
                if self._hnsw is not None:
                    _search_depth(self._hnsw, 2 * want)
                    answers = _per_query(self._hnsw.search(queries, want, threads=1))
                    for row, keys in zip(rows, answers, strict=True):
                        exact = self._matrix[keys] @ self._matrix[row]
                        found += [
                            (self._ids[row], self._ids[int(key)], float(c)) for key, c in zip(keys, exact, strict=True)
                        ]
                    continue
                scores = queries @ self._matrix[: len(self._ids)].T
                for row, row_scores in zip(rows, scores, strict=True):
                    nearest = np.argpartition(-row_scores, want - 1)[:want]
                    found += [
                        (self._ids[row], self._ids[int(other)], float(row_scores[other]))
                        for other in nearest
                        if row_scores[other] >= threshold
                    ]
        return [(a, b, score) for a, b, score in found if a != b and score >= threshold]

    def _start_build(self) -> None:
        """Start building the graph from a snapshot of the matrix (called with the lock held)."""
        snapshot = self._matrix[: len(self._ids)].copy()
        self._dirty = set()
        self._builder = threading.Thread(target=self._build, args=(snapshot,), name="groove-hnsw-build", daemon=True)
        self._builder.start()

    def _build(self, snapshot: Vectors) -> None:
        try:
            self._build_from(snapshot)
        except Exception:  # derived data: searches stay exact, the next upsert past the limit tries again
            log.exception("building the HNSW graph of %d vectors failed; searching exactly meanwhile", len(snapshot))
            with self._lock:
                self._dirty, self._builder = None, None

    def _build_from(self, snapshot: Vectors) -> None:
        from usearch.index import Index  # noqa: PLC0415 - see the imports

        started = time.monotonic()
        index = Index(
            ndim=self.dim, metric="ip", dtype=_GRAPH_DTYPE, connectivity=_HNSW_M, expansion_add=_HNSW_EF_CONSTRUCTION
        )
        index.add(np.arange(len(snapshot), dtype=np.uint64), snapshot, threads=_BUILD_THREADS)
        while True:
            with self._lock:
                assert self._dirty is not None
                rows, self._dirty = self._dirty, set()
                n = len(self._ids)
                live = sorted(r for r in rows if r < n)
                if len(live) <= _REPLAY_UNDER_LOCK:
                    _put(index, self._matrix[live], live, threads=_BUILD_THREADS)
                    # keys past the last row hold vectors removed meanwhile
                    past = np.asarray(sorted({*range(n, len(snapshot)), *(r for r in rows if r >= n)}), dtype=np.uint64)
                    held = past[index.contains(past)] if len(past) else past
                    if len(held):
                        index.remove(held)
                    self._hnsw, self._dirty, self._builder = index, None, None
                    break
                vectors = self._matrix[live].copy()
            # Many rows changed while building: add them without blocking searches. Rows changed again from now
            # on are in the fresh `_dirty` set and get re-added on the next turn.
            _put(index, vectors, live, threads=_BUILD_THREADS)
        log.info("HNSW graph of %d vectors built in %.1f s", len(snapshot), time.monotonic() - started)


def _per_query(found: Matches | BatchMatches) -> list[npt.NDArray[np.intp]]:
    """The rows found for each query: usearch answers a batch of one query as one `Matches`."""
    from usearch.index import Matches  # noqa: PLC0415 - loaded already: the graph answered

    if isinstance(found, Matches):
        return [found.keys.astype(np.intp)]
    return [keys[:n].astype(np.intp) for keys, n in zip(found.keys, found.counts, strict=True)]


def _search_depth(index: Index, depth: int) -> None:
    """Set how many candidates a search of the graph explores (HNSW's `ef`), at least _HNSW_EF_MIN."""
    # usearch declares this property's setter apart from its getter, which mypy does not follow
    index.expansion_search = max(_HNSW_EF_MIN, depth)  # type: ignore[misc]


def _put(index: Index, vectors: Vectors, rows: list[int], threads: int) -> None:
    """Add these rows' vectors under their keys, replacing what those keys held (usearch refuses a key twice)."""
    if not rows:
        return
    keys = np.asarray(rows, dtype=np.uint64)
    held = keys[index.contains(keys)]
    if len(held):
        index.remove(held)
    index.add(keys, vectors, threads=threads)
