"""Turning a validated write request into per-tier parts, and per-tier replies back into one reply.

Planning runs on the writer thread just before the batch commits, so the tiers it consults cannot change
under it. It rejects what can be known to fail (unknown learning ids, an id already used in another tier)
before anything is written.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from coordinator.errors import Rejected, not_found
from coordinator.tiers import TierSet
from coordinator.writes import DeletePart, OutcomePart, Part, PutPart, RelationPart
from protocol import constants as C
from protocol.errors import ErrorCode
from protocol.ids import uuid7
from protocol.models import LearningDeleteRequest, LearningPutRequest, OutcomeRecordRequest, RelationPutRequest
from protocol.scopes import tier_for_scope


def plan(tiers: TierSet, op: str, body: BaseModel) -> dict[str, Part]:
    """The parts of one write request, keyed by tier name; raises Rejected if it cannot apply."""
    if isinstance(body, LearningPutRequest):
        return _plan_put(tiers, body)
    if isinstance(body, OutcomeRecordRequest):
        return _plan_outcome(tiers, body)
    if isinstance(body, RelationPutRequest):
        return _plan_relation(tiers, body)
    if isinstance(body, LearningDeleteRequest):
        return _plan_delete(tiers, body)
    raise Rejected(ErrorCode.UNKNOWN_OP, f"{op} is not a write operation")


def _plan_put(tiers: TierSet, body: LearningPutRequest) -> dict[str, Part]:
    ids = [item.id or uuid7() for item in body.learnings]
    if len(set(ids)) != len(ids):
        raise Rejected(ErrorCode.BAD_REQUEST, "learnings: the same id appears more than once in one request")
    parts: dict[str, PutPart] = {}
    for index, (lid, item) in enumerate(zip(ids, body.learnings, strict=True)):
        tier = body.tier or tier_for_scope(item.scope)
        parts.setdefault(tier, PutPart([])).entries.append((index, lid, item))
    given = [item.id for item in body.learnings if item.id is not None]
    if given:
        # An id already stored in another open tier would exist twice; ids are global, tiers are not.
        for lid, holder in tiers.locate_open(given).items():
            index = ids.index(lid)
            wanted = body.tier or tier_for_scope(body.learnings[index].scope)
            if holder.name != wanted:
                raise Rejected(
                    ErrorCode.CONFLICT,
                    f"learnings.{index}.id: {lid} already exists in tier {holder.name!r}, not {wanted!r}",
                )
    for tier in parts:
        tiers.get(tier, create=True)
    return dict(parts)


def _plan_outcome(tiers: TierSet, body: OutcomeRecordRequest) -> dict[str, Part]:
    wanted = [a.learning_id for a in body.attributions]
    found = tiers.locate(wanted)
    missing = [lid for lid in wanted if lid not in found]
    if missing:
        raise (
            not_found(missing[0])
            if len(missing) == 1
            else Rejected(
                ErrorCode.NOT_FOUND,
                f"no learnings with ids {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}",
            )
        )
    parts: dict[str, OutcomePart] = {}
    for a in body.attributions:
        parts.setdefault(found[a.learning_id].name, OutcomePart([])).attributions.append((a.learning_id, a.outcome))
    return dict(parts)


def _plan_relation(tiers: TierSet, body: RelationPutRequest) -> dict[str, Part]:
    if body.from_id == body.to_id:
        raise Rejected(ErrorCode.BAD_REQUEST, "a learning cannot be related to itself (from_id == to_id)")
    found = tiers.locate([body.from_id, body.to_id])
    for lid in (body.from_id, body.to_id):
        if lid not in found:
            raise not_found(lid)
    part = RelationPart(body.from_id, body.relation_type, body.to_id, body.weight)
    return {found[body.from_id].name: part}


def _plan_delete(tiers: TierSet, body: LearningDeleteRequest) -> dict[str, Part]:
    owner = tiers.locate([body.id]).get(body.id)
    # Every open tier may hold relations pointing at the learning; each drops them in the same batch.
    parts: dict[str, Part] = {t.name: DeletePart(body.id, owner=False) for t in tiers.opened()}
    if owner is not None:
        parts[owner.name] = DeletePart(body.id, owner=True)
    return parts


def combine(op: str, body: BaseModel, replies: list[dict[str, Any]]) -> dict[str, Any]:
    """One reply body from the per-tier replies of a request."""
    if op == C.OP_LEARNING_PUT:
        assert isinstance(body, LearningPutRequest)
        n = len(body.learnings)
        ids: list[str | None] = [None] * n
        created = [False] * n
        for reply in replies:
            for index, lid, was_new in zip(reply["idx"], reply["ids"], reply["created"], strict=True):
                ids[index] = lid
                created[index] = was_new
        return {"ids": ids, "created": created}
    if op == C.OP_OUTCOME_RECORD:
        return {"applied": sum(int(r.get("applied", 0)) for r in replies)}
    if op == C.OP_LEARNING_DELETE:
        return {"deleted": any(r.get("deleted", False) for r in replies)}
    return {}
