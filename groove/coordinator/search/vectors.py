"""The in-memory vector index of one tier: derived from `learning_embeddings`, saved at each checkpoint
(`search/saved.py`) and loaded at the next start, rebuilt otherwise.

Small tiers are searched exactly (one matrix product, recall 1.0: ≈ 0.9 ms at 10k vectors here on one
BLAS thread). Past `exact_limit` vectors an HNSW graph (usearch, inner product on unit vectors) answers
instead, because an exact scan grows faster than linearly once the matrix leaves the cache while HNSW stays
near a millisecond (figures in docs/performance-history.md, `benchmarks.ann`). Each vector is held once: in the
f32 matrix while the tier is searched exactly (and while its graph is built from the matrix), then in the graph
alone (`search/graph.py`), which stores it in half precision and answers cosines from it, or for a few seconds
after a tier opens among the vectors waiting for it (`search/waiting.py`). usearch was chosen over hnswlib (no
wheels, unmaintained) and faiss (its HNSW cannot remove a vector).
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from groove.coordinator.errors import DamagedIndex
from groove.coordinator.search import graph
from groove.coordinator.search.embedder import Vectors
from groove.coordinator.search.idmap import IdMap
from groove.coordinator.search.waiting import WaitingVectors, merged
from groove.protocol import constants as C

if TYPE_CHECKING:
    from usearch.index import Index

_REPLAY_UNDER_LOCK = 2000  # rows changed during a build that are replayed while searches wait
_NEIGHBOUR_CHUNK = 8  # learnings compared per hold of the lock
_LOOKUP_CHUNK = 4096  # ids looked up per hold of the lock
_MOVE_CHUNK = 16  # waiting vectors put into the graph per hold of the lock: about 8 ms here

log = logging.getLogger(__name__)

_COST_WEIGHT = 0.2  # of the latest call in `WorkCost`'s moving average


_FIRST_ROWS = 1024  # rows of a new index's matrix; it grows by a quarter when full (up to the graph's taking over)
# A doubling held up to twice the rows a tier has: 25 MB for a tier just past 8,192 learnings, 30 MB while copied.
# A quarter's growth copies more often (ten times on the way to 10,000 against four), 1.5 KB a row each time.
_GROWTH = 1.25
# a saved index's files: its graph or its matrix, and its ids (as 128-bit uuids, and any others as text)
GRAPH_FILE, MATRIX_FILE, IDS_FILE, OTHER_IDS_FILE = "graph.usearch", "matrix.npy", "ids.npy", "other-ids.txt"


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

    Keys of the graph are rows. While the tier is searched exactly its rows are those of the matrix, kept dense
    (a removal moves the last row into the freed one). The graph is built on a background thread from a snapshot
    of the matrix, while searches stay exact; rows written or moved meanwhile are recorded in `_dirty` and
    replayed into the graph before it takes over and the matrix goes. From then on a removal frees its row for
    the next new vector. So neither opening a large tier nor crossing `exact_limit` in the middle of a write
    burst stalls the coordinator.
    """

    def __init__(self, exact_limit: int = 10_000, dim: int = C.EMBEDDING_DIM) -> None:
        self.dim = dim
        self.exact_limit = exact_limit
        self._lock = threading.Lock()
        self._matrix: Vectors | None = np.zeros((_FIRST_ROWS, dim), dtype=np.float32)  # None once the graph answers
        self._ids = IdMap()  # row <-> learning id (a row freed in the graph holds none)
        self._free: list[int] = []  # the graph's freed rows
        self._hnsw: Index | None = None
        self._dirty: set[int] | None = None  # while a graph is being built: rows changed since its snapshot
        self._builder: threading.Thread | None = None
        self._waiting = WaitingVectors(dim)  # with a graph: vectors found exactly until they are in it
        self._mover: threading.Thread | None = None  # moving them in

    def __len__(self) -> int:
        return len(self._ids)

    def memory_bytes(self) -> int:
        """What it holds: the matrix, the id map (`IdMap.memory_bytes`) and any graph. The first matrix's untouched
        rows are not resident (numpy asks for zeroed pages, which the system gives on first write); a grown one
        was copied whole, spare rows too. The graph counts `graph.NODE_BYTES` a vector: usearch's `memory_usage`
        counts what it reserved (1.6 KB a vector at 200,000 against 0.97 KB resident after a load, measured)."""
        matrix, hnsw = self._matrix, self._hnsw
        rows = 0 if matrix is None else self._ids.rows if len(matrix) == _FIRST_ROWS else len(matrix)
        graph_bytes = len(hnsw) * graph.NODE_BYTES if hnsw is not None else 0
        return rows * self.dim * 4 + self._ids.memory_bytes() + graph_bytes + self._waiting.memory_bytes()

    def heap_bytes(self) -> int:
        """What it took from the C heap, resident or not: the whole matrix (numpy's zeroed pages count there before
        they are touched). The graph's memory is not the C heap's: usearch maps its own (at 60,000 vectors the heap
        grew 112 B a vector, the id maps, against the graph's 1.4 KB)."""
        matrix = self._matrix
        return (0 if matrix is None else int(matrix.nbytes)) + self._waiting.memory_bytes()

    def __contains__(self, learning_id: object) -> bool:
        with self._lock:  # a lookup reads several of the id map's parts, which a write replaces
            return learning_id in self._ids

    @property
    def uses_hnsw(self) -> bool:
        """Whether searches go to the HNSW graph."""
        return self._hnsw is not None

    @property
    def state(self) -> str:
        """ "exact", "building" (searched exactly while the graph is built, or with vectors waiting to go into it)
        or "hnsw"."""
        if self._hnsw is not None:
            return "building" if len(self._waiting) else "hnsw"
        return "exact" if self._dirty is None else "building"

    def wait_built(self, timeout: float | None = None) -> bool:
        """Block until no graph build runs and no vector waits for the graph; True if none does."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in (self._builder, self._mover):
            if thread is not None:
                thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return self.state != "building"

    def upsert(self, ids: list[str], vectors: Vectors, later: bool = False) -> None:
        """Add or replace the vectors of these (distinct) learnings. `later`: a graph takes them in the background,
        searches finding them exactly meanwhile (`search/waiting.py`): what a tier opening does, so that its first
        requests do not wait for the graph's inserts."""
        with self._lock:
            rows, new_rows, new_ids, next_row = [], [], [], self._ids.rows
            for lid, held in zip(ids, self._ids.rows_of(ids), strict=True):
                row = held
                if row is None:
                    if self._free:
                        row = self._free.pop()
                    else:
                        row, next_row = next_row, next_row + 1
                    new_rows.append(row)
                    new_ids.append(lid)
                rows.append(row)
            self._ids.put_many(new_rows, new_ids)
            if self._hnsw is not None:
                if later:  # a row is in the graph or waiting, never both
                    graph.drop(self._hnsw, rows)
                    self._waiting.put(rows, vectors)
                    self._start_moving()
                else:
                    self._waiting.drop(rows)
                    graph.put(self._hnsw, vectors, rows)
                return
            matrix = self._matrix
            assert matrix is not None  # the exact regime's
            if self._ids.rows > len(matrix):
                grown = np.zeros((max(self._ids.rows, int(len(matrix) * _GROWTH)), self.dim), dtype=np.float32)
                grown[: len(matrix)] = matrix
                self._matrix = matrix = grown
            matrix[rows] = vectors
            if self._dirty is not None:
                self._dirty.update(rows)
            elif self._ids.rows > self.exact_limit:
                self._start_build()

    def remove(self, ids: list[str]) -> None:
        """Forget these learnings' vectors (unknown ids are ignored)."""
        with self._lock:
            for lid in ids:
                row = self._ids.row(lid)
                if row is None:
                    continue
                self._ids.free(row)
                if self._hnsw is not None:  # the row is freed for the next new vector
                    graph.drop(self._hnsw, [row])
                    self._waiting.drop([row])
                    self._free.append(row)
                    continue
                matrix = self._matrix
                assert matrix is not None
                last = self._ids.rows - 1  # the last row fills the freed one: the matrix stays dense
                if row != last:
                    moved = self._ids.free(last)
                    assert moved is not None
                    matrix[row] = matrix[last]
                    self._ids.put(row, moved)
                if self._dirty is not None:
                    self._dirty.update((row, last))
                self._ids.pop()

    def _vectors(self, rows: list[int]) -> Vectors:
        """These rows' vectors, as f32 (call with the lock held)."""
        if self._hnsw is None:
            assert self._matrix is not None
            return self._matrix[rows]
        if not len(self._waiting):
            return graph.vectors(self._hnsw, rows)
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        waiting = [i for i, row in enumerate(rows) if row in self._waiting]
        rest = sorted(set(range(len(rows))) - set(waiting))
        out[waiting] = self._waiting.vectors([rows[i] for i in waiting])
        out[rest] = graph.vectors(self._hnsw, [rows[i] for i in rest])
        return out

    def _nearest(self, hnsw: Index, queries: Vectors, k: int) -> list[tuple[npt.NDArray[np.intp], Vectors]]:
        """Each query's `k` nearest rows, in the graph or waiting for it, and their cosines (lock held)."""
        found = graph.nearest(hnsw, queries, k)
        if not len(self._waiting):
            return found
        waiting = self._waiting.nearest(queries, k)
        return [merged(one, other, k) for one, other in zip(found, waiting, strict=True)]

    def similarity(self, learning_id: str, query: Vectors) -> float | None:
        """Cosine similarity of one learning to the query; None if it has no vector."""
        with self._lock:
            row = self._ids.row(learning_id)
            return None if row is None else float(self._vectors([row])[0] @ query.reshape(-1))

    def search(self, query: Vectors, k: int) -> list[tuple[str, float]]:
        """The `k` nearest learnings by cosine similarity, best first."""
        with self._lock:
            n = self._ids.rows
            if not len(self._ids) or k <= 0:
                return []
            k = min(k, len(self._ids))
            if self._hnsw is not None:
                rows, scores = self._nearest(self._hnsw, query.reshape(1, -1), k)[0]
                hits = self._ids.ids_at(rows.tolist())
                return [(_held(lid), float(score)) for lid, score in zip(hits, scores.tolist(), strict=True)]
            assert self._matrix is not None
            scores = self._matrix[:n] @ query.reshape(-1)
            top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
            top = top[np.argsort(-scores[top])].tolist()
            return [(_held(lid), float(scores[i])) for i, lid in zip(top, self._ids.ids_at(top), strict=True)]

    def missing(self, ids: list[str]) -> list[str]:
        """Those of these learnings that have no vector here (a few thousand looked up per hold of the lock: a
        rebuild asks for every learning of its tier)."""
        found: list[str] = []
        for start in range(0, len(ids), _LOOKUP_CHUNK):
            chunk = ids[start : start + _LOOKUP_CHUNK]
            with self._lock:
                found += [lid for lid, row in zip(chunk, self._ids.rows_of(chunk), strict=True) if row is None]
        return found

    def neighbours(self, ids: list[str], threshold: float, k: int = 4) -> list[tuple[str, str, float]]:
        """(id, other id, cosine) for each of these learnings' `k` nearest others, those at least `threshold`
        similar. Never more than `k` a learning, searched exactly or not: a tier of a thousand near-identical
        learnings would otherwise relate each to every other, half a million relations.

        The lock is taken for a few learnings at a time, so searches never wait long behind this.
        """
        found: list[tuple[str, str, float]] = []
        for start in range(0, len(ids), _NEIGHBOUR_CHUNK):
            with self._lock:
                rows = [row for row in self._ids.rows_of(ids[start : start + _NEIGHBOUR_CHUNK]) if row is not None]
                if not rows or len(self._ids) < 2:
                    continue
                queries = self._vectors(rows)
                want = min(k + 1, len(self._ids))  # each one itself and its k nearest, searched exactly or not
                if self._hnsw is not None:
                    answers = self._nearest(self._hnsw, queries, want)
                    for lid, (keys, scores) in zip(self._ids.ids_at(rows), answers, strict=True):
                        others = self._ids.ids_at(keys.tolist())
                        found += [
                            (_held(lid), _held(other), float(score))
                            for other, score in zip(others, scores.tolist(), strict=True)
                        ]
                    continue
                assert self._matrix is not None
                scores = queries @ self._matrix[: self._ids.rows].T
                for lid, row_scores in zip(self._ids.ids_at(rows), scores, strict=True):
                    nearest = np.argpartition(-row_scores, want - 1)[:want].tolist()
                    close = [row for row in nearest if row_scores[row] >= threshold]
                    found += [
                        (_held(lid), _held(other), float(row_scores[row]))
                        for row, other in zip(close, self._ids.ids_at(close), strict=True)
                    ]
        return [(a, b, score) for a, b, score in found if a != b and score >= threshold]

    # --- saving and loading (search/saved.py says when) ----------------------------------------------

    def save(self, folder: Path) -> None:
        """Write the index into `folder` (made; files there replaced). Call once no build runs."""
        with self._lock:
            if self._dirty is not None:
                raise RuntimeError("a graph is being built")
            folder.mkdir(parents=True, exist_ok=True)
            self._ids.save(folder / IDS_FILE, folder / OTHER_IDS_FILE)
            if self._hnsw is not None:
                rows, vectors = self._waiting.take(len(self._waiting))  # the file holds one graph: all of them in it
                graph.put(self._hnsw, vectors, rows)
                self._hnsw.save(str(folder / GRAPH_FILE))
            else:
                assert self._matrix is not None
                np.save(folder / MATRIX_FILE, self._matrix[: self._ids.rows])

    @classmethod
    def load(cls, folder: Path, exact_limit: int, dim: int = C.EMBEDDING_DIM) -> VectorIndex:
        """An index as `save` wrote it; DamagedIndex (or OSError) if its files do not make one."""
        index = cls(exact_limit, dim)
        ids = IdMap.load(folder / IDS_FILE, folder / OTHER_IDS_FILE)
        if (folder / GRAPH_FILE).exists():
            hnsw = graph.restore(str(folder / GRAPH_FILE))
            if hnsw is None or hnsw.ndim != dim or len(hnsw) != len(ids):
                raise DamagedIndex(f"{folder / GRAPH_FILE} does not hold the graph of {folder / IDS_FILE}")
            index._hnsw, index._matrix = hnsw, None
        else:
            matrix = np.load(folder / MATRIX_FILE)
            if matrix.shape != (ids.rows, dim) or len(ids) != ids.rows:
                raise DamagedIndex(f"{folder / MATRIX_FILE} does not hold the vectors of {folder / IDS_FILE}")
            index._matrix = np.zeros((max(_FIRST_ROWS, ids.rows), dim), dtype=np.float32)
            index._matrix[: ids.rows] = matrix
        index._ids = ids
        index._free = ids.free_rows()
        return index

    # --- building the graph, and moving waiting vectors into it -------------------------------------

    def _start_moving(self) -> None:
        """Start moving the waiting vectors into the graph, unless that runs already (call with the lock held)."""
        if self._mover is None:
            self._mover = threading.Thread(target=self._move, name="groove-hnsw-move", daemon=True)
            self._mover.start()

    def _move(self) -> None:
        moved = 0
        while True:
            with self._lock:
                assert self._hnsw is not None  # vectors wait only for a graph, which stays once it answers
                rows, vectors = self._waiting.take(_MOVE_CHUNK)
                try:
                    graph.put(self._hnsw, vectors, rows)
                except Exception:  # derived data: they stay found exactly; the next save puts them in
                    self._waiting.put(rows, vectors)
                    self._mover = None
                    log.exception("moving %d waiting vectors into the HNSW graph failed", len(self._waiting))
                    return
                moved += len(rows)
                if not len(self._waiting):
                    self._mover = None
                    break
        log.debug("moved %d waiting vectors into the HNSW graph", moved)

    def _start_build(self) -> None:
        """Start building the graph from a snapshot of the matrix (called with the lock held)."""
        assert self._matrix is not None
        snapshot = self._matrix[: self._ids.rows].copy()
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
        started = time.monotonic()
        index = graph.new_graph(self.dim)
        index.add(np.arange(len(snapshot), dtype=np.uint64), snapshot, threads=graph.BUILD_THREADS)
        while True:
            with self._lock:
                assert self._dirty is not None
                assert self._matrix is not None
                rows, self._dirty = self._dirty, set()
                n = self._ids.rows
                live = sorted(r for r in rows if r < n)
                if len(live) <= _REPLAY_UNDER_LOCK:
                    graph.put(index, self._matrix[live], live)
                    # keys past the last row hold vectors removed meanwhile
                    past = np.asarray(sorted({*range(n, len(snapshot)), *(r for r in rows if r >= n)}), dtype=np.uint64)
                    held = past[index.contains(past)] if len(past) else past
                    if len(held):
                        index.remove(held)
                    self._hnsw, self._matrix, self._dirty, self._builder = index, None, None, None
                    break
                vectors = self._matrix[live].copy()
            # Many rows changed while building: add them without blocking searches. Rows changed again from now
            # on are in the fresh `_dirty` set and get re-added on the next turn.
            graph.put(index, vectors, live)
        log.info("HNSW graph of %d vectors built in %.1f s", len(snapshot), time.monotonic() - started)


def _held(lid: str | None) -> str:
    assert lid is not None  # a row the graph or the matrix answers holds an id
    return lid
