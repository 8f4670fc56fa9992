"""`GrooveCluster`: one client over coordinators that partition the tiers among them (protocol/cluster.py).

Writes go to the coordinator that owns their tier. A `learning.put` whose learnings live in tiers of several
owners is split: one request per owner, each with its own request id, so each part is exactly once and
atomic on its coordinator, as a put is atomic per tier on one coordinator. Reads that span tiers fan out to
the owners concurrently and merge: a search's scores are comparable across coordinators (one model, one
scoring function, each learning scored on its own), so the merged list is what one coordinator holding every
tier would answer, unless the candidate pools bind (PROTOCOL.md, section 11). An injection is chosen by the
home from its own candidates and those the other owners offer; an outcome is closed by the home and applied
by each owner to its learnings. A stale map gets `WrongCoordinator` (its `owner` names the right one), never
a split tier.

A coordinator cut off from the client fails an injection or an outcome cleanly while the others' offers and
lookups are read, before anything is written. If it is cut off later, after the home wrote its part, its own
part (counting its learnings) is owed: the call returns the home's reply, and the part is sent again under
the same request id (so it is applied once) at the start of each later injection or outcome, or by `settle`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from groove.client.client import GrooveClient, attribution_maps
from groove.client.errors import GrooveError, GrooveTimeout, NotFound, RemoteError, RequestTooLarge
from groove.protocol import constants as C
from groove.protocol.cluster import ClusterMap
from groove.protocol.ids import uuid7
from groove.protocol.keys import CurveClient
from groove.protocol.loop import GivenLearning, InjectionGetReply, InjectPrepareReply, MaintainReply
from groove.protocol.models import (
    LearningListReply,
    LearningOut,
    LearningPutReply,
    OutcomeRecordReply,
    RelationOut,
)
from groove.protocol.scopes import tier_for_scope
from groove.protocol.search import SearchContext, SearchHit
from groove.protocol.stats import StatsReply

T = TypeVar("T")
log = logging.getLogger(__name__)
OwnerPart = Callable[[GrooveClient, str], Any]  # an owner's part of a write: (its client, a request id) -> reply


@dataclass
class Owed:
    """An owner's part of a write the home applied, not answered yet: resent under its request id."""

    coordinator: str
    what: str
    part: OwnerPart
    request_id: str


@dataclass
class CoordinatorStatus:
    """One coordinator of a cluster as `status` found it."""

    name: str
    endpoint: str
    home: bool  # owns the user tier and every enterprise tier
    prefixes: list[str]  # project roots the map gives it by prefix
    hashed: bool  # whether the other projects are spread over it
    ping_ms: float | None = None
    stats: StatsReply | None = None
    error: str | None = None  # why it did not answer


