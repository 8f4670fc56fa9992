"""groove as a Model Context Protocol server (`groove mcp`): the tools a coding agent (Claude Code, Codex,
Cursor, any MCP client) uses to find, record and rate learnings and to work a board, over stdio or streamable
HTTP, built on the official `mcp` SDK (2.x, `MCPServer`).

Each tool is a thin, typed call of `GrooveClient`; its docstring is the description the model reads, so it
says when to use the tool and what comes back. Errors never crash the server: a coordinator's refusal becomes
a tool error carrying the code and message (`not_found: no task 'x'`), and an unreachable coordinator a tool
error saying so, after which the next call connects afresh.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from pydantic import BaseModel, Field

from groove.client import GrooveClient
from groove.client.cluster import GrooveCluster
from groove.client.errors import GrooveError, GrooveTimeout, RemoteError
from groove.protocol import constants as C
from groove.protocol.cluster import ClusterMap
from groove.protocol.keys import CurveClient
from groove.protocol.models import OutcomeRecordReply

log = logging.getLogger(__name__)
T = TypeVar("T")
_INSTRUCTIONS = (
    "groove is the shared memory of the coding agents working on these projects. At the start of a task call "
    "start_session (or search_learnings) to get what other agents learned; when something works or fails in a "
    "way worth remembering, record_learning; when you end, end_session with the learnings that helped."
)


class Bridge:
    """One coordinator connection shared by the tools, used by one call at a time (tools run on worker threads
    and a ZeroMQ socket is not thread-safe); reconnected after the coordinator did not answer. With a cluster
    map, the learning tools go through a GrooveCluster (routed by tier, injections chosen by the home) and the
    board's to the home coordinator."""

    def __init__(
        self, endpoint: str, curve: CurveClient | None = None, timeout: float = 10.0, cluster: ClusterMap | None = None
    ) -> None:
        self.endpoint = endpoint if cluster is None else cluster.coordinators[cluster.home]
        self.curve = curve
        self.timeout = timeout
        self.cluster = cluster
        self.session_id = f"mcp-{uuid.uuid4()}"  # this server's sessions, as `inject.prepare` records them
        self._client: GrooveClient | None = None
        self._routed: GrooveCluster | None = None
        self._lock = threading.Lock()

    def call(self, work: Callable[[GrooveClient], T]) -> T:
        """Run `work` with the (home) coordinator's connection; a GrooveError becomes a ToolError the model can
        read."""
        return self._run(lambda: work(self._connection()))

    def routed(self, work: Callable[[GrooveClient | GrooveCluster], T]) -> T:
        """`call`, but with the cluster's client when there is a cluster map."""
        return self._run(lambda: work(self._cluster() if self.cluster is not None else self._connection()))

    def _connection(self) -> GrooveClient:
        if self._client is None:
            self._client = GrooveClient(self.endpoint, timeout=self.timeout, curve=self.curve)
        return self._client

    def _cluster(self) -> GrooveCluster:
        if self._routed is None:
            assert self.cluster is not None
            self._routed = GrooveCluster(self.cluster, timeout=self.timeout, curve=self.curve)
        return self._routed

    def _run(self, work: Callable[[], T]) -> T:
        with self._lock:
            try:
                return work()
            except RemoteError as exc:
                raise ToolError(str(exc)) from None  # "<code>: <message>", as the coordinator said it
            except GrooveTimeout:
                self._drop()
                where = (
                    "a groove coordinator of the cluster"
                    if self.cluster
                    else f"the groove coordinator at {self.endpoint}"
                )
                raise ToolError(
                    f"unavailable: {where} did not answer within {self.timeout:g} s; is `groove serve` running?"
                ) from None
            except GrooveError as exc:
                self._drop()
                raise ToolError(f"unavailable: {exc}") from None

    def read(self, work: Callable[[GrooveClient | GrooveCluster], BaseModel]) -> dict[str, Any]:
        """`routed` for a resource: the reply as a map, a failure as the SDK's ResourceError."""
        try:
            return self.routed(work).model_dump()
        except ToolError as exc:
            raise ResourceError(str(exc)) from None

    def _drop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._routed is not None:
            self._routed.close()
            self._routed = None

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._drop()


