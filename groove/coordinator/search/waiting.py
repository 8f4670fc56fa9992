"""Vectors waiting for a tier's HNSW graph: searched exactly beside it until a background thread has put them in.

Why: a tier that opens after a crash reads again the learnings its log names past its checkpoint (a few hundred
to a few thousand) and their vectors go into its graph. Inserting into a graph costs about half a millisecond a
vector on these cores (780 into a 143,000-vector graph: 0.36 s on two threads), and the user tier opens before
the coordinator serves, so its first requests waited for all of them. Held here instead, they are found by an
exact scan of a small matrix (a few thousand vectors: well under a millisecond) from the moment the tier opens,
and moved into the graph a few at a time, so no search waits long behind the moving.

Keys are the index's rows, as in its graph: a row is either here or in the graph, never both.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from groove.coordinator.search.embedder import Vectors

Found = tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]]  # rows and cosines of one query's nearest, best first


class WaitingVectors:
    """Row -> unit vector, kept in one dense f32 matrix (a removal moves the last row into the freed one); not
    thread-safe: the vector index's lock guards it."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._rows: list[int] = []  # the matrix's row i holds row `_rows[i]`'s vector
        self._at: dict[int, int] = {}  # row -> its position in the matrix
        self._matrix: Vectors = np.zeros((0, dim), dtype=np.float32)

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, row: int) -> bool:
        return row in self._at

    def memory_bytes(self) -> int:
        """The matrix, spare rows included, and about 100 B a row for its two maps."""
        return int(self._matrix.nbytes) + 100 * len(self._rows)

    def put(self, rows: list[int], vectors: Vectors) -> None:
        """Hold these (distinct) rows' vectors, replacing what any of them held."""
        new = [row for row in rows if row not in self._at]
        needed = len(self._rows) + len(new)
        if needed > len(self._matrix):  # doubling: it holds at most one catch-up's vectors, and goes once drained
            grown = np.zeros((max(needed, 2 * len(self._matrix)), self.dim), dtype=np.float32)
            grown[: len(self._rows)] = self._matrix[: len(self._rows)]
            self._matrix = grown
        for row in new:
            self._at[row] = len(self._rows)
            self._rows.append(row)
        self._matrix[[self._at[row] for row in rows]] = vectors

    def drop(self, rows: list[int]) -> None:
        """Forget these rows (those not held are ignored)."""
        for row in rows:
            at = self._at.pop(row, None)
            if at is None:
                continue
            last = self._rows.pop()
            if last != row:  # the last fills the freed place: the matrix stays dense
                self._matrix[at] = self._matrix[len(self._rows)]
                self._rows[at] = last
                self._at[last] = at
        if not self._rows:
            self._matrix = np.zeros((0, self.dim), dtype=np.float32)

    def take(self, n: int) -> tuple[list[int], Vectors]:
        """Up to `n` rows and their vectors, no longer held here (the last ones: nothing moves)."""
        count = min(n, len(self._rows))
        start = len(self._rows) - count
        rows, vectors = self._rows[start:], self._matrix[start : start + count].copy()
        del self._rows[start:]
        for row in rows:
            del self._at[row]
        if not self._rows:
            self._matrix = np.zeros((0, self.dim), dtype=np.float32)
        return rows, vectors

    def vectors(self, rows: list[int]) -> Vectors:
        """These held rows' vectors."""
        return self._matrix[[self._at[row] for row in rows]]

    def nearest(self, queries: Vectors, k: int) -> list[Found]:
        """Each query's `k` nearest held rows, exactly."""
        n = len(self._rows)
        if not n or k <= 0:
            return [(np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float32)) for _ in range(len(queries))]
        scores = queries @ self._matrix[:n].T
        rows = np.asarray(self._rows, dtype=np.intp)
        found: list[Found] = []
        for row_scores in scores:
            top = np.argpartition(-row_scores, k - 1)[:k] if k < n else np.arange(n)
            top = top[np.argsort(-row_scores[top])]
            found.append((rows[top], row_scores[top].astype(np.float32)))
        return found


def merged(graph: Found, waiting: Found, k: int) -> Found:
    """The best `k` of a query's nearest in the graph and among the waiting vectors, best first."""
    if not len(waiting[0]):
        return graph[0][:k], graph[1][:k]
    rows = np.concatenate([graph[0], waiting[0]])
    scores = np.concatenate([graph[1], waiting[1]])
    order = np.argsort(-scores, kind="stable")[:k]
    return rows[order], scores[order]
