"""The in-memory vector index of one tier: derived from `learning_embeddings`, rebuilt at start-up.

Small tiers are searched exactly (one matrix product, recall 1.0: ≈ 0.9 ms at 10k vectors here on one
BLAS thread). Past `exact_limit` vectors an HNSW graph (hnswlib, inner product on unit vectors) answers
instead, because an exact scan grows faster than linearly once the matrix leaves the cache (≈ 3.8 ms at
20k) while HNSW stays under a millisecond (≈ 0.4 ms at 10k, 0.7 ms at 20k). The matrix is
kept in both cases: it is what the graph is built from, what exact search uses while the graph is being
built, and what removals move rows within.
"""

from __future__ import annotations

import logging
import os
import threading
import time

import hnswlib
import numpy as np

from coordinator.embedder import Vectors
from protocol import constants as C

_HNSW_M = 16
_HNSW_EF_CONSTRUCTION = 100
_HNSW_EF_MIN = 64
# A background build leaves one core to serving: on 2 cores, a build on both made searches 3x slower.
_BUILD_THREADS = max(1, (os.cpu_count() or 2) - 1)
_REPLAY_UNDER_LOCK = 2000
_NEIGHBOUR_CHUNK = (
    8  # learnings compared per hold of the lock  # rows changed during a build that are replayed while searches wait
)

log = logging.getLogger(__name__)


class VectorIndex:
    """Learning id -> unit vector, searchable by inner product. Thread-safe: one lock guards it all.

    Rows of the matrix are HNSW labels. The graph is built on a background thread (≈ 45 s for 100k random
    vectors on 2 cores), from a snapshot of the matrix, while searches stay exact; rows written or moved
    meanwhile are recorded in `_dirty` and replayed into the graph before it takes over. So neither opening a
    large tier nor crossing `exact_limit` in the middle of a write burst stalls the coordinator.
    """

    def __init__(self, exact_limit: int = 10_000, dim: int = C.EMBEDDING_DIM) -> None:
        self.dim = dim
        self.exact_limit = exact_limit
        self._lock = threading.Lock()
        self._matrix: Vectors = np.zeros((1024, dim), dtype=np.float32)
        self._ids: list[str] = []  # row -> id
        self._rows: dict[str, int] = {}  # id -> row
        self._hnsw: hnswlib.Index | None = None
        self._dirty: set[int] | None = None  # while a graph is being built: rows changed since its snapshot
        self._builder: threading.Thread | None = None

    def __len__(self) -> int:
        return len(self._ids)

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
                if len(self._ids) > self._hnsw.get_max_elements():
                    self._hnsw.resize_index(len(self._matrix))
                # one call for the whole batch: hnswlib inserts it on every core
                self._hnsw.add_items(self._matrix[rows], np.asarray(rows))
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
                        # HNSW labels are rows: re-adding label `row` replaces its vector with the moved one
                        self._hnsw.add_items(self._matrix[row].reshape(1, -1), np.array([row]))
                if self._hnsw is not None:
                    # a later upsert that reuses this row re-adds the label, which also undeletes it
                    self._hnsw.mark_deleted(last)
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
                self._hnsw.set_ef(max(_HNSW_EF_MIN, 2 * k))
                labels, distances = self._hnsw.knn_query(query.reshape(1, -1), k=k)
                pairs = zip(labels[0], distances[0], strict=True)
                return [(self._ids[int(label)], 1.0 - float(d)) for label, d in pairs]
            scores = self._matrix[:n] @ query.reshape(-1)
            top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
            top = top[np.argsort(-scores[top])]
            return [(self._ids[int(i)], float(scores[i])) for i in top]

    def neighbours(self, ids: list[str], threshold: float, k: int = 4) -> list[tuple[str, str, float]]:
        """(id, other id, cosine) for each of these learnings' nearest others at least `threshold` similar.

        The lock is taken for a few learnings at a time, so searches never wait long behind this.
        """
        found: list[tuple[str, str, float]] = []
        for start in range(0, len(ids), _NEIGHBOUR_CHUNK):
            with self._lock:
                rows = [self._rows[lid] for lid in ids[start : start + _NEIGHBOUR_CHUNK] if lid in self._rows]
                if not rows or len(self._ids) < 2:
                    continue
                queries = self._matrix[rows]
                if self._hnsw is not None:
                    want = min(k + 1, len(self._ids))
                    self._hnsw.set_ef(max(_HNSW_EF_MIN, 2 * want))
                    labels, distances = self._hnsw.knn_query(queries, k=want, num_threads=1)
                    found += [
                        (self._ids[row], self._ids[int(label)], 1.0 - float(d))
                        for row, row_labels, row_distances in zip(rows, labels, distances, strict=True)
                        for label, d in zip(row_labels, row_distances, strict=True)
                    ]
                    continue
                scores = queries @ self._matrix[: len(self._ids)].T
                for row, row_scores in zip(rows, scores, strict=True):
                    found += [
                        (self._ids[row], self._ids[int(other)], float(row_scores[other]))
                        for other in np.flatnonzero(row_scores >= threshold)
                    ]
        return [(a, b, score) for a, b, score in found if a != b and score >= threshold]

    def _start_build(self) -> None:
        """Start building the graph from a snapshot of the matrix (called with the lock held)."""
        snapshot = self._matrix[: len(self._ids)].copy()
        self._dirty = set()
        self._builder = threading.Thread(target=self._build, args=(snapshot,), name="groove-hnsw-build", daemon=True)
        self._builder.start()

    def _build(self, snapshot: Vectors) -> None:
        started = time.monotonic()
        index = hnswlib.Index(space="ip", dim=self.dim)
        index.init_index(max_elements=len(snapshot), ef_construction=_HNSW_EF_CONSTRUCTION, M=_HNSW_M)
        index.add_items(snapshot, np.arange(len(snapshot)), num_threads=_BUILD_THREADS)
        beyond: set[int] = set()  # labels past the snapshot's rows added since
        while True:
            with self._lock:
                assert self._dirty is not None
                rows, self._dirty = self._dirty, set()
                n = len(self._ids)
                live = sorted(r for r in rows if r < n)
                if len(live) <= _REPLAY_UNDER_LOCK:
                    _add(index, self._matrix[live], live, beyond, len(snapshot))
                    # labels past the last row hold vectors removed meanwhile
                    for label in [*range(n, len(snapshot)), *(b for b in beyond if b >= n)]:
                        index.mark_deleted(label)
                    self._hnsw, self._dirty, self._builder = index, None, None
                    break
                vectors = self._matrix[live].copy()
            # Many rows changed while building: add them without blocking searches. Rows changed again from now
            # on are in the fresh `_dirty` set and get re-added on the next turn.
            _add(index, vectors, live, beyond, len(snapshot))
        log.info("HNSW graph of %d vectors built in %.1f s", len(snapshot), time.monotonic() - started)


def _add(index: hnswlib.Index, vectors: Vectors, rows: list[int], beyond: set[int], snapshot: int) -> None:
    """Add (or replace) these rows' vectors under their labels, growing the graph as needed."""
    if not rows:
        return
    if rows[-1] >= index.get_max_elements():
        index.resize_index(max(rows[-1] + 1, 2 * index.get_max_elements()))
    index.add_items(vectors, np.asarray(rows), num_threads=_BUILD_THREADS)
    beyond.update(r for r in rows if r >= snapshot)