def build(bridge: Bridge) -> MCPServer:
    """The MCP server with every groove tool and resource, calling the coordinator through `bridge`."""
    server = MCPServer("groove", instructions=_INSTRUCTIONS, version=C.GROOVE_VERSION)

    @server.tool()
    def search_learnings(
        query: Annotated[str, Field(min_length=1, description="What you are about to do, or the problem you face.")],
        project: Annotated[
            str | None, Field(description="The repository root (absolute), to include its learnings.")
        ] = None,
        category: C.Category | None = None,
        limit: Annotated[int, Field(ge=1, le=C.MAX_SEARCH_LIMIT)] = 5,
    ) -> list[dict[str, Any]]:
        """Find what other agents learned that bears on a task, best first: each result has the learning's id
        (to rate it later with record_outcome), its insight (the advice), its confidence (0-1, from how it
        fared before) and why it matched."""
        hits = bridge.routed(lambda c: c.search(query, limit=limit, project=project, category=category))
        return [
            {
                "id": h.learning.id,
                "insight": h.learning.insight,
                "description": h.learning.description,
                "category": h.learning.category,
                "confidence": round(h.learning.confidence, 3),
                "score": round(h.score, 3),
                "why": h.reasoning,
            }
            for h in hits
        ]

    @server.tool()
    def record_learning(
        description: Annotated[
            str, Field(min_length=1, description="What happened: the situation and what you found.")
        ],
        insight: Annotated[str, Field(min_length=1, description="The advice for the next agent, as an instruction.")],
        category: C.Category,
        scope: Annotated[
            str | None,
            Field(description="`global`, `project:<root>` or `user:<id>`; default: the project's, else global."),
        ] = None,
        project: Annotated[str | None, Field(description="The repository root it applies to.")] = None,
    ) -> dict[str, Any]:
        """Store something worth remembering for other agents (a fix that worked, a trap, a convention). The same
        content stored again reinforces the existing learning instead of duplicating it. Returns its id."""
        chosen = scope or (f"{C.SCOPE_PROJECT_PREFIX}{project}" if project else C.SCOPE_GLOBAL)
        reply = bridge.routed(
            lambda c: c.put_learnings(
                [{"scope": chosen, "category": category, "description": description, "insight": insight}]
            )
        )
        return {"id": reply.ids[0], "created": reply.created[0]}

    @server.tool()
    def record_outcome(
        learning_id: str,
        outcome: C.OutcomeKind,
        note: Annotated[str | None, Field(description="Why, in a few words (kept in the server's log).")] = None,
        injection_id: Annotated[
            str | None,
            Field(description="The injection id your session was given (its learnings block names it), if any."),
        ] = None,
    ) -> dict[str, Any]:
        """Say how a learning you were given turned out: helpful, ignored or contradicted (it was wrong here).
        This is what moves its confidence, for every agent after you. A session rates each learning it was
        given once: the first rating counts, and end_session does not count it again."""

        def rate(c: GrooveClient | GrooveCluster) -> OutcomeRecordReply:
            # a session started by the hooks has the agent's session id: the injection names it
            session = c.get_injection(injection_id).session_id if injection_id else bridge.session_id
            return c.close_session([(learning_id, outcome)], session_id=session)

        reply = bridge.routed(rate)
        if note:
            log.info("outcome %s for %s: %s", outcome, learning_id, note)
        return {"applied": reply.applied, "rated_before": reply.rated_before}

    @server.tool()
    def start_session(
        project: Annotated[str, Field(description="The repository root (absolute) you are working in.")],
        task: Annotated[str, Field(min_length=1, description="The task of this session, in a sentence or two.")],
    ) -> dict[str, Any]:
        """Get the learnings chosen for this session's task, as a block to follow, and the injection id to give
        end_session when you are done."""
        reply = bridge.routed(lambda c: c.inject(bridge.session_id, task=task, project=project))
        return {
            "injection_id": reply.injection_id,
            "block": reply.markdown,
            "learnings": [{"id": i.learning.id, "insight": i.learning.insight} for i in reply.learnings],
        }

    @server.tool()
    def end_session(
        injection_id: str,
        success: bool,
        helpful: Annotated[list[str] | None, Field(description="Ids of the given learnings that helped.")] = None,
        contradicted: Annotated[list[str] | None, Field(description="Ids of those that were wrong here.")] = None,
    ) -> dict[str, Any]:
        """Close a session started with start_session: whether the task succeeded, and which of its learnings
        helped or were wrong. The learnings you name neither way, and did not rate with record_outcome, count
        as ignored."""
        rated = [(lid, "helpful") for lid in helpful or []] + [(lid, "contradicted") for lid in contradicted or []]
        reply = bridge.routed(
            lambda c: c.close_session(rated, injection_id=injection_id, success=success, session_id=bridge.session_id)
        )
        return {"applied": reply.applied, "ignored": reply.ignored, "rated_before": reply.rated_before}

    _board_tools(server, bridge)

    @server.resource("groove://learning/{learning_id}", mime_type="application/json")
    def learning(learning_id: str) -> dict[str, Any]:
        """One learning, with its usage and confidence."""
        return bridge.read(lambda c: c.get(learning_id))

    @server.resource("groove://session/{injection_id}", mime_type="application/json")
    def session(injection_id: str) -> dict[str, Any]:
        """What a session was given (its injection): each learning as it is now, and whether it was closed."""
        return bridge.read(lambda c: c.get_injection(injection_id))

    return server


