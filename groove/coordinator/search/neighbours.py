"""Near-duplicates by meaning: learnings of one tier whose embeddings are at least NEAR_DUPLICATE_COSINE
similar get a `related_to` relation, from the newer to the older (ids are UUIDv7, so the greater is newer).

Checked on a thread of its own, after the vectors were committed, never on the write path: the relations
go through the batcher as internal writes. The backlog is bounded; learnings left out of a full backlog
are simply not checked (the relation is advice, and `index.rebuild` does not need it).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from groove.coordinator.search.vectors import VectorIndex, WorkCost
from groove.protocol import constants as C

log = logging.getLogger(__name__)

_BACKLOG = 50_000
_BATCH = 256

# Receives (tier, from_id, to_id, cosine) pairs to relate, in tier order; returns how many of them, from the first,
# it queued (fewer than all when the write queue is full).
Relate = Callable[[list[tuple[str, str, str, float]]], int]


class NearDuplicates:
    """The learnings whose vectors just landed, waiting to be compared with their tier's others."""

    def __init__(self, indexes: dict[str, VectorIndex], threshold: float = C.NEAR_DUPLICATE_COSINE) -> None:
        self.indexes = indexes
        self.threshold = threshold
        self._pending: deque[tuple[str, str]] = deque()
        self._ready = threading.Condition()
        self.skipped = 0  # learnings not checked because the backlog was full
        self.related = 0
        self.cost = WorkCost()  # seconds of checking per learning

    def backlog(self) -> int:
        """Learnings waiting to be checked."""
        with self._ready:
            return len(self._pending)

    def note(self, tier: str, ids: list[str]) -> None:
        """These learnings of a tier now have vectors."""
        with self._ready:
            room = max(0, _BACKLOG - len(self._pending))
            self._pending.extend((tier, lid) for lid in ids[:room])
            self.skipped += max(0, len(ids) - room)
            self._ready.notify()

    def run(self, relate: Relate, stopping: threading.Event) -> None:
        """Check noted learnings in batches until `stopping` is set.

        Not niced like the embedding worker: it holds a tier's index lock while it compares, and a
        preempted low-priority holder would make searches wait for it.
        """
        while not stopping.is_set():
            with self._ready:
                if not self._pending:
                    self._ready.wait(0.2)
                    continue
                batch = [self._pending.popleft() for _ in range(min(_BATCH, len(self._pending)))]
            started = time.perf_counter()
            try:
                pairs = self.check(batch)
                self.cost.add(time.perf_counter() - started, len(batch))
            except Exception:  # advice only: a failure here must not stop the thread
                log.exception("checking %d learnings for near-duplicates failed", len(batch))
                continue
            while pairs and not stopping.is_set():
                queued = relate(pairs)
                self.related += queued
                pairs = pairs[queued:]  # never queued twice: a full queue used to make every pair go again
                if pairs:
                    stopping.wait(0.05)  # the write queue is full: the source writes go first

    def check(self, batch: list[tuple[str, str]]) -> list[tuple[str, str, str, float]]:
        """The (tier, newer, older, cosine) near-duplicate pairs among these learnings and their tiers, in order."""
        by_tier: dict[str, list[str]] = {}
        for tier, lid in batch:
            by_tier.setdefault(tier, []).append(lid)
        pairs: dict[tuple[str, str, str], float] = {}
        for tier, ids in by_tier.items():
            index = self.indexes.get(tier)
            if index is None:
                continue
            for a, b, score in index.neighbours(ids, self.threshold):
                pairs[(tier, max(a, b), min(a, b))] = round(score, 4)
        return [(tier, newer, older, score) for (tier, newer, older), score in sorted(pairs.items())]
