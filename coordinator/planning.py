"""Turning a validated write request into per-tier parts, and per-tier replies back into one reply.

Planning runs on the writer thread just before the batch commits, so the tiers it consults cannot change
under it. It rejects what can be known to fail (unknown learning ids, an id already used in another tier)
before anything is written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from coordinator.adaptive import SessionResult, updates
from coordinator.errors import Rejected, already_closed, not_found
from coordinator.injection import InjectRecord
from coordinator.lifecycle import MaintainPart, RestorePart, archived_ids, plan_tier
from coordinator.parts import (
    DecidePart,
    DeletePart,
    EmbedPart,
    InjectPart,
    OutcomePart,
    Part,
    PromotePart,
    ProposePart,
    PutPart,
    RelationPart,
    SessionClose,
)
from coordinator.records import INJECTION_COLS, JOINED_BODY, JOINED_HEAD, REVIEW_COLS, learning_wire
from coordinator.risks import scan
from coordinator.tiers import Tier, TierSet
from protocol import constants as C
from protocol.curation import PromoteRequest, ProposeRequest, ReviewDecideRequest
from protocol.errors import ErrorCode
from protocol.ids import uuid7
from protocol.loop import MaintainRequest, RestoreRequest
from protocol.models import (
    LearningDeleteRequest,
    LearningIn,
    LearningPutRequest,
    OutcomeRecordRequest,
    RelationPutRequest,
)
from protocol.scopes import tier_for_scope

# The internal write the embedding worker sends through the batcher (never on the wire).
OP_STORE_VECTORS = "embedding.store"


class StoreVectors(BaseModel):
    """Vectors computed by the embedding worker for learnings of one tier."""

    tier: str
    rows: list[tuple[str, list[float]]]


@dataclass(frozen=True)
class Injected:
    """A stored injection, as an outcome needs it."""

    learnings: list[tuple[str, str]]  # (learning id, tier)
    had_task: bool
    closed: bool  # its outcome was recorded already


def load_injections(user: Tier, ids: list[str]) -> dict[str, Injected]:
    """These stored injections (unknown ids are left out)."""
    rows = user.run(
        "?[injection_id, learnings_json, had_task, outcome_at] := injection_id in $ids, "
        "*injections{injection_id, learnings_json, had_task, outcome_at}",
        {"ids": ids},
    )
    return {r[0]: Injected([(a, b) for a, b in json.loads(r[1])], r[2], r[3] is not None) for r in rows}


def _copy(stored: dict[str, Any], source: dict[str, Any]) -> LearningIn:
    """A new learning with a stored one's content, global in scope, with its own source."""
    return LearningIn(
        scope=C.SCOPE_GLOBAL,
        category=stored["category"],
        description=stored["description"],
        insight=stored["insight"],
        pattern=stored["pattern"],
        confidence=stored["confidence"],
        source=source,
    )


def _stored(tier: Tier, key: tuple[str, str, str]) -> bool:
    rows = tier.run(
        "?[from_id] := *learning_relations{from_id, relation_type, to_id}, from_id = $f, relation_type = $t, "
        "to_id = $o",
        {"f": key[0], "t": key[1], "o": key[2]},
    )
    return bool(rows)


