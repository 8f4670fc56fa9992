"""`when_idle` nudges, pushed to an agent when its `hello` or `heartbeat` says it is idle.

The writer's board decides what `nudge.poll` delivers; this is only the push, on the socket thread, so a
heartbeat never waits for the writer. It holds the `when_idle` nudges stored since this coordinator started
(the acker thread adds each once it is acked, and drops an agent's share once the agent acknowledges it) and
pushes each to each agent it reaches once. A push is not a delivery (PROTOCOL.md, section 9): the nudge comes
with the agent's next idle poll too, until acknowledged, so a nudge that was sent before a restart, or that
this bounded store forgot, still arrives.
"""

from __future__ import annotations

import threading
from typing import Any

from groove.coordinator.board.nudges import order, reaches

Wire = dict[str, Any]
MAX_HELD = 10_000  # nudges held for pushing; past this the oldest are left to the agents' polls


class IdleNudges:
    """The `when_idle` nudges not yet pushed to (or acknowledged by) each agent they reach. Thread-safe."""

    def __init__(self, limit: int = MAX_HELD) -> None:
        self.limit = limit
        self._nudges: dict[str, Wire] = {}  # by id, oldest first
        self._done: dict[str, set[str]] = {}  # nudge id -> agents it was pushed to or acknowledged by
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._nudges)

    def sent(self, nudge: Wire) -> None:
        """A `when_idle` nudge was stored."""
        with self._lock:
            self._nudges[nudge["id"]] = nudge
            self._done[nudge["id"]] = set()
            if len(self._nudges) > self.limit:
                oldest = next(iter(self._nudges))
                del self._nudges[oldest], self._done[oldest]

    def acked(self, agent_id: str, ids: list[str]) -> None:
        """The agent acknowledged these nudges: never push them to it."""
        with self._lock:
            for nid in ids:
                if nid in self._done:
                    self._done[nid].add(agent_id)

    def take(self, agent_id: str, role: str | None) -> list[Wire]:
        """The nudges to push to an agent that is idle now, highest priority first; each is pushed once."""
        with self._lock:
            due = [
                n for n in self._nudges.values() if agent_id not in self._done[n["id"]] and reaches(n, agent_id, role)
            ]
            for nudge in due:
                self._done[nudge["id"]].add(agent_id)
        return order(due)
