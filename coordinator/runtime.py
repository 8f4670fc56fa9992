"""How the coordinator's interpreter runs: its GIL switch interval and its garbage collector, set once at start.

Both are the writer's business: its thread, the socket loop and the readers hand work to each other all the
time, and the writer allocates a few dozen objects per write.

- Python's default 5 ms switch interval would add up to 5 ms to each hand-off whenever another thread is
  computing; 0.2 ms does not.
- The default collector thresholds (700, 10, 10) run a young collection every 700 allocations and a full one,
  over every live object (row cache, keyword index, the tiers' maps), every 100 young ones. Measured in one
  sitting on 2 vCPUs, `python -m benchmarks.writer --batch 256 --batches 120` over 7 tiers: 11,695 and 11,729
  writes/s with the defaults, 14,456 with (10,000, 20, 100), 14,173 and 14,647 with the collector off.
  Refcounting still frees everything acyclic at once; only cyclic garbage waits longer.
- What is loaded at start (the user tier's rows and indexes) lives as long as the coordinator: `settle` moves
  it out of the collector's sight (`gc.freeze`), so full collections no longer walk it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
from collections.abc import Callable
from functools import cache

SWITCH_INTERVAL_S = 0.0002
GC_THRESHOLDS = (10_000, 20, 100)


def tune() -> None:
    """Set the switch interval and the collector's thresholds; first thing at start."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    gc.set_threshold(*GC_THRESHOLDS)


def settle() -> None:
    """What start-up loaded stays: keep it out of every later collection."""
    gc.collect()
    gc.freeze()


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, which hands the pages free() kept back to the system; None on another C library."""
    name = ctypes.util.find_library("c")
    return getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None


def give_back_memory() -> None:
    """Return the free heap to the system: after a large pass or a closed database, glibc keeps it otherwise."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


@cache
def _mallinfo2() -> Callable[[], _MallInfo2] | None:
    name = ctypes.util.find_library("c")
    function = getattr(ctypes.CDLL(name), "mallinfo2", None) if name else None  # glibc 2.33 and later
    if function is not None:
        function.restype = _MallInfo2
    return function


def heap_used_bytes() -> int:
    """What the C heap has handed out and not had back (its arenas' and its own mmaps'); 0 where glibc does not
    say. RocksDB, SQLite and numpy allocate from it, and Python for objects over 512 bytes (smaller ones live in
    its own arenas)."""
    info = _mallinfo2()
    if info is None:
        return 0
    got = info()
    return int(got.uordblks) + int(got.hblkhd)


def heap_free_bytes() -> int:
    """What the C heap holds free (freed, not yet given back to the system); 0 where glibc does not say."""
    info = _mallinfo2()
    return int(info().fordblks) if info is not None else 0
