"""Every operation by name, with the model its request body must match (protocol version 1)."""

from __future__ import annotations

from protocol import constants as C
from protocol.curation import PromoteRequest, ProposeRequest, ReviewDecideRequest, ReviewListRequest
from protocol.loop import InjectPrepareRequest, MaintainRequest, ParamsListRequest, RestoreRequest
from protocol.models import (
    AgentsListRequest,
    Body,
    HeartbeatRequest,
    HelloRequest,
    LearningDeleteRequest,
    LearningGetRequest,
    LearningListRequest,
    LearningPutRequest,
    OutcomeRecordRequest,
    PingRequest,
    RelationListRequest,
    RelationPutRequest,
    StatsRequest,
)
from protocol.portability import BackupRequest, ExportRequest, ImportRequest
from protocol.search import RebuildRequest, SearchRequest

REQUESTS: dict[str, type[Body]] = {
    C.OP_PING: PingRequest,
    C.OP_HELLO: HelloRequest,
    C.OP_HEARTBEAT: HeartbeatRequest,
    C.OP_LEARNING_PUT: LearningPutRequest,
    C.OP_LEARNING_GET: LearningGetRequest,
    C.OP_LEARNING_LIST: LearningListRequest,
    C.OP_LEARNING_DELETE: LearningDeleteRequest,
    C.OP_OUTCOME_RECORD: OutcomeRecordRequest,
    C.OP_RELATION_PUT: RelationPutRequest,
    C.OP_RELATION_LIST: RelationListRequest,
    C.OP_STATS: StatsRequest,
    C.OP_AGENTS_LIST: AgentsListRequest,
    C.OP_SEARCH: SearchRequest,
    C.OP_REINDEX: RebuildRequest,
    C.OP_REEMBED: RebuildRequest,
    C.OP_PARAMS_LIST: ParamsListRequest,
    C.OP_INJECT_PREPARE: InjectPrepareRequest,
    C.OP_MAINTAIN: MaintainRequest,
    C.OP_LEARNING_RESTORE: RestoreRequest,
    C.OP_LEARNING_PROMOTE: PromoteRequest,
    C.OP_LEARNING_PROPOSE: ProposeRequest,
    C.OP_REVIEW_LIST: ReviewListRequest,
    C.OP_REVIEW_DECIDE: ReviewDecideRequest,
    C.OP_BACKUP: BackupRequest,
    C.OP_EXPORT: ExportRequest,
    C.OP_IMPORT: ImportRequest,
}
