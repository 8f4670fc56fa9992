"""The coordinator's memory by part, for `stats` (`memory_mb`), the dashboard and `/metrics`.

Each part is what that part holds now, read, counted or measured as cheaply as `stats` must be (it is polled):

- `interpreter`: the process before any tier opened (Python, groove's code and libraries), read at start;
- `vectors`: the vector indexes (matrices, id maps, graphs), read;
- `keywords`: SQLite's own count of the memory it holds (the keyword index, its page cache);
- `row_cache`, `reply_cache`, `votes`, `query_vectors`, `locations`, `embedding_backlog`: entries held times
  each entry's measured size (`budget.py`; `tests/coordinator/test_budget.py` measures them);
- `rocksdb`: the open tiers' RocksDB (block caches, memtables, the flushed memtables kept for conflict checks).
  CozoDB exposes none of RocksDB's counters, so it is measured from the C heap, which RocksDB allocates from:
  what the heap has handed out beyond what it had at start, less SQLite's count and the vectors held in numpy
  and bytes (the only other large users of it; Python's objects under 512 bytes live in its own arenas). The
  matrices count whole: a new index's zeroed matrix takes 1.5 MB from the heap but none of the RSS until
  written, and 200 empty tiers once read as 342 MB of RocksDB. Each tier's share (`tiers[].rocksdb_mb`) divides
  that by an estimate from its files: the tables' bytes up to the
  32 MiB block cache, and twice the write-ahead logs' bytes up to 32 MiB (a memtable entry's skiplist node and
  arena slack). A released tier (`store/idle.py`) holds none;
- `heap_free`: what the C heap holds freed since it last gave memory back (glibc's count, less what that trim
  left on its lists); the idle-tier thread gives it back once it passes `store/idle.py`'s bound;
- `unaccounted`: the measured RSS less all of the above: Python's small objects beyond the caches' counts,
  threads' stacks, what nothing above counts. `benchmarks.soak` reports its share.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from functools import cache

from groove.coordinator.budget import REPLY_BYTES, ROW_BYTES, VOTE_BYTES
from groove.coordinator.heap import heap_free_bytes, heap_used_bytes
from groove.coordinator.net.resends import Resends
from groove.coordinator.search.derived import Derived
from groove.coordinator.store.tiers import DB_DIR, Tier
from groove.coordinator.store.tierset import TierSet

MIB = 1024 * 1024
_BLOCK_CACHE = 32 * MIB
_MEMTABLES = 2 * 16 * MIB
_MEMTABLE_PER_LOG_BYTE = 2.0
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


def file_estimate(tier: Tier) -> int:
    """A tier's RocksDB by its files (0 once released): the weight its share of the measured whole is given."""
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
    return min(tables, _BLOCK_CACHE) + min(int(_MEMTABLE_PER_LOG_BYTE * logs), _MEMTABLES) + 1


def rocksdb_shares(tiers: list[Tier], total_mb: float) -> dict[str, float]:
    """Each tier's share of the open tiers' measured RocksDB total, MB, by its file estimate."""
    weights = {tier.name: file_estimate(tier) for tier in tiers}
    whole = sum(weights.values()) or 1
    return {name: round(total_mb * weight / whole, 1) for name, weight in weights.items()}


def parts(
    rss_mb: float, base: tuple[float, int], derived: Derived, tiers: TierSet, resends: Resends
) -> dict[str, float]:
    """MB by part, adding up to `rss_mb` (the last part, `unaccounted`, is what the others do not explain);
    `base`: the RSS (MB) and the C heap's handed-out bytes at start."""
    sqlite = _sqlite_memory_used()
    held = {
        "interpreter": base[0] * 1e6,
        "vectors": sum(index.memory_bytes() for index in list(derived.vectors.values())),
        "keywords": sqlite() if sqlite is not None else 0,
        "row_cache": len(derived.rows) * ROW_BYTES,
        "reply_cache": len(resends) * REPLY_BYTES,
        "votes": derived.votes.tasks() * VOTE_BYTES,
        "query_vectors": len(derived.queries) * QUERY_BYTES,
        "locations": tiers.located() * LOCATION_BYTES,
        "embedding_backlog": derived.queue_depth() * PENDING_BYTES,
    }
    # the matrices count whole in the heap, resident or not (a new index's zeroed 1.5 MB is not, until written)
    matrices = sum(index.heap_bytes() for index in list(derived.vectors.values()))
    others = held["keywords"] + matrices + held["votes"] + held["query_vectors"]
    held["rocksdb"] = max(0, heap_used_bytes() - base[1] - others)
    held["heap_free"] = heap_free_bytes()
    out = {name: round(value / 1e6, 1) for name, value in held.items()}
    out["unaccounted"] = round(rss_mb - sum(out.values()), 1)
    return out
