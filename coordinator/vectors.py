"""The in-memory vector index of one tier: derived from `learning_embeddings`, rebuilt at start-up.

Small tiers are searched exactly (one matrix product, recall 1.0: ≈ 0.5 ms at 10k vectors here). Past
`exact_limit` vectors an HNSW graph (hnswlib, inner product on unit vectors) answers instead, because an
exact scan grows linearly (≈ 9 ms at 100k here) while HNSW stays well under a millisecond. The matrix is
kept in both cases: it is what the graph is built from, and what exact search uses.
"""

from __future__ import annotations

import threading

import hnswlib
import numpy as np

from coordinator.embedder import Vectors
from protocol import constants as C

_HNSW_M = 16
_HNSW_EF_CONSTRUCTION = 100
_HNSW_EF_MIN = 64


class VectorIndex:
    """Learning id -> unit vector, searchable by inner product. Thread-safe: one lock guards it all."""

    def __init__(self, exact_limit: int = 20_000, dim: int = C.EMBEDDING_DIM) -> None:
        self.dim = dim
        self.exact_limit = exact_limit
        self._lock = threading.Lock()
        self._matrix: Vectors = np.zeros((1024, dim), dtype=np.float32)
        self._ids: list[str] = []  # row -> id
        self._rows: dict[str, int] = {}  # id -> row
        self._hnsw: hnswlib.Index | None = None

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, learning_id: object) -> bool:
        return learning_id in self._rows

    @property
    def uses_hnsw(self) -> bool:
        """Whether searches go to the HNSW graph."""
        return self._hnsw is not None

    def upsert(self, ids: list[str], vectors: Vectors) -> None:
        """Add or replace the vectors of these learnings."""
        with self._lock:
            for lid, vector in zip(ids, vectors, strict=True):
                row = self._rows.get(lid)
                if row is None:
                    row = len(self._ids)
                    if row == len(self._matrix):
                        self._matrix = np.concatenate([self._matrix, np.zeros_like(self._matrix)])
                    self._ids.append(lid)
                    self._rows[lid] = row
                self._matrix[row] = vector
                if self._hnsw is not None:
                    if row >= self._hnsw.get_max_elements():
                        self._hnsw.resize_index(len(self._matrix))
                    self._hnsw.add_items(vector.reshape(1, -1), np.array([row]))
            if self._hnsw is None and len(self._ids) > self.exact_limit:
                self._build_hnsw()

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

    def _build_hnsw(self) -> None:
        n = len(self._ids)
        index = hnswlib.Index(space="ip", dim=self.dim)
        index.init_index(max_elements=len(self._matrix), ef_construction=_HNSW_EF_CONSTRUCTION, M=_HNSW_M)
        index.add_items(self._matrix[:n], np.arange(n))
        self._hnsw = index