class GrooveCluster:
    """Clients of every coordinator in a cluster map, routing each call by tier. Not thread-safe: give each
    thread its own (a fan-out uses one thread per coordinator, each on that coordinator's own client)."""

    def __init__(self, cluster: ClusterMap | Path, timeout: float = 30.0, curve: CurveClient | None = None) -> None:
        self.map = cluster if isinstance(cluster, ClusterMap) else ClusterMap.load(cluster)
        self.clients = {
            name: GrooveClient(endpoint, timeout=timeout, curve=curve)
            for name, endpoint in self.map.coordinators.items()
        }
        self._pool = ThreadPoolExecutor(max_workers=len(self.clients), thread_name_prefix="groove-cluster")
        self.owed: list[Owed] = []  # owners' parts not applied yet (their coordinator did not answer)

    def __enter__(self) -> GrooveCluster:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Close every connection."""
        self._pool.shutdown()
        for client in self.clients.values():
            client.close()

    def client_for(self, tier: str) -> GrooveClient:
        """The client of the coordinator that owns `tier`."""
        return self.clients[self.map.owner(tier)]

    def fan_out(self, names: list[str], call: Callable[[str, GrooveClient], T]) -> dict[str, T]:
        """`call(name, client)` for each named coordinator at once; the answers by name (an error raised)."""
        futures = {name: self._pool.submit(call, name, self.clients[name]) for name in names}
        return {name: future.result() for name, future in futures.items()}

    # --- writes --------------------------------------------------------------------------------------

    def put_learnings(self, learnings: list[dict[str, Any]], tier: str | None = None) -> LearningPutReply:
        """Store learnings, each on its tier's owner (the tier follows from the scope unless `tier` names
        one); one request per owner, sent at once. Ids and `created` come back in the order given."""
        owners: dict[str, list[int]] = {}
        for index, learning in enumerate(learnings):
            where = tier or tier_for_scope(str(learning.get("scope", C.SCOPE_GLOBAL)))
            owners.setdefault(self.map.owner(where), []).append(index)
        replies = self.fan_out(
            list(owners), lambda name, client: client.put_learnings([learnings[i] for i in owners[name]], tier)
        )
        ids, created = [""] * len(learnings), [False] * len(learnings)
        for name, reply in replies.items():
            for index, lid, new in zip(owners[name], reply.ids, reply.created, strict=True):
                ids[index], created[index] = lid, new
        return LearningPutReply(ids=ids, created=created)

    def delete(self, learning_id: str) -> bool:
        """Delete a learning on whichever coordinator holds it (each drops its relations to it); False if none
        held it."""
        return any(self.fan_out(list(self.clients), lambda _, client: client.delete(learning_id)).values())

    def relate(self, from_id: str, relation_type: str, to_id: str, weight: float | None = None) -> None:
        """Store a relation on the owner of `from_id`'s tier (which must hold `to_id` too); raises NotFound."""
        self.client_for(self.get(from_id).tier).relate(from_id, relation_type, to_id, weight)

    def relations(
        self, learning_id: str, relation_type: str | None = None, direction: str = "both"
    ) -> list[RelationOut]:
        """Relations from and to one learning, from whichever coordinator holds it; raises NotFound."""
        found = self.fan_out(
            list(self.clients),
            lambda _, client: _or_none(lambda: client.relations(learning_id, relation_type, direction)),
        )
        held = [part for part in found.values() if part is not None]
        if not held:
            raise _nowhere(learning_id)
        return [r for part in held for r in part]

    def maintain(self, now: int | None = None, tiers: list[str] | None = None) -> MaintainReply:
        """Lifecycle maintenance on every coordinator, each over the tiers it owns (or those of `tiers`)."""
        wanted: dict[str, list[str] | None] = dict.fromkeys(self.clients)
        if tiers is not None:
            wanted = dict(self.map.by_owner(tiers))
        runs = self.fan_out(list(wanted), lambda name, client: client.maintain(now, wanted[name]))
        done = [t for run in runs.values() for t in run.tiers]
        return MaintainReply(
            decayed=sum(t.decayed for t in done),
            archived=sum(t.archived for t in done),
            purged=sum(t.purged for t in done),
            tiers=done,
        )

    # --- the learning loop: the home chooses and closes, each owner counts its own learnings ------------

    def inject(
        self,
        session_id: str,
        *,
        task: str | None = None,
        project: str | None = None,
        enterprise: str | None = None,
        budget: int | None = None,
        seed: int | None = None,
    ) -> InjectPrepareReply:
        """`GrooveClient.inject` over the cluster: the owners of the context's other tiers offer candidates,
        the home chooses and records the injection, and each owner counts its chosen learnings."""
        context = SearchContext(project=project, enterprise=enterprise)
        home = self.map.home
        away = {name: tiers for name, tiers in self.map.by_owner(context.tiers()).items() if name != home}
        where = {"project": project, "enterprise": enterprise}
        self.settle()
        offers = self.fan_out(list(away), lambda name, client: client.inject_candidates(away[name], task=task, **where))
        offered = list(offers.values())
        while True:
            try:
                reply = self.clients[home].inject(
                    session_id, task=task, budget=budget, seed=seed, elsewhere=offered, **where
                )
                break
            except RequestTooLarge:  # refused before sending: cut each offer to its better half and try again
                if all(len(o.candidates) < 2 for o in offered):
                    raise
                offered = [o.model_copy(update={"candidates": o.candidates[: len(o.candidates) // 2]}) for o in offered]
        chosen: dict[str, list[str]] = {}
        for item in reply.learnings:
            owner = self.map.owner(item.learning.tier)
            if owner != home:
                chosen.setdefault(owner, []).append(item.learning.id)
        self._owners_part(
            {name: _recorder(reply.injection_id, ids) for name, ids in chosen.items()}, "count an injection"
        )
        return reply

    def close_session(
        self,
        attributions: Sequence[tuple[str, str] | dict[str, Any]] = (),
        *,
        injection_id: str | None = None,
        success: bool | None = None,
        session_id: str | None = None,
    ) -> OutcomeRecordReply:
        """`GrooveClient.close_session` over the cluster: the home closes the injection, counting every
        attribution, then each other owner applies those of its learnings. A learning no coordinator holds is
        refused (NotFound) before anything is sent."""
        self.settle()
        home = self.map.home
        items = attribution_maps(attributions)
        given: dict[str, str] = {}  # learning id -> tier, of what the injection gave
        if injection_id is not None:
            given = {g.id: g.tier for g in self.clients[home].get_injection(injection_id).learnings}
        rated = {a["learning_id"] for a in items}
        # the tier of every rated learning, and which of the injection's learnings elsewhere still exist
        away_given = [lid for lid, tier in given.items() if self.map.owner(tier) != home]
        tier_of = self._locate([lid for lid in rated if lid not in given] + away_given)
        tier_of |= {lid: tier for lid, tier in given.items() if self.map.owner(tier) == home}
        lost = [lid for lid in rated if lid not in tier_of]
        if lost:
            raise _nowhere(lost[0])
        parts: dict[str, list[dict[str, Any]]] = {}
        for a in items:
            parts.setdefault(self.map.owner(tier_of[a["learning_id"]]), []).append(a)
        implied = [lid for lid in away_given if lid not in rated and lid in tier_of]
        for lid in implied:
            parts.setdefault(self.map.owner(tier_of[lid]), []).append({"learning_id": lid, "outcome": "ignored"})
        mine = parts.pop(home, [])
        applied = ignored = before = 0
        if injection_id is not None or mine:
            elsewhere = [a for name in parts for a in parts[name]] if injection_id is not None else []
            first = self.clients[home].close_session(
                mine, injection_id=injection_id, success=success, session_id=session_id, elsewhere=elsewhere
            )
            applied, ignored, before = first.applied, first.ignored + len(implied), first.rated_before
        replies = self._owners_part(
            {name: _closer([a | {"injected": a["learning_id"] in given} for a in part], session_id)
             for name, part in parts.items()},
            "apply outcomes",
        )  # fmt: skip
        applied += sum(r.applied for r in replies.values())  # what is owed is counted once applied
        before += sum(r.rated_before for r in replies.values())
        return OutcomeRecordReply(applied=applied, ignored=ignored, rated_before=before)

    def record_outcome(
        self, attributions: Sequence[tuple[str, str] | dict[str, Any]], session_id: str | None = None
    ) -> int:
        """Apply attributions, each on its learning's owner; returns how many applied."""
        return self.close_session(attributions, session_id=session_id).applied

    def get_injection(self, injection_id: str) -> InjectionGetReply:
        """`injection.get` from the home, each learning of another owner's tier read from that owner."""
        reply = self.clients[self.map.home].get_injection(injection_id)
        away: dict[str, list[GivenLearning]] = {}
        for given in reply.learnings:
            owner = self.map.owner(given.tier)
            if owner != self.map.home:
                away.setdefault(owner, []).append(given)
        found = self.fan_out(list(away), lambda name, client: [(g, _get_or_none(client, g.id)) for g in away[name]])
        for given, learning in (pair for pairs in found.values() for pair in pairs):
            given.learning = learning
        return reply

    # --- reads ---------------------------------------------------------------------------------------

    def search(self, text: str | None = None, **options: Any) -> list[SearchHit]:
        """`GrooveClient.search` over the owners of the tiers the context reads, merged best first."""
        context = SearchContext(project=options.get("project"), enterprise=options.get("enterprise"))
        names = list(self.map.by_owner(context.tiers()))
        found = self.fan_out(names, lambda _, client: client.search(text, **options))
        hits = sorted((h for part in found.values() for h in part), key=lambda h: (-h.score, h.learning.id))
        return hits[: options.get("limit") or C.DEFAULT_SEARCH_LIMIT]

    def get(self, learning_id: str) -> LearningOut:
        """One learning from whichever coordinator holds it; raises NotFound."""
        found = self.fan_out(list(self.clients), lambda _, client: _get_or_none(client, learning_id))
        for learning in found.values():
            if learning is not None:
                return learning
        raise _nowhere(learning_id)

    def list_learnings(
        self,
        scope_prefix: str | None = None,
        category: str | None = None,
        tier: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> LearningListReply:
        """One page of learnings in id order, from the tier's owner or merged from every coordinator (each
        asked for a page after the same cursor: the first `limit` of their union are the page)."""
        names = [self.map.owner(tier)] if tier is not None else list(self.clients)
        pages = self.fan_out(
            names, lambda _, client: client.list_learnings(scope_prefix, category, tier, limit, cursor)
        )
        merged = sorted((x for page in pages.values() for x in page.learnings), key=lambda x: x.id)
        page = merged[: limit or C.DEFAULT_LIST_LIMIT]
        more = len(merged) > len(page) or any(p.cursor is not None for p in pages.values())
        return LearningListReply(learnings=page, cursor=page[-1].id if more and page else None)

    def iter_learnings(self, tier: str | None = None, **filters: Any) -> Iterator[LearningOut]:
        """Every learning matching the filters: from the tier's owner, or from every coordinator in turn."""
        names = [self.map.owner(tier)] if tier is not None else list(self.clients)
        for name in names:
            yield from self.clients[name].iter_learnings(tier=tier, **filters)

    def status(self) -> list[CoordinatorStatus]:
        """Each coordinator: how long a `ping` took and its `stats` (its tiers, its queue), or why not."""
        return list(self.fan_out(list(self.clients), self._status).values())

    def _status(self, name: str, client: GrooveClient) -> CoordinatorStatus:
        owned = sorted(t for t in self.map.projects if self.map.projects[t] == name)
        hashed = name in (self.map.spread or self.map.coordinators)
        status = CoordinatorStatus(name, self.map.coordinators[name], name == self.map.home, owned, hashed)
        try:
            began = time.perf_counter()
            client.ping()
            status.ping_ms = (time.perf_counter() - began) * 1000
            status.stats = client.stats()
        except GrooveError as exc:
            status.error = str(exc)
        return status

    def _owners_part(self, parts: dict[str, OwnerPart], what: str) -> dict[str, Any]:
        """Send each owner its part of a write the home applied, under a request id fixed now; the replies of
        those that answered. One that did not answer owes its part (see `settle`)."""
        ids = {name: uuid7() for name in parts}
        futures = {name: self._pool.submit(part, self.clients[name], ids[name]) for name, part in parts.items()}
        replies = {}
        for name, future in futures.items():
            try:
                replies[name] = future.result()
            except GrooveError as exc:
                if not _unanswered(exc):
                    raise
                self.owed.append(Owed(name, what, parts[name], ids[name]))
                log.warning("coordinator %s owes its part (%s), resent once it answers: %s", name, what, exc)
        return replies

    def settle(self) -> list[Owed]:
        """Send the owed parts again, each under its request id (applied once, however often sent); returns
        those still owed. A coordinator that leaves one unanswered is not sent its others until the next round,
        so a call waits at most one time-out per coordinator down."""
        still, unanswered = [], set()
        for owed in self.owed:
            if owed.coordinator in unanswered:  # it did not answer this round: its other parts would wait as long
                still.append(owed)
                continue
            try:
                owed.part(self.clients[owed.coordinator], owed.request_id)
            except GrooveError as exc:
                if _unanswered(exc):
                    still.append(owed)
                    unanswered.add(owed.coordinator)
                else:  # refused for good (its learnings deleted since, say): resending cannot help
                    log.warning("coordinator %s refused its owed part (%s): %s", owed.coordinator, owed.what, exc)
        self.owed = still
        return still

    def _locate(self, ids: list[str]) -> dict[str, str]:
        """The tier of each of these learnings that some coordinator holds."""
        if not ids:
            return {}
        found = self.fan_out(
            list(self.clients), lambda _, client: [x for lid in ids if (x := _get_or_none(client, lid)) is not None]
        )
        return {x.id: x.tier for held in found.values() for x in held}


def _unanswered(exc: GrooveError) -> bool:
    """Whether the coordinator may not have applied the request and may yet: no reply before the deadline,
    or only retryable errors (`busy`, `internal`) until it."""
    return isinstance(exc, GrooveTimeout) or (isinstance(exc, RemoteError) and exc.retryable)


def _recorder(injection_id: str, learning_ids: list[str]) -> OwnerPart:
    return lambda client, request_id: client.record_injection(injection_id, learning_ids, request_id=request_id)


def _closer(attributions: list[dict[str, Any]], session_id: str | None) -> OwnerPart:
    return lambda client, request_id: client.close_session(attributions, session_id=session_id, request_id=request_id)


def _nowhere(learning_id: str) -> NotFound:
    return NotFound("not_found", f"no coordinator of the cluster holds learning {learning_id}")


def _get_or_none(client: GrooveClient, learning_id: str) -> LearningOut | None:
    return _or_none(lambda: client.get(learning_id))


def _or_none(call: Callable[[], T]) -> T | None:
    """What `call` returns, or None where the coordinator holds no such thing."""
    try:
        return call()
    except NotFound:
        return None
