"""Tiers that nobody uses give their memory back: a thread releases each tier's RocksDB once it has been idle for
`idle_s`, and sooner, least recently used first, while the tiers holding theirs would cost more than the memory
budget allows them. The next query or write on a released tier opens it again (`Tier.using`); what the
coordinator derived from it (vectors, keyword entries) stays loaded, so a reopen costs one RocksDB open.

Why: RocksDB gives each open tier its own block cache (32 MiB, which CozoDB sets whatever the options say) and
memtables (two, and as many flushed ones kept for conflict checks: `tiers.WRITE_BUFFER_MIB` each), and a
coordinator that serves every project on a laptop opens a tier for each project it has ever seen. Measured
before this (2 vCPUs, embedder off): 200 projects of 100 learnings each, 10 of them kept busy, held 276 MB,
1.86 x a coordinator that only ever saw those 10.
"""

from __future__ import annotations

import logging
import threading
import time

from groove.coordinator.heap import give_back_memory, heap_free_bytes
from groove.coordinator.store.tiers import ROCKSDB_CEILING_MIB, Tier
from groove.coordinator.store.tierset import TierSet

log = logging.getLogger(__name__)

SWEEP_S = 5.0  # how often the open tiers are looked at
# What one open tier's RocksDB holds at most (an upper bound, not a reading: RocksDB's own figures are not exposed
# through CozoDB): `stats` estimates each tier's share from its files instead (`net/memory.py`).
TIER_CEILING_MB = float(ROCKSDB_CEILING_MIB)
# The C heap's bytes freed since the last trim past which they are handed back at the next sweep: glibc keeps
# what a burst freed (RocksDB's flushed memtables, a large batch's objects) for the next one otherwise. A trim
# of 300 MB in holes took 19 ms; one with nothing new to give, 0.02 ms.
TRIM_FREE_BYTES = 32 * 1024 * 1024
MIN_IDLE_S = 1.0  # even over the budget, a tier used within this is left open: it is busy, closing would thrash


def to_release(tiers: list[Tier], idle_s: float, allowed_mb: float, now: float) -> list[Tier]:
    """The tiers to release now: those idle past `idle_s`, then, least recently used first, as many more (idle
    at least MIN_IDLE_S) as keep the open tiers' ceiling within `allowed_mb`."""
    holding = [t for t in tiers if not t.released]
    chosen = [t for t in holding if now - t.last_used >= idle_s]
    kept = [t for t in holding if t not in chosen]
    over = len(kept) * TIER_CEILING_MB - allowed_mb
    for tier in sorted(kept, key=lambda t: t.last_used):
        if over <= 0:
            break
        if now - tier.last_used >= MIN_IDLE_S:
            chosen.append(tier)
            over -= TIER_CEILING_MB
    return chosen


class IdleTiers:
    """The thread that releases idle tiers (and trims the C heap's free pages), until `stop` is set."""

    def __init__(self, tiers: TierSet, idle_s: float, allowed_mb: float, stop: threading.Event) -> None:
        self.tiers = tiers
        self.idle_s = idle_s
        self.allowed_mb = allowed_mb
        self.stop = stop
        self.released = 0  # releases so far

    def sweep(self, now: float) -> int:
        """Release what `to_release` picks (a tier used in the meantime stays open); returns how many were."""
        done = [t.name for t in to_release(self.tiers.opened(), self.idle_s, self.allowed_mb, now) if t.release(0, now)]
        if done or heap_free_bytes() > TRIM_FREE_BYTES:
            give_back_memory()  # closed tiers' caches, and what big batches freed, went back to the C heap only
        if done:
            self.released += len(done)
            log.info("released %d idle tier(s): %s", len(done), ", ".join(done[:5]) + (" ..." if len(done) > 5 else ""))
        return len(done)

    def start(self) -> None:
        threading.Thread(target=self._run, name="groove-idle-tiers", daemon=True).start()

    def _run(self) -> None:
        while not self.stop.wait(SWEEP_S):
            try:
                self.sweep(time.monotonic())
            except Exception:  # a failed close leaves the tier open: memory, never data, is at stake
                log.exception("releasing idle tiers failed")
