"""The groove coordinator: the one process that owns every tier's database and serves all agents.

Sub-packages by subsystem, each importing only those below it (import-linter checks this in `make test`):
`net` (socket loop, auth, agents, config, the handler table) -> `write` (batcher, planning, parts, tier
writes, durability) -> `loop` (adaptive parameters, injection, lifecycle, risks) -> `search` (derived data:
embedder, vectors, keywords, row cache) -> `store` (relations, schema, tiers, reads, backup, export);
`errors` and `metrics` sit under them all. Everything builds on `protocol`.
"""

import functools
import os

# numpy's OpenBLAS keeps its worker threads spinning after each call; next to torch's own threads on two
# cores that made every query embedding ≈ 40 % slower (15 -> 19 ms forward pass here). The matrix-vector
# products of exact search gain little from a second thread. Set before anything imports numpy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


@functools.cache
def release() -> str:
    """This release's version, from the installed package's metadata. Read at first use, not at import: loading
    `importlib.metadata` and scanning the installed distributions took 32 ms, in the coordinator and in its
    front process, which only imports this package for its sub-packages."""
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415 - see the docstring

    try:
        return version("groove")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"
