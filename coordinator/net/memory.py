"""The coordinator's memory by part, for `stats` (`memory_mb`), the dashboard and `/metrics`.

Each part is what that part holds now, read or estimated as cheaply as `stats` must be (it is polled):

- `interpreter`: the process before any tier opened (Python, groove's code and libraries), read at start;
- `rocksdb`: each open tier's RocksDB, estimated from its files, as CozoDB exposes none of RocksDB's own
  figures: its block cache fills up to 32 MiB with what is read, so min(the tables' bytes, 32 MiB); its memtables
  hold what the write-ahead logs hold until a flush, at about twice their bytes (a skiplist node and arena slack
  per entry: calibrated in a soak of 7 tiers with no flush yet, where the logs held 72 MB and the memory nothing
  else explained came to 79 MB), up to 2 x 16 MiB; once a tier has flushed, the flushed memtables RocksDB keeps
  for transactions' conflict checks (`max_write_buffer_size_to_maintain`, 32 MiB); and 1 MiB of its own state.
  A released tier (`store/idle.py`) holds none;
- `vectors`: the vector indexes (matrices, id maps, graphs), read;
- `keywords`: SQLite's own count of the memory it holds (the keyword index, its page cache), read;
- `row_cache`, `reply_cache`, `votes`, `query_vectors`, `locations`, `embedding_backlog`: entries held times
  each entry's measured size (`budget.py`; `tests/coordinator/test_budget.py` measures them);
- `heap_free`: what the C heap holds freed but not yet given back (glibc's own count); the idle-tier thread gives
  it back once it passes `store/idle.py`'s bound;
- `unaccounted`: the measured RSS less all of the above (the C heap's free pages, threads' stacks, what
  nothing above counts). It is the check on the rest: `benchmarks.soak` reports its share.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from functools import cache

from groove.coordinator.budget import REPLY_BYTES, ROW_BYTES, VOTE_BYTES
from groove.coordinator.net.resends import Resends
from groove.coordinator.runtime import heap_free_bytes
from groove.coordinator.search.derived import Derived
from groove.coordinator.store.tiers import DB_DIR, Tier, TierSet

MIB = 1024 * 1024
_BLOCK_CACHE = 32 * MIB
_MEMTABLES = 2 * 16 * MIB
_MAINTAINED = 2 * 16 * MIB  # flushed memtables kept for conflict checks: RocksDB's default, twice the write buffer
_MEMTABLE_PER_LOG_BYTE = 2.0
_ROCKSDB_OWN = 1 * MIB
LOCATION_BYTES = 200  # a cached learning location: two strings and an ordered-map entry
QUERY_BYTES = VOTE_BYTES  # a kept query vector and its text's entry
PENDING_BYTES = 600  # a learning waiting for its vector: its entry and its text (about 300 characters)


@cache
def _sqlite_memory_used() -> Callable[[], int] | None:
    """SQLite's sqlite3_memory_used, from the library Python's sqlite3 module loaded; None if not found."""
    name = ctypes.util.find_library("sqlite3")
    function = getattr(ctypes.CDLL(name), "sqlite3_memory_used", None) if name else None
    if function is not None:
        function.restype = ctypes.c_int64
    return function


def rocksdb_bytes(tier: Tier) -> int:
    """What this tier's RocksDB holds, estimated from its files (0 once released)."""
    if tier.released:
        return 0
    tables = logs = 0
    try:
        for entry in (tier.path / DB_DIR / "data").iterdir():
            if entry.suffix == ".sst":
                tables += entry.stat().st_size
            elif entry.suffix == ".log":
                logs += entry.stat().st_size
    except OSError:  # a file compacted away while listed: the estimate is only that
        pass
    memtables = min(int(_MEMTABLE_PER_LOG_BYTE * logs), _MEMTABLES) + (_MAINTAINED if tables else 0)
    return min(tables, _BLOCK_CACHE) + memtables + _ROCKSDB_OWN


def parts(rss_mb: float, base_mb: float, derived: Derived, tiers: TierSet, resends: Resends) -> dict[str, float]:
    """MB by part, adding up to `rss_mb` (the last part, `unaccounted`, is what the others do not explain)."""
    sqlite = _sqlite_memory_used()
    held = {
        "interpreter": base_mb * 1e6,
        "rocksdb": sum(rocksdb_bytes(tier) for tier in tiers.opened()),
        "vectors": sum(index.memory_bytes() for index in list(derived.vectors.values())),
        "keywords": sqlite() if sqlite is not None else 0,
        "row_cache": len(derived.rows) * ROW_BYTES,
        "reply_cache": len(resends) * REPLY_BYTES,
        "votes": derived.votes.tasks() * VOTE_BYTES,
        "query_vectors": len(derived.queries) * QUERY_BYTES,
        "locations": tiers.located() * LOCATION_BYTES,
        "embedding_backlog": derived.queue_depth() * PENDING_BYTES,
        "heap_free": heap_free_bytes(),
    }
    out = {name: round(value / 1e6, 1) for name, value in held.items()}
    out["unaccounted"] = round(rss_mb - sum(out.values()), 1)
    return out
