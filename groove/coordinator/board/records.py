"""What a swarm records beside its tasks, as one tier's board applies it: decisions (which may be reversed),
artifact versions (a new checksum for a path is a new version linked to the one before), checkpoints and
notes.

Only what applying new records needs is kept in memory: each decision's reversal state and each path's
latest version. Listing them is a read of the stored rows (board/reads.py). Notes are searched through the
derived indexes (coordinator/search/notes.py), which learn of new ones from `take_noted` after each commit.
"""

from __future__ import annotations

from typing import Any

from groove.coordinator.errors import Rejected
from groove.coordinator.store.relations import ARTIFACTS, CHECKPOINTS, DECISIONS, NOTES, Relation
from groove.coordinator.store.tiers import Tier
from groove.protocol.boardrecords import (
    ArtifactRecordRequest,
    CheckpointRecordRequest,
    DecisionRecordRequest,
    DecisionReverseRequest,
    MemoryNoteRequest,
)
from groove.protocol.errors import ErrorCode

Wire = dict[str, Any]
_KEPT = (DECISIONS, ARTIFACTS, CHECKPOINTS, NOTES)


class Records:
    """A tier's decisions and artifact versions, and the records made since the last commit."""

    def __init__(self, decisions: list[Wire], artifacts: list[Wire]) -> None:
        self.decisions: dict[str, Wire] = {d["id"]: d for d in decisions}
        self.latest: dict[tuple[str, str], Wire] = {}  # (memory, path) -> its latest version
        for artifact in sorted(artifacts, key=lambda a: a["version"]):
            self.latest[(artifact["memory_id"], artifact["path"])] = artifact
        self.dirty: dict[str, list[Wire]] = {relation.name: [] for relation in _KEPT}
        self.noted: list[Wire] = []  # notes committed with the current batch, for the derived indexes

    @classmethod
    def load(cls, tier: Tier) -> Records:
        """The records stored in `tier` that applying new ones needs."""
        decisions = [DECISIONS.wire(row) for row in tier.run(DECISIONS.scan())]
        return cls(decisions, [ARTIFACTS.wire(row) for row in tier.run(ARTIFACTS.scan())])

    def take_dirty(self) -> list[tuple[Relation, list[list[Any]]]]:
        """The rows recorded or changed since the last call, per relation."""
        rows = [(relation, [relation.row(wire) for wire in self.dirty[relation.name]]) for relation in _KEPT]
        for wires in self.dirty.values():
            wires.clear()
        return rows

    def decide(self, body: DecisionRecordRequest, decision_id: str, now: int) -> Wire:
        """Record a decision (its tasks checked by the caller)."""
        decision = {
            "id": decision_id,
            **body.model_dump(),
            "made_at": now,
            "reversed_by": None,
            "reversed_at": None,
        }
        self.decisions[decision_id] = decision
        self.dirty[DECISIONS.name].append(decision)
        return {"id": decision_id}

    def reverse(self, body: DecisionReverseRequest, now: int) -> Wire:
        """Mark a reversible decision reversed; Rejected `conflict` if it is not reversible or reversed already."""
        decision = self.decisions.get(body.id)
        if decision is None:
            raise Rejected(ErrorCode.NOT_FOUND, f"no decision {body.id}")
        if not decision["reversible"]:
            raise Rejected(ErrorCode.CONFLICT, f"decision {body.id} was recorded as not reversible")
        if decision["reversed_by"] is not None:
            raise Rejected(
                ErrorCode.CONFLICT, f"decision {body.id} was reversed already by {decision['reversed_by']!r}"
            )
        decision.update(reversed_by=body.reversed_by, reversed_at=now)
        self.dirty[DECISIONS.name].append(decision)
        return {"status": "reversed"}

    def artifact(self, body: ArtifactRecordRequest, artifact_id: str, now: int) -> Wire:
        """A new version of the path, unless its checksum is the latest version's (then that version)."""
        key = (body.memory_id, body.path)
        latest = self.latest.get(key)
        if latest is not None and latest["checksum"] == body.checksum:
            return {"id": latest["id"], "version": latest["version"]}
        artifact = {
            "id": artifact_id,
            **body.model_dump(),
            "created_at": now,
            "version": 1 if latest is None else latest["version"] + 1,
            "previous_id": None if latest is None else latest["id"],
        }
        self.latest[key] = artifact
        self.dirty[ARTIFACTS.name].append(artifact)
        return {"id": artifact_id, "version": artifact["version"]}

    def checkpoint(self, body: CheckpointRecordRequest, checkpoint_id: str, now: int) -> Wire:
        """Record where an agent's work stood."""
        self.dirty[CHECKPOINTS.name].append({"id": checkpoint_id, **body.model_dump(), "created_at": now})
        return {"id": checkpoint_id}

    def note(self, body: MemoryNoteRequest, note_id: str, now: int) -> Wire:
        """Record a note (its memory and task checked by the caller); Rejected `bad_request` if it expired already."""
        if body.expires_at is not None and body.expires_at <= now:
            raise Rejected(ErrorCode.BAD_REQUEST, f"expires_at: {body.expires_at} is not in the future (now {now})")
        note = {"id": note_id, **body.model_dump(), "created_at": now}
        self.dirty[NOTES.name].append(note)
        self.noted.append(note)
        return {"id": note_id}

    def take_noted(self) -> list[Wire]:
        """The notes recorded since the last call (once their batch committed)."""
        noted, self.noted = self.noted, []
        return noted
