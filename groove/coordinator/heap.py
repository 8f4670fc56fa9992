"""The C heap (glibc's malloc), which RocksDB, SQLite, numpy and Python's larger objects allocate from: what it
has handed out, what it holds free, and handing the free pages back to the system. glibc keeps what a burst
freed (a large embedding pass, a closed tier's caches) for the next one unless told (`malloc_trim`). Elsewhere
than glibc each reads 0 and giving back does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Callable
from functools import cache


@cache
def _libc(symbol: str) -> Callable[..., int] | None:
    """One of glibc's malloc controls; None where the C library has no such function or cannot be found."""
    name = ctypes.util.find_library("c")
    return getattr(ctypes.CDLL(name), symbol, None) if name else None


# glibc's mallopt parameter for how many arenas it may make. By default up to 8 a core: each thread that
# allocates while another holds an arena gets one of its own, and what it freed stays in it, kept from the others.
_M_ARENA_MAX = -8
ARENAS = 2


def limit_arenas(arenas: int = ARENAS) -> None:
    """Hold the C heap to `arenas` arenas from here on, unless MALLOC_ARENA_MAX says otherwise; first at start."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return
    mallopt = _libc("mallopt")
    if mallopt is not None:
        mallopt(_M_ARENA_MAX, arenas)


# The least glibc's free count has been since the last trim: the pages a trim gives back stay on its free lists,
# no longer resident (a test: 300 MB freed, trimmed in 19 ms, still counted), so only the free count above that is
# memory held. The least, not the count just after the trim: an allocation takes trimmed pages first (resident
# again), and freed once more they are held like any other. Every reading lowers it, so the untouched trimmed
# pages are never counted, and what was reused between two readings is missed only until the next.
_after_trim = 0


def give_back_memory() -> None:
    """Return the free heap to the system: after a large pass or a closed database, glibc keeps it otherwise."""
    global _after_trim
    trim = _libc("malloc_trim")
    if trim is not None:
        trim(0)
        _after_trim = _free_listed()


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


def _read() -> _MallInfo2 | None:
    """glibc's counters, the trim's baseline lowered to its free count."""
    global _after_trim
    info = _mallinfo2()
    if info is None:
        return None
    got = info()
    _after_trim = min(_after_trim, int(got.fordblks))
    return got


def heap_used_bytes() -> int:
    """What the C heap has handed out and not had back (its arenas' and its own mmaps'); 0 where glibc does not
    say. RocksDB, SQLite and numpy allocate from it, and Python for objects over 512 bytes (smaller ones live in
    its own arenas)."""
    got = _read()
    return int(got.uordblks) + int(got.hblkhd) if got is not None else 0


def _free_listed() -> int:
    got = _read()
    return int(got.fordblks) if got is not None else 0


def heap_free_bytes() -> int:
    """What the C heap holds freed since the last trim (resident, not yet given back); 0 where glibc does not
    say."""
    return max(0, _free_listed() - _after_trim)
