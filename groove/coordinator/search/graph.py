"""A tier's HNSW graph (usearch, inner product on unit vectors): how it is made, searched and added to. Its keys
are the vector index's rows (`search/vectors.py` says when a tier has one).

usearch is imported with the first graph: a start, and a tier searched exactly, go without it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from groove.coordinator.search.embedder import Vectors
from groove.coordinator.search.waiting import Found
from groove.protocol import constants as C

if TYPE_CHECKING:
    from usearch.index import BatchMatches, Index, Matches

HNSW_M = 16
# The graph stores its vectors in half precision: on 100k real MiniLM vectors the same recall@10 as f32 (0.984 at
# k=10, 0.990 at k=50), 41 % less memory (110 vs 187 MB), 33 % faster builds, queries within 5 % of f32
# (benchmarks.ann, docs/performance-history.md). Its cosines are the half-precision vectors' (within 1e-3): the
# f32 matrix they were once re-scored from doubled a large tier's memory (1.5 KB a learning beside the graph's 0.9).
GRAPH_DTYPE = "f16"
# a graph's vector, resident: its half-precision vector, its base layer's 2M links (4 B each) and their header
NODE_BYTES = 2 * C.EMBEDDING_DIM + 2 * HNSW_M * 4 + 64
_EF_CONSTRUCTION = 100
_EF_MIN = 64
# A background build leaves one core to serving: on 2 cores, a build on both made searches 3x slower.
BUILD_THREADS = max(1, (os.cpu_count() or 2) - 1)


def new_graph(dim: int) -> Index:
    """An empty graph of `dim`-wide vectors."""
    from usearch.index import Index  # noqa: PLC0415 - see the module's docstring

    return Index(ndim=dim, metric="ip", dtype=GRAPH_DTYPE, connectivity=HNSW_M, expansion_add=_EF_CONSTRUCTION)


def restore(path: str) -> Index | None:
    """The graph saved at `path`; None if the file holds none."""
    from usearch.index import Index  # noqa: PLC0415 - see the module's docstring

    return Index.restore(path)


def nearest(index: Index, queries: Vectors, k: int) -> list[Found]:
    """Each query's `k` nearest rows in the graph and their cosines, best first."""
    # usearch declares this property's setter apart from its getter, which mypy does not follow
    index.expansion_search = max(_EF_MIN, 2 * k)  # type: ignore[misc]
    return [(keys, 1.0 - distances) for keys, distances in _per_query(index.search(queries, k, threads=1))]


def vectors(index: Index, rows: list[int]) -> Vectors:
    """These rows' vectors (as f32; every row held)."""
    if not rows:
        return np.zeros((0, index.ndim), dtype=np.float32)
    got = index.get(np.asarray(rows, dtype=np.uint64))  # a tuple of rows (None for a key not held)
    held = [np.asarray(row, dtype=np.float32) for row in (got if isinstance(got, tuple) else [got])]
    return np.vstack(held).reshape(-1, index.ndim)


def put(index: Index, vectors: Vectors, rows: list[int], threads: int = BUILD_THREADS) -> None:
    """Add these rows' vectors under their keys, replacing what those keys held (usearch refuses a key twice)."""
    if not rows:
        return
    drop(index, rows)
    index.add(np.asarray(rows, dtype=np.uint64), vectors, threads=threads)


def drop(index: Index, rows: list[int]) -> None:
    """Remove these rows' vectors, those it holds."""
    keys = np.asarray(rows, dtype=np.uint64)
    held = keys[index.contains(keys)] if len(keys) else keys
    if len(held):
        index.remove(held)


def _per_query(found: Matches | BatchMatches) -> list[tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]]]:
    """The rows found for each query and their distances: usearch answers a batch of one query as one `Matches`."""
    from usearch.index import Matches  # noqa: PLC0415 - loaded already: the graph answered

    if isinstance(found, Matches):
        return [(found.keys.astype(np.intp), found.distances)]
    return [
        (keys[:n].astype(np.intp), distances[:n])
        for keys, distances, n in zip(found.keys, found.distances, found.counts, strict=True)
    ]
