"""Learning rows kept in memory for search, and which learnings are superseded.

A search reads the stored rows of up to ~50 candidates. Through CozoDB that costs ≈ 0.5 ms per query plus
≈ 25 µs per row, two to three queries per search: most of a search's time at 100k learnings. `RowCache`
keeps recently read rows (learning and usage columns, `JOINED_HEAD` order) in a bounded LRU map, warmed
when a tier opens. It is derived data, and it must never answer with a row older than an acknowledged
write:

- after every commit, before the acks go out, the batcher's hook invalidates each learning the commit
  touched (put, outcome, delete);
- a reader that missed takes a `stamp` before querying CozoDB and offers the rows it read with it;
  `fill` drops every row invalidated after that stamp, since the query may have run before that commit.

`Supersessions` holds every `supersedes` relation of the open tiers and `Archive` every archived learning
(few, and needed by every search), so leaving those out needs no query either.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

Row = list[Any]


class RowCache:
    """(tier, learning id) -> joined row, least recently used evicted first. Thread-safe."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()
        self._rows: OrderedDict[tuple[str, str], Row] = OrderedDict()
        self._generation = 0
        # when each recently invalidated learning was last invalidated; `_floor` is the newest generation
        # forgotten from it, below which no stamp can be trusted
        self._touched: OrderedDict[str, int] = OrderedDict()
        self._floor = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._rows)

    def stamp(self) -> int:
        """Take before reading rows from CozoDB; give to `fill` with what was read."""
        with self._lock:
            return self._generation

    def get(self, tier: str, ids: list[str]) -> dict[str, Row]:
        """The cached rows among these learnings of a tier."""
        found: dict[str, Row] = {}
        with self._lock:
            for lid in ids:
                row = self._rows.get((tier, lid))
                if row is not None:
                    self._rows.move_to_end((tier, lid))
                    found[lid] = row
            self.hits += len(found)
            self.misses += len(ids) - len(found)
        return found

    def fill(self, tier: str, rows: list[Row], stamp: int) -> None:
        """Keep rows read from CozoDB after `stamp` was taken, except those a commit changed since."""
        if self.capacity <= 0:
            return
        with self._lock:
            if stamp < self._floor:
                return
            for row in rows:
                if self._touched.get(row[0], -1) > stamp:
                    continue
                self._rows[(tier, row[0])] = row
                self._rows.move_to_end((tier, row[0]))
            while len(self._rows) > self.capacity:
                self._rows.popitem(last=False)

    def invalidate(self, tier: str, ids: list[str]) -> None:
        """A commit changed (or removed) these learnings: forget their rows."""
        if not ids:
            return
        with self._lock:
            self._generation += 1
            for lid in ids:
                self._rows.pop((tier, lid), None)
                self._touched[lid] = self._generation
                self._touched.move_to_end(lid)
            while len(self._touched) > max(self.capacity, 1024):
                _, generation = self._touched.popitem(last=False)
                self._floor = max(self._floor, generation)

    def drop_tier(self, tier: str) -> None:
        """Forget every row of a tier (it is being reloaded)."""
        with self._lock:
            self._generation += 1
            self._floor = self._generation  # a reader of the old tier must not refill it
            for key in [k for k in self._rows if k[0] == tier]:
                del self._rows[key]


class Supersessions:
    """Every `supersedes` relation of the open tiers: superseded id -> the learnings superseding it, by tier."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_tier: dict[str, dict[str, set[str]]] = {}

    def load(self, tier: str, pairs: list[tuple[str, str]]) -> None:
        """Replace a tier's relations with these (from_id, to_id) pairs."""
        by_to: dict[str, set[str]] = {}
        for from_id, to_id in pairs:
            by_to.setdefault(to_id, set()).add(from_id)
        with self._lock:
            self._by_tier[tier] = by_to

    def apply(self, tier: str, added: list[tuple[str, str]], removed: list[tuple[str, str]]) -> None:
        """A commit stored and removed these (from_id, to_id) supersedes relations in a tier."""
        with self._lock:
            by_to = self._by_tier.setdefault(tier, {})
            for from_id, to_id in removed:
                froms = by_to.get(to_id)
                if froms is not None:
                    froms.discard(from_id)
                    if not froms:
                        del by_to[to_id]
            for from_id, to_id in added:
                by_to.setdefault(to_id, set()).add(from_id)

    def superseded(self, tiers: list[str], ids: list[str]) -> set[str]:
        """Which of these learnings a relation stored in one of these tiers supersedes."""
        with self._lock:
            maps = [self._by_tier[t] for t in tiers if t in self._by_tier]
            return {lid for lid in ids if any(lid in m for m in maps)}


class Archive:
    """The archived learnings of the open tiers, by tier."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_tier: dict[str, set[str]] = {}

    def load(self, tier: str, ids: list[str]) -> None:
        """Replace a tier's archived learnings."""
        with self._lock:
            self._by_tier[tier] = set(ids)

    def apply(self, tier: str, archived: list[str], unarchived: list[str]) -> None:
        """A commit archived and restored (or purged) these learnings of a tier."""
        with self._lock:
            marked = self._by_tier.setdefault(tier, set())
            marked.difference_update(unarchived)
            marked.update(archived)

    def archived(self, tier: str, ids: list[str]) -> set[str]:
        """Which of these learnings of a tier are archived."""
        with self._lock:
            marked = self._by_tier.get(tier, set())
            return {lid for lid in ids if lid in marked}
