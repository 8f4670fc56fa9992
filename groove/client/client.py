"""`GrooveClient`: one method per coordinator operation, returning the protocol's typed reply models.

The client is light on purpose (no torch, no sentence-transformers): agents import it, the coordinator
does the heavy work.
"""

from __future__ import annotations

import os
import socket
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import zmq

from groove.client.board import BoardCalls, clean
from groove.client.calls import Call, Steps, SyncRunner, operation
from groove.client.transport import Result, Transport
from groove.protocol import constants as C
from groove.protocol.boardrecords import Nudge
from groove.protocol.curation import (
    PromoteReply,
    ProposeReply,
    ReviewDecideReply,
    ReviewListReply,
    ReviewOut,
)
from groove.protocol.keys import CurveClient
from groove.protocol.loop import (
    InjectCandidatesReply,
    InjectionGetReply,
    InjectionListReply,
    InjectionRecordReply,
    InjectPrepareReply,
    LearningHistoryReply,
    MaintainReply,
    Offer,
    ParamOut,
    ParamsListReply,
)
from groove.protocol.models import (
    AgentOut,
    AgentsListReply,
    LearningGetReply,
    LearningListReply,
    LearningOut,
    LearningPutReply,
    OutcomeRecordReply,
    PingReply,
    RelationListReply,
    RelationOut,
)
from groove.protocol.ops import OPS
from groove.protocol.portability import BackupReply, ExportReply, ImportReply
from groove.protocol.search import RebuildReply, SearchHit, SearchReply
from groove.protocol.stats import StatsReply


