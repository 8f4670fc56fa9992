"""One tier's nudges as its board applies them: which agent each reaches, what it was given, what it read.

A nudge reaches its target agent, every agent that polls with its role (`role:<role>`), or every agent
(`all`). Acknowledgements are stored, one row per agent: an acknowledged nudge never reaches that agent
again. Deliveries are kept in memory only, on purpose: after a coordinator restart, and on a poll with
`again` (a client's first after it connects), what was delivered but not acknowledged is delivered again.
"""

from __future__ import annotations

from typing import Any

from groove.coordinator.store.relations import NUDGE_ACKS, NUDGES, Relation
from groove.coordinator.store.tiers import Tier
from groove.protocol import constants as C
from groove.protocol.boardrecords import NudgeAckRequest, NudgePollRequest, NudgeSendRequest

Wire = dict[str, Any]
_RANK = {priority: rank for rank, priority in enumerate(C.NUDGE_PRIORITIES)}


def reaches(nudge: Wire, agent_id: str, role: str | None) -> bool:
    """Whether the nudge is for this agent (by id, by its role, or for all)."""
    target = nudge["target"]
    if target in (C.NUDGE_TARGET_ALL, agent_id):
        return True
    return role is not None and target == C.NUDGE_TARGET_ROLE + role


def order(nudges: list[Wire]) -> list[Wire]:
    """Highest priority first, then oldest."""
    return sorted(nudges, key=lambda n: (-_RANK[n["priority"]], n["created_at"], n["id"]))


class NudgeBox:
    """A tier's nudges with their acknowledgements, and what this coordinator delivered since it started."""

    def __init__(self, nudges: list[Wire], acks: list[Wire]) -> None:
        self.nudges: dict[str, Wire] = {n["id"]: n for n in nudges}
        self.acked: set[tuple[str, str]] = {(a["nudge_id"], a["agent_id"]) for a in acks}
        self.delivered: set[tuple[str, str]] = set()
        self._new: list[Wire] = []
        self._new_acks: list[Wire] = []

    @classmethod
    def load(cls, tier: Tier) -> NudgeBox:
        """The nudges and acknowledgements stored in `tier`."""
        nudges = [NUDGES.wire(row) for row in tier.run(NUDGES.scan())]
        return cls(nudges, [NUDGE_ACKS.wire(row) for row in tier.run(NUDGE_ACKS.scan())])

    def take_dirty(self) -> list[tuple[Relation, list[list[Any]]]]:
        """The nudges sent and acknowledgements made since the last call."""
        rows = [(NUDGES, [NUDGES.row(n) for n in self._new]), (NUDGE_ACKS, [NUDGE_ACKS.row(a) for a in self._new_acks])]
        self._new, self._new_acks = [], []
        return rows

    def send(self, body: NudgeSendRequest, nudge_id: str, now: int) -> Wire:
        """Keep a new nudge (its memory checked by the caller)."""
        nudge = {"id": nudge_id, **body.model_dump(), "created_at": now}
        self.nudges[nudge_id] = nudge
        self._new.append(nudge)
        return {"id": nudge_id, "created_at": now}

    def due(self, body: NudgePollRequest) -> list[Wire]:
        """What a poll would deliver from this tier, without delivering it."""
        out = []
        for nudge in self.nudges.values():
            key = (nudge["id"], body.agent_id)
            if key in self.acked or (key in self.delivered and not body.again):
                continue
            if nudge["delivery"] == "when_idle" and not body.idle:
                continue
            if reaches(nudge, body.agent_id, body.role):
                out.append(nudge)
        return out

    def poll(self, body: NudgePollRequest) -> Wire:
        """Deliver what is due to the agent, highest priority first."""
        due = order(self.due(body))[: C.MAX_NUDGES_PER_POLL]
        self.delivered.update((n["id"], body.agent_id) for n in due)
        return {"nudges": [dict(n) for n in due]}

    def ack(self, body: NudgeAckRequest, now: int) -> Wire:
        """Acknowledge the given nudges of this tier for the agent; returns how many were not acknowledged."""
        fresh = 0
        for nudge_id in dict.fromkeys(body.ids):
            key = (nudge_id, body.agent_id)
            if nudge_id in self.nudges and key not in self.acked:
                self.acked.add(key)
                self._new_acks.append({"nudge_id": nudge_id, "agent_id": body.agent_id, "acked_at": now})
                fresh += 1
        return {"acked": fresh}
