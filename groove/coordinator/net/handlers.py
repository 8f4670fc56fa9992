"""The coordinator's half of the operation registry: how each operation of `protocol.ops.OPS` is served.

One entry per operation, of one of four kinds, and the socket loop dispatches on the kind:
- `Control`: answered on the socket thread at once, never queued behind reads or writes (ping, hello, heartbeat);
- `Read`: run on a reader thread (`held`: with group commits held, to see every tier at one moment);
- `Write`: queued for the batcher; its `WriteOp` (write/ops.py) plans, applies and combines it;
- `Prepared`: prepared on a reader thread (an injection chosen, an import file read and validated), then
  committed like a write.

This module checks itself against `OPS` when imported: an operation without a handler, a handler without
an operation, or a write served as a read stops the coordinator before it serves anything.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from groove.coordinator.board.directory import Boards
from groove.coordinator.board.reads import (
    find_memory,
    get_memory,
    get_task,
    list_artifacts,
    list_checkpoints,
    list_decisions,
    list_memories,
    list_notes,
    list_nudges,
    list_tasks,
)
from groove.coordinator.errors import Rejected
from groove.coordinator.loop.history import learning_history, list_injections
from groove.coordinator.loop.injection import get_injection, params_list, prepare
from groove.coordinator.loop.offers import offer
from groove.coordinator.net.idle import IdleNudges
from groove.coordinator.net.registry import AgentRegistry
from groove.coordinator.search.derived import Derived
from groove.coordinator.search.ranking import search, search_notes
from groove.coordinator.search.rebuilds import rebuild_index, reembed
from groove.coordinator.store.backup import backup_tiers
from groove.coordinator.store.portability import check_import, export_tiers
from groove.coordinator.store.reads import get_learning, list_learnings, list_relations, list_reviews
from groove.coordinator.store.tierset import TierSet
from groove.coordinator.wire.codec import encode_push
from groove.coordinator.write import ops as writes
from groove.coordinator.write.bodies import ImportRecord
from groove.coordinator.write.ops import WriteOp
from groove.protocol import constants as C
from groove.protocol.board import (
    MemoryGetRequest,
    MemoryListRequest,
    TaskCompleteRequest,
    TaskFailRequest,
    TaskGetRequest,
    TaskListRequest,
)
from groove.protocol.boardrecords import (
    ArtifactListRequest,
    CheckpointListRequest,
    DecisionListRequest,
    NoteListRequest,
    NudgeAckRequest,
    NudgeListRequest,
    NudgeSendRequest,
)
from groove.protocol.curation import ReviewListRequest
from groove.protocol.errors import ErrorCode
from groove.protocol.ids import now_ms
from groove.protocol.loop import (
    InjectCandidatesRequest,
    InjectionGetRequest,
    InjectionListRequest,
    InjectPrepareRequest,
    LearningHistoryRequest,
    ParamsListRequest,
)
from groove.protocol.models import (
    AgentsListRequest,
    HeartbeatRequest,
    HelloRequest,
    LearningGetRequest,
    LearningListRequest,
    PingRequest,
    RelationListRequest,
)
from groove.protocol.ops import OPS
from groove.protocol.portability import BackupRequest, ExportRequest, ImportRequest
from groove.protocol.search import RebuildRequest, SearchRequest
from groove.protocol.stats import StatsRequest

B = TypeVar("B", bound=BaseModel)
W = TypeVar("W", bound=BaseModel)
ReplyBody = dict[str, Any]


class Services(Protocol):
    """What handlers may use of the coordinator."""

    tiers: TierSet
    derived: Derived
    boards: Boards
    registry: AgentRegistry
    idle: IdleNudges

    def ping(self) -> ReplyBody:
        """The `ping` reply body."""
        ...

    def stats(self) -> ReplyBody:
        """The `stats` reply body."""
        ...


# Messages to send to other connections than the request's, or unsolicited to its own: (peer, payload).
Pushes = list[tuple[bytes, bytes]]


@dataclass(frozen=True)
class Control(Generic[B]):
    """Answered on the socket thread; `run` gets the sender's peer id. `then`, when given, runs after the reply
    is sent and returns what to push."""

    run: Callable[[Services, bytes, B], ReplyBody]
    then: Callable[[Services, bytes, B], Pushes] | None = None


@dataclass(frozen=True)
class Read(Generic[B]):
    """Run on a reader thread."""

    run: Callable[[Services, B], ReplyBody]
    held: bool = False  # with group commits held: writes queue meanwhile and are acked after


@dataclass(frozen=True)
class Write(Generic[B]):
    """Queued for the batcher as it is. `acked`, when given, runs on the acker thread once the write is acked,
    with its body and reply, and returns what to push to other connections."""

    op: WriteOp[B]
    acked: Callable[[Services, B, ReplyBody], Pushes] | None = None


@dataclass(frozen=True)
class Prepared(Generic[B, W]):
    """Prepared on a reader thread (given the request id), then committed as the write `op`."""

    prepare: Callable[[Services, B, str], W]
    op: WriteOp[W]


Handler = Control[Any] | Read[Any] | Write[Any] | Prepared[Any, Any]


def _hello(services: Services, peer: bytes, body: HelloRequest) -> ReplyBody:
    services.registry.hello(peer, body.agent_id, body.role, body.pid, body.host, None, body.status, body.task_id)
    return {}


def _heartbeat(services: Services, _: bytes, body: HeartbeatRequest) -> ReplyBody:
    if not services.registry.beat(body.agent_id, None, body.status, body.task_id):
        raise Rejected(ErrorCode.NOT_FOUND, f"no agent {body.agent_id!r}: say hello first")
    return {}


def _idle_push(services: Services, _: bytes, body: HelloRequest | HeartbeatRequest) -> Pushes:
    """An agent that says it is idle gets its `when_idle` nudges pushed (coordinator/net/idle.py), on the
    connection it said `hello` on (a heartbeat may come from a side connection)."""
    if body.status != "idle":
        return []
    found = services.registry.connection(body.agent_id)
    if found is None:
        return []
    peer, role = found
    return [(peer, encode_push(C.PUSH_NUDGE, nudge)) for nudge in services.idle.take(body.agent_id, role)]


def _task_ended(services: Services, body: TaskCompleteRequest | TaskFailRequest, _: ReplyBody) -> Pushes:
    services.registry.ended(body.agent_id, isinstance(body, TaskCompleteRequest))
    return []


def _nudge_sent(services: Services, body: NudgeSendRequest, reply: ReplyBody) -> Pushes:
    nudge = body.model_dump() | reply  # the stored nudge
    if body.delivery == "when_idle":
        services.idle.sent(nudge)
    if body.delivery != "immediate":
        return []
    push = encode_push(C.PUSH_NUDGE, nudge)
    return [(peer, push) for peer in services.registry.peers_for(body.target)]


def _nudge_acked(services: Services, body: NudgeAckRequest, _: ReplyBody) -> Pushes:
    services.idle.acked(body.agent_id, body.ids)
    return []


def _search(services: Services, body: SearchRequest) -> ReplyBody:
    if body.memory_id is None:
        return search(services.tiers, services.derived, body)
    tier, _ = find_memory(services.tiers, body.memory_id)
    return search_notes(tier, services.derived, body, now_ms())


def _import(services: Services, body: ImportRequest, _: str) -> ImportRecord:
    return ImportRecord(tiers=check_import(body).tiers, embeds=services.derived.embeddings)


HANDLERS: dict[str, Handler] = {
    C.OP_PING: Control[PingRequest](lambda s, _, __: s.ping()),
    C.OP_HELLO: Control[HelloRequest](_hello, _idle_push),
    C.OP_HEARTBEAT: Control[HeartbeatRequest](_heartbeat, _idle_push),
    C.OP_LEARNING_PUT: Write(writes.PUT),
    C.OP_LEARNING_GET: Read[LearningGetRequest](lambda s, b: get_learning(s.tiers, s.derived.archive.archived, b)),
    C.OP_LEARNING_LIST: Read[LearningListRequest](lambda s, b: list_learnings(s.tiers, s.derived.archive.archived, b)),
    C.OP_LEARNING_DELETE: Write(writes.DELETE),
    C.OP_OUTCOME_RECORD: Write(writes.OUTCOME),
    C.OP_RELATION_PUT: Write(writes.RELATION),
    C.OP_RELATION_LIST: Read[RelationListRequest](lambda s, b: list_relations(s.tiers, b)),
    C.OP_STATS: Read[StatsRequest](lambda s, _: s.stats()),
    C.OP_AGENTS_LIST: Read[AgentsListRequest](lambda s, b: {"agents": s.registry.listed(b.state)}),
    C.OP_SEARCH: Read[SearchRequest](_search),
    C.OP_REINDEX: Read[RebuildRequest](lambda s, b: rebuild_index(s.tiers, s.derived, b)),
    C.OP_REEMBED: Read[RebuildRequest](lambda s, b: reembed(s.tiers, s.derived, b)),
    C.OP_PARAMS_LIST: Read[ParamsListRequest](lambda s, _: params_list(s.tiers)),
    C.OP_INJECT_PREPARE: Prepared[InjectPrepareRequest, Any](
        lambda s, b, rid: prepare(s.tiers, s.derived, b, rid), writes.INJECT
    ),
    C.OP_INJECTION_GET: Read[InjectionGetRequest](lambda s, b: get_injection(s.tiers, s.derived.archive.archived, b)),
    C.OP_INJECTION_LIST: Read[InjectionListRequest](lambda s, b: list_injections(s.tiers, b)),
    C.OP_LEARNING_HISTORY: Read[LearningHistoryRequest](lambda s, b: learning_history(s.tiers, b)),
    C.OP_INJECT_CANDIDATES: Read[InjectCandidatesRequest](lambda s, b: offer(s.tiers, s.derived, b)),
    C.OP_INJECTION_RECORD: Write(writes.INJECTION_RECORD),
    C.OP_MAINTAIN: Write(writes.MAINTAIN),
    C.OP_LEARNING_RESTORE: Write(writes.RESTORE),
    C.OP_LEARNING_ARCHIVE: Write(writes.ARCHIVE),
    C.OP_LEARNING_PROMOTE: Write(writes.PROMOTE),
    C.OP_LEARNING_PROPOSE: Write(writes.PROPOSE),
    C.OP_REVIEW_LIST: Read[ReviewListRequest](lambda s, b: list_reviews(s.tiers, b)),
    C.OP_REVIEW_DECIDE: Write(writes.DECIDE),
    C.OP_BACKUP: Read[BackupRequest](lambda s, b: backup_tiers(s.tiers, Path(b.directory)), held=True),
    C.OP_EXPORT: Read[ExportRequest](lambda s, b: export_tiers(s.tiers, b), held=True),
    C.OP_IMPORT: Prepared[ImportRequest, Any](_import, writes.IMPORT),
    C.OP_MEMORY_CREATE: Write(writes.MEMORY_CREATE),
    C.OP_MEMORY_GET: Read[MemoryGetRequest](lambda s, b: get_memory(s.tiers, s.boards, b)),
    C.OP_MEMORY_LIST: Read[MemoryListRequest](lambda s, b: list_memories(s.tiers, s.boards, b)),
    C.OP_MEMORY_UPDATE: Write(writes.MEMORY_UPDATE),
    C.OP_TASK_ADD: Write(writes.TASK_ADD),
    C.OP_TASK_CLAIM: Write(writes.TASK_CLAIM),
    C.OP_TASK_HEARTBEAT: Write(writes.TASK_HEARTBEAT),
    C.OP_TASK_START: Write(writes.TASK_START),
    C.OP_TASK_COMPLETE: Write(writes.TASK_COMPLETE, _task_ended),
    C.OP_TASK_FAIL: Write(writes.TASK_FAIL, _task_ended),
    C.OP_TASK_RELEASE: Write(writes.TASK_RELEASE),
    C.OP_TASK_REVIEW: Write(writes.TASK_REVIEW),
    C.OP_TASK_CANCEL: Write(writes.TASK_CANCEL),
    C.OP_TASK_PRIORITIZE: Write(writes.TASK_PRIORITIZE),
    C.OP_TASK_GET: Read[TaskGetRequest](lambda s, b: get_task(s.tiers, b)),
    C.OP_TASK_LIST: Read[TaskListRequest](lambda s, b: list_tasks(s.tiers, b)),
    C.OP_DECISION_RECORD: Write(writes.DECISION_RECORD),
    C.OP_DECISION_REVERSE: Write(writes.DECISION_REVERSE),
    C.OP_DECISION_LIST: Read[DecisionListRequest](lambda s, b: list_decisions(s.tiers, b)),
    C.OP_ARTIFACT_RECORD: Write(writes.ARTIFACT_RECORD),
    C.OP_ARTIFACT_LIST: Read[ArtifactListRequest](lambda s, b: list_artifacts(s.tiers, b)),
    C.OP_CHECKPOINT_RECORD: Write(writes.CHECKPOINT_RECORD),
    C.OP_CHECKPOINT_LIST: Read[CheckpointListRequest](lambda s, b: list_checkpoints(s.tiers, b)),
    C.OP_NUDGE_SEND: Write(writes.NUDGE_SEND, _nudge_sent),
    C.OP_NUDGE_POLL: Write(writes.NUDGE_POLL),
    C.OP_NUDGE_ACK: Write(writes.NUDGE_ACK, _nudge_acked),
    C.OP_NUDGE_LIST: Read[NudgeListRequest](lambda s, b: list_nudges(s.tiers, b)),
    C.OP_MEMORY_NOTE: Write(writes.MEMORY_NOTE),
    C.OP_NOTE_LIST: Read[NoteListRequest](lambda s, b: list_notes(s.tiers, b, now_ms())),
}


def _check() -> None:
    """Every operation has exactly one handler, of a kind that matches whether it is a write."""
    missing, extra = set(OPS) - set(HANDLERS), set(HANDLERS) - set(OPS)
    if missing or extra:
        raise TypeError(f"handlers do not match protocol.ops.OPS: missing {sorted(missing)}, unknown {sorted(extra)}")
    for name, op in OPS.items():
        handler = HANDLERS[name]
        if isinstance(handler, Write | Prepared) != op.write:
            raise TypeError(f"{name} is {'a write' if op.write else 'a read'} on the wire but served as {handler}")
        if isinstance(handler, Write | Prepared) and handler.op.name != name:
            raise TypeError(f"{name} is served by the write {handler.op.name}")


_check()