class LearningCalls:
    """One method per learning, loop, curation and search operation, written once as steps (`calls.py`) for
    both clients; PROTOCOL.md says what each does and refuses."""

    # --- control -------------------------------------------------------------------------------------

    @operation
    def ping(self, timeout: float | None = None) -> Steps[PingReply]:
        """The coordinator's version and uptime."""
        return PingReply.model_validate((yield Call(C.OP_PING, {}, timeout)))

    @operation
    def hello(
        self,
        agent_id: str,
        role: str = "agent",
        pid: int | None = None,
        host: str | None = None,
        status: str | None = None,
        task_id: str | None = None,
    ) -> Steps[None]:
        """Register this process in the coordinator's agent registry (with what it is doing, if given)."""
        body = {
            "agent_id": agent_id,
            "role": role,
            "pid": os.getpid() if pid is None else pid,
            "host": host or socket.gethostname(),
        }
        yield Call(C.OP_HELLO, body | clean(status=status, task_id=task_id))

    @operation
    def heartbeat(self, agent_id: str, status: str | None = None, task_id: str | None = None) -> Steps[None]:
        """Tell the coordinator `agent_id` is alive (and what it is doing: a status without a task means none);
        raises NotFound if it has not said `hello` (say it again)."""
        yield Call(C.OP_HEARTBEAT, {"agent_id": agent_id} | clean(status=status, task_id=task_id))

    @operation
    def stats(self) -> Steps[StatsReply]:
        """The coordinator's counters and recent performance."""
        return StatsReply.model_validate((yield Call(C.OP_STATS)))

    @operation
    def agents(self, state: str | None = None) -> Steps[list[AgentOut]]:
        """The agents that said `hello` (or those `alive` or `gone`), most recently seen first."""
        return AgentsListReply.model_validate((yield Call(C.OP_AGENTS_LIST, clean(state=state)))).agents

    # --- learnings -----------------------------------------------------------------------------------

    @operation
    def put_learnings(self, learnings: list[dict[str, Any]], tier: str | None = None) -> Steps[LearningPutReply]:
        """Store learnings (maps of the protocol's learning fields); returns their ids and which were new."""
        return LearningPutReply.model_validate((yield Call(C.OP_LEARNING_PUT, clean(learnings=learnings, tier=tier))))

    @operation
    def learn(
        self,
        scope: str,
        category: str,
        description: str,
        insight: str,
        *,
        confidence: float | None = None,
        pattern: Any = None,
        source: dict[str, Any] | None = None,
        id: str | None = None,
        tier: str | None = None,
    ) -> Steps[str]:
        """Store one learning; returns its id."""
        learning = clean(
            id=id,
            scope=scope,
            category=category,
            description=description,
            insight=insight,
            confidence=confidence,
            pattern=pattern,
            source=source,
        )
        reply = yield from LearningCalls.put_learnings.steps(self, [learning], tier)
        return reply.ids[0]

    @operation
    def get(self, learning_id: str) -> Steps[LearningOut]:
        """One learning, from whichever tier holds it; raises NotFound."""
        return LearningGetReply.model_validate((yield Call(C.OP_LEARNING_GET, {"id": learning_id}))).learning

    @operation
    def list_learnings(
        self,
        scope_prefix: str | None = None,
        category: str | None = None,
        tier: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Steps[LearningListReply]:
        """One page of learnings in id order; pass the reply's cursor back for the next page."""
        body = clean(scope_prefix=scope_prefix, category=category, tier=tier, limit=limit, cursor=cursor)
        return LearningListReply.model_validate((yield Call(C.OP_LEARNING_LIST, body)))

    @operation
    def delete(self, learning_id: str) -> Steps[bool]:
        """Delete a learning with its usage and relations; False if there was none."""
        return bool((yield Call(C.OP_LEARNING_DELETE, {"id": learning_id}))["deleted"])

    # --- outcomes and relations ----------------------------------------------------------------------

    @operation
    def record_outcome(
        self, attributions: Sequence[tuple[str, str] | dict[str, str]], session_id: str | None = None
    ) -> Steps[int]:
        """Apply (learning id, "helpful"|"ignored"|"contradicted") attributions; returns how many applied."""
        reply = yield from LearningCalls.close_session.steps(self, attributions, session_id=session_id)
        return reply.applied

    @operation
    def close_session(
        self,
        attributions: Sequence[tuple[str, str] | dict[str, Any]] = (),
        *,
        injection_id: str | None = None,
        success: bool | None = None,
        session_id: str | None = None,
        elsewhere: Sequence[dict[str, Any]] = (),
        request_id: str | None = None,
    ) -> Steps[OutcomeRecordReply]:
        """`outcome.record` in full: attributions, plus the injection they close and whether the session
        succeeded (injected learnings left unattributed count as ignored; `success` updates the system's
        adaptive parameters). `elsewhere`: attributions other coordinators of a cluster apply, counted here.
        `request_id`: as for `call`."""
        items = attribution_maps(attributions)
        body = clean(
            attributions=items,
            session_id=session_id,
            injection_id=injection_id,
            success=success,
            elsewhere=list(elsewhere) or None,
        )
        return OutcomeRecordReply.model_validate((yield Call(C.OP_OUTCOME_RECORD, body, request_id=request_id)))

    # --- the learning loop -----------------------------------------------------------------------------

    @operation
    def inject(
        self,
        session_id: str,
        *,
        task: str | None = None,
        project: str | None = None,
        enterprise: str | None = None,
        budget: int | None = None,
        seed: int | None = None,
        elsewhere: Sequence[Offer] = (),
    ) -> Steps[InjectPrepareReply]:
        """`inject.prepare`: the learnings for a new session, recorded as given to it, and their block.
        `elsewhere`: what the owners of the context's other tiers offered (a cluster's home chooses)."""
        context = clean(project=project, enterprise=enterprise)
        offers = [offer.model_dump() for offer in elsewhere] or None
        body = clean(
            session_id=session_id, task=task, context=context or None, budget=budget, seed=seed, elsewhere=offers
        )
        return InjectPrepareReply.model_validate((yield Call(C.OP_INJECT_PREPARE, body)))

    @operation
    def inject_candidates(
        self, tiers: list[str], *, task: str | None = None, project: str | None = None, enterprise: str | None = None
    ) -> Steps[Offer]:
        """`inject.candidates`: what these tiers (this coordinator owns them) offer a session's injection."""
        context = clean(project=project, enterprise=enterprise)
        body = clean(tiers=tiers, task=task, context=context or None)
        return InjectCandidatesReply.model_validate((yield Call(C.OP_INJECT_CANDIDATES, body))).offer

    @operation
    def record_injection(self, injection_id: str, learning_ids: list[str], request_id: str | None = None) -> Steps[int]:
        """`injection.record`: count an injection chosen on another coordinator in these learnings' usage
        (`request_id`: as for `call`)."""
        body = {"injection_id": injection_id, "learning_ids": learning_ids}
        reply = yield Call(C.OP_INJECTION_RECORD, body, request_id=request_id)
        return InjectionRecordReply.model_validate(reply).counted

    @operation
    def get_injection(self, injection_id: str) -> Steps[InjectionGetReply]:
        """What a session was given (each learning as it is now) and whether its outcome was recorded."""
        return InjectionGetReply.model_validate((yield Call(C.OP_INJECTION_GET, {"injection_id": injection_id})))

    @operation
    def injections(self, limit: int | None = None, before: str | None = None) -> Steps[InjectionListReply]:
        """The newest injections (older than `before`), each with how its learnings turned out."""
        body = {k: v for k, v in (("limit", limit), ("before", before)) if v is not None}
        return InjectionListReply.model_validate((yield Call(C.OP_INJECTION_LIST, body)))

    @operation
    def history(self, learning_id: str, limit: int | None = None) -> Steps[LearningHistoryReply]:
        """A learning's outcomes with its confidence after each, and the sessions it was given to."""
        body: dict[str, Any] = {"id": learning_id} | ({} if limit is None else {"limit": limit})
        return LearningHistoryReply.model_validate((yield Call(C.OP_LEARNING_HISTORY, body)))

    @operation
    def maintain(self, now: int | None = None, tiers: list[str] | None = None) -> Steps[MaintainReply]:
        """Run lifecycle maintenance (decay, archive, purge) now, or as if at `now` (milliseconds)."""
        return MaintainReply.model_validate((yield Call(C.OP_MAINTAIN, clean(now=now, tiers=tiers), timeout=600)))

    @operation
    def restore(self, learning_id: str) -> Steps[None]:
        """Bring an archived learning back into search and injection."""
        yield Call(C.OP_LEARNING_RESTORE, {"id": learning_id})

    # --- promotion and curation ------------------------------------------------------------------------

    @operation
    def archive(self, learning_id: str, reason: str | None = None) -> Steps[None]:
        """Take a learning out of search and injection now (`restore` brings it back)."""
        yield Call(C.OP_LEARNING_ARCHIVE, clean(id=learning_id, reason=reason))

    @operation
    def promote(self, learning_id: str) -> Steps[PromoteReply]:
        """Copy a project-tier learning into the user tier (with a derived_from relation to it)."""
        return PromoteReply.model_validate((yield Call(C.OP_LEARNING_PROMOTE, {"id": learning_id})))

    @operation
    def propose(self, learning_id: str, org: str, note: str | None = None) -> Steps[ProposeReply]:
        """Queue a learning for an organisation's curators; the reply lists what the pre-filter flagged."""
        body = clean(id=learning_id, org=org, note=note)
        return ProposeReply.model_validate((yield Call(C.OP_LEARNING_PROPOSE, body)))

    @operation
    def reviews(self, org: str, status: str | None = "pending", limit: int | None = None) -> Steps[list[ReviewOut]]:
        """An organisation's proposals with this status (None: all), oldest first."""
        body = {"org": org, "status": status} | clean(limit=limit)
        return ReviewListReply.model_validate((yield Call(C.OP_REVIEW_LIST, body))).reviews

    @operation
    def decide(
        self, org: str, review_id: str, decision: str, curator: str, reason: str | None = None
    ) -> Steps[ReviewDecideReply]:
        """Approve (an enterprise-tier learning is made) or reject (with a reason) a proposal."""
        body = clean(org=org, review_id=review_id, decision=decision, curator=curator, reason=reason)
        return ReviewDecideReply.model_validate((yield Call(C.OP_REVIEW_DECIDE, body)))

    @operation
    def params(self) -> Steps[list[ParamOut]]:
        """The system's adaptive parameters."""
        return ParamsListReply.model_validate((yield Call(C.OP_PARAMS_LIST, {}))).params

    @operation
    def relate(self, from_id: str, relation_type: str, to_id: str, weight: float | None = None) -> Steps[None]:
        """Store `from_id --relation_type--> to_id`."""
        yield Call(C.OP_RELATION_PUT, clean(from_id=from_id, relation_type=relation_type, to_id=to_id, weight=weight))

    # --- backup and portability (admin; paths are on the coordinator's host) -----------------------------

    @operation
    def backup(self, directory: str, timeout: float = 3600.0) -> Steps[BackupReply]:
        """A consistent snapshot of every tier into `directory` (new or empty, absolute, on the coordinator's
        host). Sent once: a long backup is not resent while it runs."""
        body = yield Call(C.OP_BACKUP, {"directory": directory}, timeout=timeout, attempt_timeout=timeout)
        return BackupReply.model_validate(body)

    @operation
    def export(self, path: str, tiers: list[str] | None = None, timeout: float = 3600.0) -> Steps[ExportReply]:
        """Every learning and relation (of `tiers`, default all) as a JSON file at `path` on the coordinator's host."""
        body = yield Call(C.OP_EXPORT, clean(path=path, tiers=tiers), timeout=timeout, attempt_timeout=timeout)
        return ExportReply.model_validate(body)

    @operation
    def import_file(self, path: str, timeout: float = 3600.0) -> Steps[ImportReply]:
        """Add an export file's learnings and relations (ids that exist are skipped); returns the counts."""
        body = yield Call(C.OP_IMPORT, {"path": path}, timeout=timeout, attempt_timeout=timeout)
        return ImportReply.model_validate(body)

    # --- search ---------------------------------------------------------------------------------------

    @operation
    def search(
        self,
        text: str | None = None,
        *,
        vector: list[float] | None = None,
        limit: int | None = None,
        project: str | None = None,
        enterprise: str | None = None,
        mode: str | None = None,
        scope_prefix: str | None = None,
        category: str | None = None,
        since: int | None = None,
        until: int | None = None,
        min_confidence: float | None = None,
        depth: int | None = None,
        include_superseded: bool | None = None,
        include_archived: bool | None = None,
    ) -> Steps[list[SearchHit]]:
        """Learnings by meaning and words, best first; see PROTOCOL.md `search` for each field."""
        context = clean(project=project, enterprise=enterprise)
        body = clean(
            text=text,
            vector=vector,
            limit=limit,
            mode=mode,
            context=context or None,
            scope_prefix=scope_prefix,
            category=category,
            since=since,
            until=until,
            min_confidence=min_confidence,
            depth=depth,
            include_superseded=include_superseded,
            include_archived=include_archived,
        )
        return SearchReply.model_validate((yield Call(C.OP_SEARCH, body))).results

    @operation
    def reindex(self, tiers: list[str] | None = None) -> Steps[RebuildReply]:
        """Rebuild the keyword and vector indexes from stored data (default: every tier)."""
        return RebuildReply.model_validate((yield Call(C.OP_REINDEX, clean(tiers=tiers), timeout=600)))

    @operation
    def reembed(self, tiers: list[str] | None = None) -> Steps[RebuildReply]:
        """Queue every learning for a fresh embedding (default: every tier)."""
        return RebuildReply.model_validate((yield Call(C.OP_REEMBED, clean(tiers=tiers), timeout=600)))

    @operation
    def relations(
        self, learning_id: str, relation_type: str | None = None, direction: str = "both"
    ) -> Steps[list[RelationOut]]:
        """Relations from and/or to one learning."""
        body = clean(id=learning_id, relation_type=relation_type, direction=direction)
        return RelationListReply.model_validate((yield Call(C.OP_RELATION_LIST, body))).relations


class GrooveClient(LearningCalls, BoardCalls, SyncRunner):
    """A connection to a coordinator. Not thread-safe: give each thread its own client.

    `timeout` is each call's deadline in seconds, across every resend; `attempt_timeout` is how long one
    attempt waits before the request is resent with the same id (doubling each time). `curve` holds the
    keys for a coordinator started with `--curve` (`CurveClient.load(server_key, client_secret_file)`).
    """

    def __init__(
        self,
        endpoint: str = "tcp://127.0.0.1:5555",
        timeout: float = 30.0,
        attempt_timeout: float = 2.0,
        context: zmq.Context[zmq.Socket[bytes]] | None = None,
        curve: CurveClient | None = None,
        absent_after: float | None = None,
    ) -> None:
        """`absent_after`: see Transport (fail fast when nothing listens at the endpoint)."""
        self.transport = Transport(endpoint, timeout, attempt_timeout, context, curve, absent_after)

    def __enter__(self) -> GrooveClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection."""
        self.transport.close()

    def call(  # one request: what every operation's steps are run with
        self,
        op: str,
        body: dict[str, Any] | None = None,
        timeout: float | None = None,
        attempt_timeout: float | None = None,
        request_id: str | None = None,
    ) -> dict[str, Any]:
        """Any operation by name, with its body as a map; returns the reply body as a map. `request_id`: an id
        chosen before, so a write sent again under it is applied once."""
        return self.transport.call(op, body or {}, timeout, attempt_timeout, request_id)

    def call_many(
        self, calls: Iterable[tuple[str, dict[str, Any]]], window: int = 16, timeout: float | None = None
    ) -> list[Result]:
        """Pipelined mode: up to `window` requests in flight, results in request order (errors included)."""
        return self.transport.call_many(calls, window, timeout)

    @staticmethod
    def prepare(*ops: str) -> None:
        """Build the reply validators of these operations now (all of them, about 35 ms, if none is named).
        Otherwise each is built at its operation's first reply: a process's first call then takes about 20 ms
        longer on an idle core, and hundreds of milliseconds when a swarm of workers starts at once on a few
        cores. A worker that must answer promptly from its first call prepares before it starts. ValueError
        names an unknown operation."""
        unknown = sorted(set(ops) - set(OPS))
        if unknown:
            raise ValueError(f"unknown operation {', '.join(map(repr, unknown))}")
        for op in ops or OPS:
            reply = OPS[op].reply
            if not reply.__pydantic_complete__:  # its build deferred (`defer_build`), not done yet
                reply.model_rebuild(force=True)

    def iter_learnings(
        self,
        scope_prefix: str | None = None,
        category: str | None = None,
        tier: str | None = None,
        page: int = C.MAX_LIST_LIMIT,
    ) -> Iterator[LearningOut]:
        """Every learning matching the filters, fetched page by page."""
        cursor: str | None = None
        while True:
            reply = self.list_learnings(scope_prefix, category, tier, page, cursor)
            yield from reply.learnings
            if reply.cursor is None:
                return
            cursor = reply.cursor

    def pushed_nudges(self, wait: float = 0.0) -> list[Nudge]:
        """Nudges the coordinator pushed to this connection: `immediate` ones once sent (it must have said
        `hello` on it), `when_idle` ones when a heartbeat of it says `idle`. Taken in as replies arrive; `wait`
        seconds for one when none is here yet."""
        if wait > 0 and not self.transport.pushed:
            self.transport.wait_pushed(wait)
        return taken_nudges(self.transport.pushed)


def taken_nudges(pushed: deque[tuple[str, dict[str, Any]]]) -> list[Nudge]:
    """The nudges among a connection's unsolicited messages, taken: the messages are cleared."""
    taken = [body for kind, body in pushed if kind == C.PUSH_NUDGE]
    pushed.clear()
    return [Nudge.model_validate(body) for body in taken]


def attribution_maps(attributions: Sequence[tuple[str, str] | dict[str, Any]]) -> list[dict[str, Any]]:
    """Attributions as the wire has them: (learning id, outcome) pairs or maps already."""
    return [a if isinstance(a, dict) else {"learning_id": a[0], "outcome": a[1]} for a in attributions]
