"""Every operation of protocol version 1, declared once: its name, request and reply models, whether it is a
write, and the least role that may send it.

This is the registry's wire half: what a client must know. Codec lookup, the role table, resend deduplication
and the checks of PROTOCOL.md all derive from it; the coordinator keeps each operation's handlers in a table
keyed by these names (`coordinator/net/handlers.py`), checked against this one when it is imported.
"""

from __future__ import annotations

from dataclasses import dataclass

from groove.protocol import constants as C
from groove.protocol.board import (
    IdReply,
    LeaseReply,
    MemoryCreateRequest,
    MemoryGetReply,
    MemoryGetRequest,
    MemoryListReply,
    MemoryListRequest,
    MemoryUpdateRequest,
    StatusReply,
    TaskAddReply,
    TaskAddRequest,
    TaskCancelRequest,
    TaskClaimReply,
    TaskClaimRequest,
    TaskCompleteReply,
    TaskCompleteRequest,
    TaskFailReply,
    TaskFailRequest,
    TaskGetReply,
    TaskGetRequest,
    TaskHeartbeatRequest,
    TaskListReply,
    TaskListRequest,
    TaskPrioritizeRequest,
    TaskReleaseRequest,
    TaskReviewRequest,
    TaskStartRequest,
)
from groove.protocol.boardrecords import (
    ArtifactListReply,
    ArtifactListRequest,
    ArtifactRecordReply,
    ArtifactRecordRequest,
    CheckpointListReply,
    CheckpointListRequest,
    CheckpointRecordRequest,
    DecisionListReply,
    DecisionListRequest,
    DecisionRecordRequest,
    DecisionReverseRequest,
    MemoryNoteRequest,
    NoteListReply,
    NoteListRequest,
    NudgeAckReply,
    NudgeAckRequest,
    NudgeListReply,
    NudgeListRequest,
    NudgePollReply,
    NudgePollRequest,
    NudgeSendRequest,
)
from groove.protocol.curation import (
    PromoteReply,
    PromoteRequest,
    ProposeReply,
    ProposeRequest,
    ReviewDecideReply,
    ReviewDecideRequest,
    ReviewListReply,
    ReviewListRequest,
)
from groove.protocol.loop import (
    ArchiveRequest,
    InjectCandidatesReply,
    InjectCandidatesRequest,
    InjectionGetReply,
    InjectionGetRequest,
    InjectionListReply,
    InjectionListRequest,
    InjectionRecordReply,
    InjectionRecordRequest,
    InjectPrepareReply,
    InjectPrepareRequest,
    LearningHistoryReply,
    LearningHistoryRequest,
    MaintainReply,
    MaintainRequest,
    ParamsListReply,
    ParamsListRequest,
    RestoreReply,
    RestoreRequest,
)
from groove.protocol.models import (
    AgentsListReply,
    AgentsListRequest,
    Body,
    EmptyReply,
    HeartbeatRequest,
    HelloRequest,
    LearningDeleteReply,
    LearningDeleteRequest,
    LearningGetReply,
    LearningGetRequest,
    LearningListReply,
    LearningListRequest,
    LearningPutReply,
    LearningPutRequest,
    OutcomeRecordReply,
    OutcomeRecordRequest,
    PingReply,
    PingRequest,
    RelationListReply,
    RelationListRequest,
    RelationPutRequest,
    Reply,
)
from groove.protocol.portability import (
    BackupReply,
    BackupRequest,
    ExportReply,
    ExportRequest,
    ImportReply,
    ImportRequest,
)
from groove.protocol.search import RebuildReply, RebuildRequest, SearchReply, SearchRequest
from groove.protocol.stats import StatsReply, StatsRequest


@dataclass(frozen=True)
class Op:
    """One operation as a client sees it."""

    name: str
    request: type[Body]
    reply: type[Reply]
    # A write is group-committed and acked after its commit. Its request id is its idempotency key: a resend
    # is answered from the first attempt (deduplicated), also across a coordinator crash.
    write: bool
    role: C.Role  # the least role that may send it when the coordinator runs with CURVE

    @property
    def deduped(self) -> bool:
        """Whether a resend of the same request id is answered from the first attempt rather than redone."""
        return self.write

    def allows(self, role: C.Role) -> bool:
        """Whether a key of `role` may send this operation."""
        return C.ROLES.index(role) >= C.ROLES.index(self.role)


