"""Turning a validated write request into per-tier parts.

Planning runs on the writer thread just before the batch commits, so the tiers it consults cannot change
under it. It rejects what can be known to fail (unknown learning ids, an id already used in another tier)
before anything is written. Each write operation's entry in `ops.py` names its plan method here (the curation
ops' are `curating.py`'s) and says which ids the batch must look up first, so that one query per tier serves the
whole batch.
"""

from __future__ import annotations

from groove.coordinator.board.directory import Boards
from groove.coordinator.errors import Rejected, already_closed, not_found
from groove.coordinator.loop.adaptive import SessionResult, updates
from groove.coordinator.loop.injection import InjectRecord
from groove.coordinator.loop.lifecycle import MaintainPart, RestorePart, plan_tier
from groove.coordinator.store.relations import INJECTIONS
from groove.coordinator.store.tiers import Tier
from groove.coordinator.store.tierset import TierSet
from groove.coordinator.write.bodies import ImportRecord, StoreRelated, StoreVectors
from groove.coordinator.write.curating import CurationPlans, Parts
from groove.coordinator.write.parts import (
    DeletePart,
    EmbedPart,
    ImportPart,
    InjectPart,
    OutcomePart,
    PutPart,
    Rating,
    RelatedPart,
    RelationPart,
    SessionClose,
)
from groove.coordinator.write.sessions import load_injections, open_injections, session_ratings
from groove.protocol import constants as C
from groove.protocol.errors import ErrorCode
from groove.protocol.ids import uuid7
from groove.protocol.loop import ArchiveRequest, InjectionRecordRequest, MaintainRequest, RestoreRequest
from groove.protocol.models import (
    LearningDeleteRequest,
    LearningPutRequest,
    OutcomeRecordRequest,
    RelationPutRequest,
)
from groove.protocol.scopes import tier_for_scope


def _stored(tier: Tier, key: tuple[str, str, str]) -> bool:
    rows = tier.run(
        "?[from_id] := *learning_relations{from_id, relation_type, to_id}, from_id = $f, relation_type = $t, "
        "to_id = $o",
        {"f": key[0], "t": key[1], "o": key[2]},
    )
    return bool(rows)


