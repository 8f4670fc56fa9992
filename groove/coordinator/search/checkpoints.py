"""The thread that checkpoints derived indexes while the coordinator serves (`saved.py`), so that a start after a
crash reads again only what was committed since the last checkpoint, not every learning.

A tier is checkpointed once `CHANGED` of its learnings changed since its last checkpoint, or `every_s` after the
last one when fewer did; never while nothing changed. A start after a crash then reads again at most `CHANGED`
learnings a tier, or what `every_s` of a slow trickle wrote. Putting them back in the tier's graph is most of that
work: 0.66 ms a vector on 2 cores into a graph of 60,000 (cProfile: usearch's `add_many`), about 1.5 ms at
143,000; it runs behind the tier's serving (`search/waiting.py`), seconds' worth at most, not the minutes of a
rebuild. Each checkpoint writes the tier's whole vector index (0.18 s and 140 MB at 143,000 vectors):
so not more often.
"""

from __future__ import annotations

import logging
import threading
import time

from groove.coordinator.search.derived import Derived
from groove.coordinator.search.saved import Held

log = logging.getLogger(__name__)

CHANGED = 2_000  # learnings changed in a tier since its last checkpoint that make it due at once
LOOK_S = 5.0  # how often the tiers are looked at


class Checkpoints:
    """Checkpoints the tiers that are due, on a thread of its own, until `stop` is set (0 `every_s`: never; a
    clean stop checkpoints what changed all the same)."""

    def __init__(self, derived: Derived, held: Held, every_s: float, stop: threading.Event) -> None:
        self.derived = derived
        self.held = held
        self.every_s = every_s
        self.stop = stop
        self._thread: threading.Thread | None = None

    def run_once(self, now: float) -> list[str]:
        """Checkpoint the tiers due now; returns their names."""
        vectors = self.derived.vectors
        # a graph being built cannot be saved yet: its tier waits, rather than saving the rest again and again
        due = [
            name
            for name in self.derived.due(now, self.every_s, CHANGED)
            if (index := vectors.get(name)) is None or index.state != "building"
        ]
        if due:
            self.derived.checkpoint(self.held, due)
        return due

    def start(self) -> None:
        """Start the thread (none with `every_s` 0)."""
        if self.every_s > 0:
            self._thread = threading.Thread(target=self._run, name="groove-checkpoints", daemon=True)
            self._thread.start()

    def join(self, timeout: float) -> None:
        """Wait for the thread to end (set `stop` first): no checkpoint of its may reach a tier once it is closed."""
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self.stop.wait(LOOK_S):
            try:
                self.run_once(time.monotonic())
            except Exception:  # derived data: the last checkpoint stays, and the log past it
                log.exception("checkpointing derived indexes failed")