_AGENT, _CURATOR, _ADMIN = C.ROLES

OPS: dict[str, Op] = {
    op.name: op
    for op in (
        Op(C.OP_PING, PingRequest, PingReply, write=False, role=_AGENT),
        Op(C.OP_HELLO, HelloRequest, EmptyReply, write=False, role=_AGENT),
        Op(C.OP_HEARTBEAT, HeartbeatRequest, EmptyReply, write=False, role=_AGENT),
        Op(C.OP_LEARNING_PUT, LearningPutRequest, LearningPutReply, write=True, role=_AGENT),
        Op(C.OP_LEARNING_GET, LearningGetRequest, LearningGetReply, write=False, role=_AGENT),
        Op(C.OP_LEARNING_LIST, LearningListRequest, LearningListReply, write=False, role=_AGENT),
        Op(C.OP_LEARNING_DELETE, LearningDeleteRequest, LearningDeleteReply, write=True, role=_ADMIN),
        Op(C.OP_OUTCOME_RECORD, OutcomeRecordRequest, OutcomeRecordReply, write=True, role=_AGENT),
        Op(C.OP_RELATION_PUT, RelationPutRequest, EmptyReply, write=True, role=_AGENT),
        Op(C.OP_RELATION_LIST, RelationListRequest, RelationListReply, write=False, role=_AGENT),
        Op(C.OP_STATS, StatsRequest, StatsReply, write=False, role=_AGENT),
        Op(C.OP_AGENTS_LIST, AgentsListRequest, AgentsListReply, write=False, role=_AGENT),
        Op(C.OP_SEARCH, SearchRequest, SearchReply, write=False, role=_AGENT),
        Op(C.OP_REINDEX, RebuildRequest, RebuildReply, write=False, role=_ADMIN),
        Op(C.OP_REEMBED, RebuildRequest, RebuildReply, write=False, role=_ADMIN),
        Op(C.OP_PARAMS_LIST, ParamsListRequest, ParamsListReply, write=False, role=_AGENT),
        # reads to choose a session's learnings, then writes the choice: a write on the wire
        Op(C.OP_INJECT_PREPARE, InjectPrepareRequest, InjectPrepareReply, write=True, role=_AGENT),
        Op(C.OP_INJECTION_GET, InjectionGetRequest, InjectionGetReply, write=False, role=_AGENT),
        Op(C.OP_INJECTION_LIST, InjectionListRequest, InjectionListReply, write=False, role=_AGENT),
        Op(C.OP_LEARNING_HISTORY, LearningHistoryRequest, LearningHistoryReply, write=False, role=_AGENT),
        # an injection over a cluster: the owners of its other tiers offer candidates, then count the choice
        Op(C.OP_INJECT_CANDIDATES, InjectCandidatesRequest, InjectCandidatesReply, write=False, role=_AGENT),
        Op(C.OP_INJECTION_RECORD, InjectionRecordRequest, InjectionRecordReply, write=True, role=_AGENT),
        Op(C.OP_MAINTAIN, MaintainRequest, MaintainReply, write=True, role=_ADMIN),
        Op(C.OP_LEARNING_RESTORE, RestoreRequest, RestoreReply, write=True, role=_ADMIN),
        Op(C.OP_LEARNING_ARCHIVE, ArchiveRequest, RestoreReply, write=True, role=_CURATOR),
        Op(C.OP_LEARNING_PROMOTE, PromoteRequest, PromoteReply, write=True, role=_AGENT),
        Op(C.OP_LEARNING_PROPOSE, ProposeRequest, ProposeReply, write=True, role=_AGENT),
        Op(C.OP_REVIEW_LIST, ReviewListRequest, ReviewListReply, write=False, role=_CURATOR),
        Op(C.OP_REVIEW_DECIDE, ReviewDecideRequest, ReviewDecideReply, write=True, role=_CURATOR),
        Op(C.OP_BACKUP, BackupRequest, BackupReply, write=False, role=_ADMIN),
        Op(C.OP_EXPORT, ExportRequest, ExportReply, write=False, role=_ADMIN),
        Op(C.OP_IMPORT, ImportRequest, ImportReply, write=True, role=_ADMIN),
        # the board: planning it (memories, tasks, reviews, cancelling) is a curator's; working it an agent's
        Op(C.OP_MEMORY_CREATE, MemoryCreateRequest, IdReply, write=True, role=_CURATOR),
        Op(C.OP_MEMORY_GET, MemoryGetRequest, MemoryGetReply, write=False, role=_AGENT),
        Op(C.OP_MEMORY_LIST, MemoryListRequest, MemoryListReply, write=False, role=_AGENT),
        Op(C.OP_MEMORY_UPDATE, MemoryUpdateRequest, StatusReply, write=True, role=_CURATOR),
        Op(C.OP_TASK_ADD, TaskAddRequest, TaskAddReply, write=True, role=_CURATOR),
        Op(C.OP_TASK_CLAIM, TaskClaimRequest, TaskClaimReply, write=True, role=_AGENT),
        Op(C.OP_TASK_HEARTBEAT, TaskHeartbeatRequest, LeaseReply, write=True, role=_AGENT),
        Op(C.OP_TASK_START, TaskStartRequest, StatusReply, write=True, role=_AGENT),
        Op(C.OP_TASK_COMPLETE, TaskCompleteRequest, TaskCompleteReply, write=True, role=_AGENT),
        Op(C.OP_TASK_FAIL, TaskFailRequest, TaskFailReply, write=True, role=_AGENT),
        Op(C.OP_TASK_RELEASE, TaskReleaseRequest, TaskFailReply, write=True, role=_AGENT),
        Op(C.OP_TASK_REVIEW, TaskReviewRequest, StatusReply, write=True, role=_CURATOR),
        Op(C.OP_TASK_CANCEL, TaskCancelRequest, StatusReply, write=True, role=_CURATOR),
        Op(C.OP_TASK_PRIORITIZE, TaskPrioritizeRequest, StatusReply, write=True, role=_CURATOR),
        Op(C.OP_TASK_GET, TaskGetRequest, TaskGetReply, write=False, role=_AGENT),
        Op(C.OP_TASK_LIST, TaskListRequest, TaskListReply, write=False, role=_AGENT),
        Op(C.OP_DECISION_RECORD, DecisionRecordRequest, IdReply, write=True, role=_AGENT),
        Op(C.OP_DECISION_REVERSE, DecisionReverseRequest, StatusReply, write=True, role=_CURATOR),
        Op(C.OP_DECISION_LIST, DecisionListRequest, DecisionListReply, write=False, role=_AGENT),
        Op(C.OP_ARTIFACT_RECORD, ArtifactRecordRequest, ArtifactRecordReply, write=True, role=_AGENT),
        Op(C.OP_ARTIFACT_LIST, ArtifactListRequest, ArtifactListReply, write=False, role=_AGENT),
        Op(C.OP_CHECKPOINT_RECORD, CheckpointRecordRequest, IdReply, write=True, role=_AGENT),
        Op(C.OP_CHECKPOINT_LIST, CheckpointListRequest, CheckpointListReply, write=False, role=_AGENT),
        Op(C.OP_NUDGE_SEND, NudgeSendRequest, IdReply, write=True, role=_CURATOR),
        Op(C.OP_NUDGE_POLL, NudgePollRequest, NudgePollReply, write=True, role=_AGENT),
        Op(C.OP_NUDGE_ACK, NudgeAckRequest, NudgeAckReply, write=True, role=_AGENT),
        Op(C.OP_NUDGE_LIST, NudgeListRequest, NudgeListReply, write=False, role=_AGENT),
        Op(C.OP_MEMORY_NOTE, MemoryNoteRequest, IdReply, write=True, role=_AGENT),
        Op(C.OP_NOTE_LIST, NoteListRequest, NoteListReply, write=False, role=_AGENT),
    )
}