def _board_tools(server: MCPServer, bridge: Bridge) -> None:
    """The board's tools: claim, complete and fail tasks, read and acknowledge nudges, decisions, notes."""

    @server.tool()
    def claim_task(
        memory_id: str,
        agent_id: str,
        lease_ms: Annotated[int, Field(ge=C.MIN_LEASE_MS, le=C.MAX_LEASE_MS)] = C.DEFAULT_LEASE_MS,
        role: str | None = None,
    ) -> dict[str, Any] | None:
        """Take the highest-priority task of a working memory that is ready (its dependencies done); null when
        none is. Hold it by finishing within the lease (default 10 minutes) with complete_task or fail_task."""
        task = bridge.call(lambda c: c.claim_task(memory_id, agent_id, lease_ms, role))
        return None if task is None else task.model_dump()

    @server.tool()
    def complete_task(
        task_id: str,
        agent_id: str,
        summary: Annotated[str, Field(min_length=1, description="What was done.")],
        next_steps: list[str] | None = None,
    ) -> dict[str, Any]:
        """Mark a task you hold done (or in review, if it needs one)."""
        done = bridge.call(lambda c: c.complete_task(task_id, agent_id, summary, next_steps=next_steps))
        return {"status": done.status}

    @server.tool()
    def fail_task(task_id: str, agent_id: str, error: str, retry: bool = True) -> dict[str, Any]:
        """Give up a task you hold: it goes back to the plan for another attempt (unless retry is false or its
        attempts are spent)."""
        return bridge.call(lambda c: c.fail_task(task_id, agent_id, error, retry)).model_dump()

    @server.tool()
    def read_nudges(agent_id: str, role: str | None = None, idle: bool = False) -> list[dict[str, Any]]:
        """Messages for you from the swarm's lead or other agents, most urgent first. Acknowledge them with
        ack_nudges once read, or they come again."""
        return [n.model_dump() for n in bridge.call(lambda c: c.poll_nudges(agent_id, role, idle))]

    @server.tool()
    def ack_nudges(agent_id: str, ids: list[str]) -> dict[str, Any]:
        """Acknowledge nudges read with read_nudges: they never come again."""
        return {"acked": bridge.call(lambda c: c.ack_nudges(agent_id, ids))}

    @server.tool()
    def record_decision(
        memory_id: str,
        question: str,
        choice: str,
        rationale: str,
        made_by: str,
        alternatives: list[str] | None = None,
        task_id: str | None = None,
    ) -> dict[str, Any]:
        """Record a choice you made for the others working the memory, with why and what else was considered."""
        decision = bridge.call(
            lambda c: c.record_decision(
                memory_id, question, choice, rationale, made_by, alternatives=alternatives, task_id=task_id
            )
        )
        return {"id": decision}

    @server.tool()
    def add_note(
        memory_id: str,
        content: str,
        kind: C.NoteKind = "discovery",
        task_id: str | None = None,
        created_by: str | None = None,
    ) -> dict[str, Any]:
        """Share a note with the agents working a memory: context everyone should know, a discovery, or where an
        artifact is. Others find it by meaning."""
        return {"id": bridge.call(lambda c: c.note(memory_id, content, kind, task_id, created_by))}