class Planner(CurationPlans):
    """Plans the requests of one batch. Every learning the batch names (`finds`), every client-chosen id of a new
    learning (`claims`) and every injection it closes (`closes`) is looked up once, up front."""

    def __init__(
        self,
        tiers: TierSet,
        now: int,
        finds: list[str],
        claims: list[str],
        closes: list[str],
        boards: Boards | None = None,
        sessions: list[str] | None = None,
    ) -> None:
        self.tiers = tiers
        self.now = now
        self.boards = boards if boards is not None else Boards(tiers)  # the batcher's, kept between batches
        # outcomes recorded during a session count for the session's open injection (PROTOCOL.md, outcome.record)
        self.open_of = open_injections(tiers.open_user(), sessions) if sessions else {}
        loads = closes + list(self.open_of.values())
        self.injections = load_injections(tiers.open_user(), loads) if loads else {}
        self.closing: set[str] = set()  # injections an outcome of this batch closes
        self.superseding: set[tuple[str, str, str]] = set()  # supersedes relations this batch adds
        self.deciding: set[str] = set()  # reviews decided in this batch
        named = finds + [lid for injected in self.injections.values() for lid, _ in injected.learnings]
        self.found: dict[str, Tier] = tiers.locate(named) if named else {}
        # Client-given ids of new learnings are found nowhere; looking for them must not open every tier,
        # so only open tiers are checked for an id already used elsewhere.
        self.given: dict[str, Tier] = tiers.locate_open(claims) if claims else {}
        tiers.remember({lid: tier.name for lid, tier in (self.found | self.given).items()})
        held = {self.found[lid] for i in self.injections.values() for lid, _ in i.learnings if lid in self.found}
        open_ids = [iid for iid, injection in self.injections.items() if not injection.closed]
        # injection id -> {learning id: outcome}: what each open session has rated, this batch's ratings included
        self.rated = session_ratings(sorted(held, key=lambda t: t.name), open_ids) if open_ids and held else {}

    def put(self, body: LearningPutRequest) -> Parts:
        """`learning.put`: each learning to its tier."""
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

    def outcome(self, body: OutcomeRecordRequest) -> Parts:
        """`outcome.record`: attributions to each learning's tier; a closed session's side to the user tier.

        `body.elsewhere` (a cluster): the session's attributions of learnings another coordinator owns; they
        are applied there and only counted here, in the figures of the session.
        """
        missing = list(dict.fromkeys(a.learning_id for a in body.attributions if a.learning_id not in self.found))
        if len(missing) == 1:
            raise not_found(missing[0])
        if missing:
            more = " ..." if len(missing) > 5 else ""
            raise Rejected(ErrorCode.NOT_FOUND, f"no learnings with ids {', '.join(missing[:5])}{more}")
        attributions: list[tuple[str, str, bool]] = [(a.learning_id, a.outcome, a.injected) for a in body.attributions]
        if body.injection_id is not None:
            ratings, session, before = self._close(body, attributions)
        else:
            ratings, session = self._during(body.session_id, attributions), None
            before = len(attributions) - len(ratings)
        parts: dict[str, OutcomePart] = {}
        for rating in ratings:
            parts.setdefault(self.found[rating.learning_id].name, OutcomePart([])).ratings.append(rating)
        if session is not None or before:
            user = parts.setdefault(C.TIER_USER, OutcomePart([]))
            user.session, user.rated_before = session, before
        return dict(parts)

    def _during(self, session_id: str | None, attributions: list[tuple[str, str, bool]]) -> list[Rating]:
        """Ratings outside an injection's close. A learning that the session's open injection holds is that
        session's rating: counted once (the first), not as one more injection; any other learning is a use of
        its own (`injected` says whether a cluster's other coordinator counted that use)."""
        injection_id = self.open_of.get(session_id or "", "")
        injection = self.injections.get(injection_id) if injection_id not in self.closing else None
        held = {lid for lid, _ in injection.learnings} if injection is not None else set()
        rated = self.rated.setdefault(injection_id, {}) if held else {}
        ratings = []
        for lid, outcome, injected in attributions:
            if lid not in held:
                ratings.append(Rating(lid, outcome, injected, ""))
            elif lid not in rated:
                rated[lid] = outcome
                ratings.append(Rating(lid, outcome, True, injection_id))
        return ratings

    def _close(
        self, body: OutcomeRecordRequest, attributions: list[tuple[str, str, bool]]
    ) -> tuple[list[Rating], SessionClose, int]:
        """An injection's close: its ratings, the session's system side, and how many attributions it names
        that the session rated already (not counted again)."""
        assert body.injection_id is not None  # the caller's branch
        injection = self.injections.get(body.injection_id)
        if injection is None:
            raise Rejected(ErrorCode.NOT_FOUND, f"no injection with id {body.injection_id}")
        if injection.closed or body.injection_id in self.closing:
            raise already_closed(body.injection_id)
        rated = self.rated.get(body.injection_id, {})
        elsewhere = {a.learning_id: a.outcome for a in body.elsewhere}
        # learnings deleted since they were injected are left out of the session's figures
        given = [lid for lid, _ in injection.learnings if lid in self.found or lid in elsewhere]
        injected = set(given)
        said = {lid for lid, _, _ in attributions} | set(elsewhere) | set(rated)
        implied = [lid for lid in given if lid not in said]
        fresh: list[tuple[str, str]] = []
        once = set(rated)  # a learning the injection gave counts once: its first rating, this close's or before
        for lid, outcome, _ in attributions:
            if lid in injected:
                if lid in once:
                    continue
                once.add(lid)
            fresh.append((lid, outcome))
        ratings = [Rating(lid, outcome, lid in injected, body.injection_id) for lid, outcome in fresh]
        ratings += [Rating(lid, C.OUTCOME_IGNORED, True, body.injection_id) for lid in implied]
        judged = [r.outcome for r in ratings if r.learning_id in injected]
        judged += [outcome for lid, outcome in (elsewhere | rated).items() if lid in injected]
        result = SessionResult(
            success=body.success,
            injected=len(given),
            helpful=judged.count(C.OUTCOME_HELPFUL),
            ignored=judged.count(C.OUTCOME_IGNORED),
            contradicted=judged.count(C.OUTCOME_CONTRADICTED),
            had_task=injection.had_task,
        )
        self.closing.add(body.injection_id)
        session = SessionClose(body.injection_id, updates(result), len(implied))
        return ratings, session, len(attributions) - len(fresh)

    def maintain(self, body: MaintainRequest) -> Parts:
        """`maintain`: each tier's run; every open tier drops relations to what another tier purges."""
        now = body.now if body.now is not None else self.now
        parts: dict[str, MaintainPart] = {tier.name: plan_tier(tier, now) for tier in self.tiers.named(body.tiers)}
        purged = {name: part.purge for name, part in parts.items() if part.purge}
        for tier in self.tiers.opened():  # relations anywhere may point at a purged learning
            for name, ids in purged.items():
                if tier.name != name:
                    parts.setdefault(tier.name, MaintainPart(now, ran=False)).unlink.extend(ids)
        return dict(parts)

    def restore(self, body: RestoreRequest) -> Parts:
        """`learning.restore`, in the learning's tier."""
        tier = self.found.get(body.id)
        if tier is None:
            raise not_found(body.id)
        if not tier.archived([body.id]):
            raise Rejected(
                ErrorCode.CONFLICT, f"learning {body.id} is not archived; only archived ones can be restored"
            )
        return {tier.name: RestorePart(body.id)}

    def archive(self, body: ArchiveRequest) -> Parts:
        """`learning.archive`, in the learning's tier: the lifecycle's archiving, without a maintenance run."""
        tier = self.found.get(body.id)
        if tier is None:
            raise not_found(body.id)
        if tier.archived([body.id]):
            raise Rejected(ErrorCode.CONFLICT, f"learning {body.id} is archived already")
        reason = body.reason or "archived by a curator"
        return {tier.name: MaintainPart(self.now, archive=[(body.id, reason)], ran=False)}

    def inject(self, body: InjectRecord) -> Parts:
        """`inject.prepare`'s choice: usage in each chosen learning's tier (but those another coordinator owns,
        which count it themselves), the record in the user tier."""
        parts: dict[str, InjectPart] = {}
        for lid, tier in body.learnings:
            if tier not in body.elsewhere:
                parts.setdefault(tier, InjectPart([])).learning_ids.append(lid)
        record = {
            "injection_id": body.injection_id,
            "session_id": body.session_id,
            "created_at": self.now,
            "learnings": body.learnings,
            "had_task": body.had_task,
            "params": body.params,
            "outcome_at": None,
        }
        parts.setdefault(C.TIER_USER, InjectPart([])).record = INJECTIONS.row(record)
        for part in parts.values():
            part.reply = body.reply
            if part.learning_ids and body.task_vector is not None:
                part.task = (body.injection_id, body.task_vector)
        return dict(parts)

    def record_injection(self, body: InjectionRecordRequest) -> Parts:
        """`injection.record`: an injection chosen on another coordinator, counted in these learnings' tiers."""
        parts: dict[str, InjectPart] = {}
        for lid in body.learning_ids:
            tier = self.found.get(lid)
            if tier is not None:  # one deleted since it was chosen is not counted
                parts.setdefault(tier.name, InjectPart([])).learning_ids.append(lid)
        return dict(parts)

    def relation(self, body: RelationPutRequest) -> Parts:
        """`relation.put`, in from_id's tier; a new `supersedes` also demotes to_id in its own."""
        if body.from_id == body.to_id:
            raise Rejected(ErrorCode.BAD_REQUEST, "a learning cannot be related to itself (from_id == to_id)")
        for lid in (body.from_id, body.to_id):
            if lid not in self.found:
                raise not_found(lid)
        part = RelationPart(body.from_id, body.relation_type, body.to_id, body.weight)
        home, other = self.found[body.from_id], self.found[body.to_id]
        parts: Parts = {home.name: part}
        key = (body.from_id, body.relation_type, body.to_id)
        if body.relation_type == C.RELATION_SUPERSEDES and key not in self.superseding and not _stored(home, key):
            # a new supersedes relation lowers the older learning's confidence, once
            self.superseding.add(key)
            if other.name == home.name:
                part.demote = True
            else:
                parts[other.name] = RelationPart(*key, body.weight, store=False, demote=True)
        return parts

    def delete(self, body: LearningDeleteRequest) -> Parts:
        """`learning.delete`: the owner drops the learning; every open tier drops relations pointing at it."""
        owner = self.found.get(body.id)
        parts: Parts = {t.name: DeletePart(body.id, owner=False) for t in self.tiers.opened()}
        if owner is not None:
            parts[owner.name] = DeletePart(body.id, owner=True)
        return parts

    def store_vectors(self, body: StoreVectors) -> Parts:
        """The embedding worker's vectors, if their tier is still there."""
        return {body.tier: EmbedPart(body.rows, body.notes)} if self.tiers.get(body.tier, create=False) else {}

    def store_related(self, body: StoreRelated) -> Parts:
        """The near-duplicate thread's relations, if their tier is still there."""
        return {body.tier: RelatedPart(body.pairs)} if self.tiers.get(body.tier, create=False) else {}

    def import_(self, body: ImportRecord) -> Parts:
        """`import`: each tier of the file gets the learnings no tier holds yet, and its relations."""
        parts: dict[str, ImportPart] = {}
        for exported in body.tiers:
            self.tiers.get(exported.tier, create=True)
            part = parts.setdefault(exported.tier, ImportPart([], [], 0))
            fresh = [item for item in exported.learnings if item.id not in self.found]
            part.learnings += fresh
            part.relations += exported.relations
            part.skipped += len(exported.learnings) - len(fresh)
        return dict(parts)