class Planner:
    """Plans the requests of one batch; every learning the batch names is located up front, with one query
    per tier for the whole batch rather than one per request.
    """

    def __init__(self, tiers: TierSet, bodies: list[BaseModel], now: int) -> None:
        self.tiers = tiers
        self.now = now
        named: list[str] = []
        given: list[str] = []
        closing = [b.injection_id for b in bodies if isinstance(b, OutcomeRecordRequest) and b.injection_id]
        self.injections = load_injections(tiers.open_user(), closing) if closing else {}
        self.closing: set[str] = set()  # injections an outcome of this batch closes
        self.superseding: set[tuple[str, str, str]] = set()  # supersedes relations this batch adds
        self.deciding: set[str] = set()  # reviews decided in this batch
        for injected in self.injections.values():
            named.extend(lid for lid, _ in injected.learnings)
        for body in bodies:
            if isinstance(body, OutcomeRecordRequest):
                named.extend(a.learning_id for a in body.attributions)
            elif isinstance(body, RelationPutRequest):
                named.extend((body.from_id, body.to_id))
            elif isinstance(body, LearningDeleteRequest | RestoreRequest | PromoteRequest | ProposeRequest):
                named.append(body.id)
            elif isinstance(body, LearningPutRequest):
                given.extend(item.id for item in body.learnings if item.id is not None)
        self.found: dict[str, Tier] = tiers.locate(named) if named else {}
        # Client-given ids of new learnings are found nowhere; looking for them must not open every tier,
        # so only open tiers are checked for an id already used elsewhere.
        self.given: dict[str, Tier] = tiers.locate_open(given) if given else {}
        tiers.remember({lid: tier.name for lid, tier in (self.found | self.given).items()})

    def plan(self, op: str, body: BaseModel) -> dict[str, Part]:
        """The parts of one write request, keyed by tier name; raises Rejected if it cannot apply."""
        if isinstance(body, LearningPutRequest):
            return self._put(body)
        if isinstance(body, OutcomeRecordRequest):
            return self._outcome(body)
        if isinstance(body, RelationPutRequest):
            return self._relation(body)
        if isinstance(body, LearningDeleteRequest):
            return self._delete(body)
        if isinstance(body, StoreVectors):
            return {body.tier: EmbedPart(body.rows)} if self.tiers.get(body.tier, create=False) else {}
        if isinstance(body, InjectRecord):
            return self._inject(body)
        if isinstance(body, MaintainRequest):
            return self._maintain(body)
        if isinstance(body, RestoreRequest):
            return self._restore(body)
        if isinstance(body, PromoteRequest):
            return self._promote(body)
        if isinstance(body, ProposeRequest):
            return self._propose(body)
        if isinstance(body, ReviewDecideRequest):
            return self._decide(body)
        raise Rejected(ErrorCode.UNKNOWN_OP, f"{op} is not a write operation")

    def _put(self, body: LearningPutRequest) -> dict[str, Part]:
        ids = [item.id or uuid7() for item in body.learnings]
        if len(set(ids)) != len(ids):
            raise Rejected(ErrorCode.BAD_REQUEST, "learnings: the same id appears more than once in one request")
        parts: dict[str, PutPart] = {}
        for index, (lid, item) in enumerate(zip(ids, body.learnings, strict=True)):
            tier = body.tier or tier_for_scope(item.scope)
            holder = self.given.get(lid) if item.id is not None else None
            if holder is not None and holder.name != tier:
                raise Rejected(
                    ErrorCode.CONFLICT,
                    f"learnings.{index}.id: {lid} already exists in tier {holder.name!r}, not {tier!r}",
                )
            parts.setdefault(tier, PutPart([])).entries.append((index, lid, item))
        for tier in parts:
            self.tiers.get(tier, create=True)
        return dict(parts)

    def _outcome(self, body: OutcomeRecordRequest) -> dict[str, Part]:
        missing = list(dict.fromkeys(a.learning_id for a in body.attributions if a.learning_id not in self.found))
        if len(missing) == 1:
            raise not_found(missing[0])
        if missing:
            more = " ..." if len(missing) > 5 else ""
            raise Rejected(ErrorCode.NOT_FOUND, f"no learnings with ids {', '.join(missing[:5])}{more}")
        attributions = [(a.learning_id, a.outcome) for a in body.attributions]
        injected: set[str] = set()
        session: SessionClose | None = None
        if body.injection_id is not None:
            injection = self.injections.get(body.injection_id)
            if injection is None:
                raise Rejected(ErrorCode.NOT_FOUND, f"no injection with id {body.injection_id}")
            if injection.closed or body.injection_id in self.closing:
                raise already_closed(body.injection_id)
            # learnings deleted since they were injected are left out of the session's figures
            given = [lid for lid, _ in injection.learnings if lid in self.found]
            injected = set(given)
            said = {lid for lid, _ in attributions}
            implied = [lid for lid in given if lid not in said]
            attributions += [(lid, C.OUTCOME_IGNORED) for lid in implied]
            judged = [outcome for lid, outcome in attributions if lid in injected]
            result = SessionResult(
                success=bool(body.success),
                injected=len(given),
                helpful=judged.count(C.OUTCOME_HELPFUL),
                ignored=judged.count(C.OUTCOME_IGNORED),
                contradicted=judged.count(C.OUTCOME_CONTRADICTED),
                had_task=injection.had_task,
            )
            self.closing.add(body.injection_id)
            session = SessionClose(body.injection_id, updates(result) if body.success is not None else {}, len(implied))
        parts: dict[str, OutcomePart] = {}
        for lid, outcome in attributions:
            tier = self.found[lid].name
            parts.setdefault(tier, OutcomePart([])).attributions.append((lid, outcome, lid in injected))
        if session is not None:
            parts.setdefault(C.TIER_USER, OutcomePart([])).session = session
        return dict(parts)

    def _maintain(self, body: MaintainRequest) -> dict[str, Part]:
        now = body.now if body.now is not None else self.now
        parts: dict[str, MaintainPart] = {tier.name: plan_tier(tier, now) for tier in self.tiers.named(body.tiers)}
        purged = {name: part.purge for name, part in parts.items() if part.purge}
        for tier in self.tiers.opened():  # relations anywhere may point at a purged learning
            for name, ids in purged.items():
                if tier.name != name:
                    parts.setdefault(tier.name, MaintainPart(now, ran=False)).unlink.extend(ids)
        return dict(parts)

    def _restore(self, body: RestoreRequest) -> dict[str, Part]:
        tier = self.found.get(body.id)
        if tier is None:
            raise not_found(body.id)
        if not archived_ids(tier, [body.id]):
            raise Rejected(
                ErrorCode.CONFLICT, f"learning {body.id} is not archived; only archived ones can be restored"
            )
        return {tier.name: RestorePart(body.id)}

    def _curatable(self, learning_id: str, verb: str) -> tuple[Tier, list[Any]]:
        """The tier and stored row of a learning that may be promoted or proposed."""
        tier = self.found.get(learning_id)
        if tier is None:
            raise not_found(learning_id)
        if archived_ids(tier, [learning_id]):
            raise Rejected(ErrorCode.CONFLICT, f"learning {learning_id} is archived; restore it before you {verb} it")
        rows = tier.run(f"?[{JOINED_HEAD}] := id = $id, {JOINED_BODY}", {"id": learning_id})
        return tier, rows[0]

    def _promote(self, body: PromoteRequest) -> dict[str, Part]:
        tier, row = self._curatable(body.id, "promote")
        if not tier.name.startswith(C.TIER_PROJECT_PREFIX):
            raise Rejected(
                ErrorCode.CONFLICT,
                f"learning {body.id} is in tier {tier.name!r}; "
                "only project-tier learnings are promoted to the user tier",
            )
        stored = learning_wire(row, tier.name)
        source = {"type": "promoted", "from_tier": tier.name, "from_id": body.id, "original": stored["source"]}
        return {C.TIER_USER: PromotePart(uuid7(), _copy(stored, source), body.id)}

    def _propose(self, body: ProposeRequest) -> dict[str, Part]:
        tier, row = self._curatable(body.id, "propose")
        if tier.name.startswith(C.TIER_ENTERPRISE_PREFIX):
            raise Rejected(ErrorCode.CONFLICT, f"learning {body.id} is in an enterprise tier already ({tier.name!r})")
        stored = learning_wire(row, tier.name)
        flags = scan(
            {
                "description": stored["description"],
                "insight": stored["insight"],
                "pattern": json.dumps(stored["pattern"]),
                "note": body.note or "",
            }
        )
        review = [uuid7(), "pending", json.dumps(stored), tier.name, body.id, body.note, json.dumps(flags), self.now]
        review += [None, None, None, None]
        assert len(review) == len(REVIEW_COLS)
        target = C.TIER_ENTERPRISE_PREFIX + body.org
        self.tiers.get(target, create=True)
        return {target: ProposePart(review)}

    def _decide(self, body: ReviewDecideRequest) -> dict[str, Part]:
        target = C.TIER_ENTERPRISE_PREFIX + body.org
        tier = self.tiers.get(target, create=False)
        if tier is None:
            raise Rejected(ErrorCode.NOT_FOUND, f"organisation {body.org!r} has no enterprise tier, so no reviews")
        rows = tier.run(
            "?[status, learning_json] := *pending_reviews{review_id, status, learning_json}, review_id = $id",
            {"id": body.review_id},
        )
        if not rows:
            raise Rejected(ErrorCode.NOT_FOUND, f"no review {body.review_id} for organisation {body.org!r}")
        status, snapshot = rows[0]
        if status != "pending" or body.review_id in self.deciding:
            raise Rejected(ErrorCode.CONFLICT, f"review {body.review_id} was already decided ({status})")
        self.deciding.add(body.review_id)
        part = DecidePart(body.review_id, body.decision, body.curator, body.reason, snapshot)
        if body.decision == "approve":
            stored = json.loads(snapshot)
            source = {
                "type": "enterprise_curated",
                "review_id": body.review_id,
                "curator": body.curator,
                "from_tier": stored["tier"],
                "from_id": stored["id"],
            }
            part.learning_id, part.item = uuid7(), _copy(stored, source)
        return {target: part}

    def _inject(self, body: InjectRecord) -> dict[str, Part]:
        parts: dict[str, InjectPart] = {}
        for lid, tier in body.learnings:
            parts.setdefault(tier, InjectPart([])).learning_ids.append(lid)
        record = [
            body.injection_id,
            body.session_id,
            self.now,
            json.dumps(body.learnings),
            body.had_task,
            json.dumps(body.params),
            None,
        ]
        assert len(record) == len(INJECTION_COLS)
        parts.setdefault(C.TIER_USER, InjectPart([])).record = record
        for part in parts.values():
            part.reply = body.reply
        return dict(parts)

    def _relation(self, body: RelationPutRequest) -> dict[str, Part]:
        if body.from_id == body.to_id:
            raise Rejected(ErrorCode.BAD_REQUEST, "a learning cannot be related to itself (from_id == to_id)")
        for lid in (body.from_id, body.to_id):
            if lid not in self.found:
                raise not_found(lid)
        part = RelationPart(body.from_id, body.relation_type, body.to_id, body.weight)
        home, other = self.found[body.from_id], self.found[body.to_id]
        parts: dict[str, Part] = {home.name: part}
        key = (body.from_id, body.relation_type, body.to_id)
        if body.relation_type == C.RELATION_SUPERSEDES and key not in self.superseding and not _stored(home, key):
            # a new supersedes relation lowers the older learning's confidence, once
            self.superseding.add(key)
            if other.name == home.name:
                part.demote = True
            else:
                parts[other.name] = RelationPart(*key, body.weight, store=False, demote=True)
        return parts

    def _delete(self, body: LearningDeleteRequest) -> dict[str, Part]:
        owner = self.found.get(body.id)
        # Every open tier may hold relations pointing at the learning; each drops them in the same batch.
        parts: dict[str, Part] = {t.name: DeletePart(body.id, owner=False) for t in self.tiers.opened()}
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
        return {
            "applied": sum(int(r.get("applied", 0)) for r in replies),
            "ignored": sum(int(r.get("ignored", 0)) for r in replies),
        }
    if op == C.OP_INJECT_PREPARE:
        assert isinstance(body, InjectRecord)
        return body.reply
    if op == C.OP_MAINTAIN:
        tiers = sorted(replies, key=lambda r: str(r["tier"]))
        return {key: sum(int(r[key]) for r in tiers) for key in ("decayed", "archived", "purged")} | {"tiers": tiers}
    if op in (C.OP_LEARNING_RESTORE, C.OP_LEARNING_PROMOTE, C.OP_LEARNING_PROPOSE, C.OP_REVIEW_DECIDE):
        return replies[0]
    if op == C.OP_LEARNING_DELETE:
        return {"deleted": any(r.get("deleted", False) for r in replies)}
    return {}
