"""The write operations: how each is planned into per-tier parts and how the tiers' replies become one.

One `WriteOp` per write, the coordinator's own internal writes (`embedding.store`) among them. A `WriteItem`
carries its op through the queue, so the batcher needs no table of its own: it calls what the item brings.
How a part is applied in its tier is `TierWrite`'s, by the part's type.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from groove.coordinator.board.state import LeaseExpiry
from groove.coordinator.errors import Rejected
from groove.coordinator.loop.injection import InjectRecord
from groove.coordinator.store.tierset import TierSet
from groove.coordinator.wire.codec import decode_request, validate_body
from groove.coordinator.write import boarding
from groove.coordinator.write.bodies import ImportRecord, StoreRelated, StoreVectors
from groove.coordinator.write.built import Built
from groove.coordinator.write.parts import BoardPart, Part
from groove.coordinator.write.planning import Planner
from groove.protocol import constants as C
from groove.protocol.board import (
    MemoryCreateRequest,
    MemoryUpdateRequest,
    TaskAddRequest,
    TaskCancelRequest,
    TaskClaimRequest,
    TaskCompleteRequest,
    TaskFailRequest,
    TaskHeartbeatRequest,
    TaskPrioritizeRequest,
    TaskReleaseRequest,
    TaskReviewRequest,
    TaskStartRequest,
)
from groove.protocol.boardrecords import (
    ArtifactRecordRequest,
    CheckpointRecordRequest,
    DecisionRecordRequest,
    DecisionReverseRequest,
    MemoryNoteRequest,
    NudgeAckRequest,
    NudgePollRequest,
    NudgeSendRequest,
)
from groove.protocol.curation import PromoteRequest, ProposeRequest, ReviewDecideRequest
from groove.protocol.loop import ArchiveRequest, InjectionRecordRequest, MaintainRequest, RestoreRequest
from groove.protocol.models import (
    LearningDeleteRequest,
    LearningPutRequest,
    OutcomeRecordRequest,
    RelationPutRequest,
)
from groove.protocol.scopes import tier_for_scope

B = TypeVar("B", bound=BaseModel)
TierReplies = list[dict[str, Any]]


def _nothing(_: Any) -> Sequence[str]:
    return ()


def _nowhere(_: Any) -> str | None:
    return None


def _put_home(body: LearningPutRequest) -> str | None:
    """The tier of a put whose learnings all go to one and whose ids are all the coordinator's to choose (a
    client's id must be checked against every tier)."""
    if any(item.id is not None for item in body.learnings):
        return None
    tiers = {body.tier or tier_for_scope(item.scope) for item in body.learnings}
    return tiers.pop() if len(tiers) == 1 else None


@dataclass(frozen=True)
class WriteOp(Generic[B]):
    """One write operation's handlers."""

    name: str
    plan: Callable[[Planner, B], dict[str, Part]]
    combine: Callable[[B, TierReplies], dict[str, Any]]  # every tier's share of the reply -> the reply
    finds: Callable[[B], Sequence[str]] = _nothing  # learnings it names, located in any tier before planning
    claims: Callable[[B], Sequence[str]] = _nothing  # client-chosen ids of new learnings (open tiers only)
    closes: Callable[[B], Sequence[str]] = _nothing  # injections it closes, loaded before planning
    sessions: Callable[[B], Sequence[str]] = _nothing  # sessions whose open injection it may rate for
    # With CURVE, a sender who curates no organisation may not have this write change an enterprise tier
    # (only planning knows which tiers it touches): a relation there, or a `supersedes` demoting curated
    # knowledge, is the curators' to make.
    curated: bool = False
    # The one tier the write touches, when its body alone says so: then, with several writers, the writer that
    # tier was given commits it beside the others (write/batcher.py). None: it may touch several tiers, or read
    # what another tier's writer is writing, so the first writer commits it with every writer held.
    home: Callable[[B], str | None] = _nowhere


@dataclass(slots=True)
class WriteItem:
    """One write request on its way through the queue."""

    request_id: str
    op: WriteOp[Any]
    body: BaseModel
    # protocol.digests.body_digest of the request's body: a resend with another body is refused, not applied
    digest: str = ""
    parts: dict[str, Part] = field(default_factory=dict)
    replies: dict[str, dict[str, Any]] = field(default_factory=dict)
    error: Rejected | None = None
    # The coordinator's own write (stored vectors, near-duplicate relations, periodic maintenance): no client
    # waits for its reply and its request id is not recorded.
    internal: bool = False
    # With CURVE, a non-admin sender's organisations (see WriteOp.curated). None: any tier.
    curates: frozenset[str] | None = None
    homed: bool = False  # queued to the writer of its home tier (WriteOp.home), which commits it alone
    # A put the front built (write/built.py): its rows are joined to its tier's transaction, unplanned, and its
    # ack was built with it. Its `body` is BUILT_BODY until `unbuild` sends it the planned way.
    built: Built | None = None

    def home(self) -> str | None:
        """The one tier this write touches, when that is known before planning (WriteOp.home)."""
        return self.built.tier if self.built is not None else self.op.home(self.body)


def unbuild(tiers: TierSet, item: WriteItem, now: int) -> None:
    """Send a built put the planned way: its body decoded from the request as it came (it passed the same checks
    in the front), then planned into parts, with new ids (the built ones were never committed)."""
    assert item.built is not None
    item.body = validate_body(decode_request(item.built.raw))
    item.built = None
    try:
        item.parts = item.op.plan(Planner(tiers, now, finds=[], claims=[], closes=[]), item.body)
    except Rejected as exc:
        item.parts = {}
        item.error = exc


def _put_reply(body: LearningPutRequest, replies: TierReplies) -> dict[str, Any]:
    n = len(body.learnings)
    ids: list[str | None] = [None] * n
    created = [False] * n
    for reply in replies:
        for index, lid, was_new in zip(reply["idx"], reply["ids"], reply["created"], strict=True):
            ids[index] = lid
            created[index] = was_new
    return {"ids": ids, "created": created}


def _summed(*keys: str) -> Callable[[Any, TierReplies], dict[str, Any]]:
    def combine(_: Any, replies: TierReplies) -> dict[str, Any]:
        return {key: sum(int(r.get(key, 0)) for r in replies) for key in keys}

    return combine


def _the_one(_: Any, replies: TierReplies) -> dict[str, Any]:
    return replies[0]  # planned into exactly one tier


def _empty(_: Any, __: TierReplies) -> dict[str, Any]:
    return {}


def _maintained(_: MaintainRequest, replies: TierReplies) -> dict[str, Any]:
    tiers = sorted(replies, key=lambda r: str(r["tier"]))
    return _summed("decayed", "archived", "purged")(None, tiers) | {"tiers": tiers}


def _imported(body: ImportRecord, replies: TierReplies) -> dict[str, Any]:
    counts = _summed("learnings_imported", "learnings_skipped", "relations_imported", "relations_skipped")(
        None, replies
    )
    queued = counts["learnings_imported"] if body.embeds else 0
    return counts | {"tiers": len(body.tiers), "queued_for_embedding": queued}


# A built put's body until it is unbuilt: the writer reads a built put's rows, never this.
BUILT_BODY = LearningPutRequest.model_construct(learnings=[])
PUT = WriteOp[LearningPutRequest](
    C.OP_LEARNING_PUT,
    Planner.put,
    _put_reply,
    claims=lambda b: [i.id for i in b.learnings if i.id is not None],
    home=_put_home,
)
OUTCOME = WriteOp[OutcomeRecordRequest](
    C.OP_OUTCOME_RECORD,
    Planner.outcome,
    _summed("applied", "ignored", "rated_before"),
    finds=lambda b: [a.learning_id for a in b.attributions],
    closes=lambda b: [b.injection_id] if b.injection_id is not None else [],
    sessions=lambda b: [b.session_id] if b.injection_id is None and b.session_id is not None else [],
)
RELATION = WriteOp[RelationPutRequest](
    C.OP_RELATION_PUT, Planner.relation, _empty, finds=lambda b: [b.from_id, b.to_id], curated=True
)
DELETE = WriteOp[LearningDeleteRequest](
    C.OP_LEARNING_DELETE,
    Planner.delete,
    lambda _, replies: {"deleted": any(r.get("deleted", False) for r in replies)},
    finds=lambda b: [b.id],
)
MAINTAIN = WriteOp[MaintainRequest](C.OP_MAINTAIN, Planner.maintain, _maintained)
RESTORE = WriteOp[RestoreRequest](C.OP_LEARNING_RESTORE, Planner.restore, _the_one, finds=lambda b: [b.id])
ARCHIVE = WriteOp[ArchiveRequest](
    C.OP_LEARNING_ARCHIVE, Planner.archive, lambda body, _: {"id": body.id}, finds=lambda b: [b.id], curated=True
)
PROMOTE = WriteOp[PromoteRequest](C.OP_LEARNING_PROMOTE, Planner.promote, _the_one, finds=lambda b: [b.id])
PROPOSE = WriteOp[ProposeRequest](C.OP_LEARNING_PROPOSE, Planner.propose, _the_one, finds=lambda b: [b.id])
DECIDE = WriteOp[ReviewDecideRequest](C.OP_REVIEW_DECIDE, Planner.decide, _the_one)
# Prepared on a reader thread (the choice, the file read), then written like any other write.
INJECT = WriteOp[InjectRecord](C.OP_INJECT_PREPARE, Planner.inject, lambda body, _: body.reply)
INJECTION_RECORD = WriteOp[InjectionRecordRequest](
    C.OP_INJECTION_RECORD,
    Planner.record_injection,
    _summed("counted"),
    finds=lambda b: b.learning_ids,
)
IMPORT = WriteOp[ImportRecord](
    C.OP_IMPORT, Planner.import_, _imported, finds=lambda b: [i.id for t in b.tiers for i in t.learnings]
)
# The embedding worker's vectors: internal only, never on the wire.
STORE_VECTORS = WriteOp[StoreVectors]("embedding.store", Planner.store_vectors, _empty, home=lambda b: b.tier)
# The near-duplicate thread's related_to relations, a tier's pairs to a write: internal only.
STORE_RELATED = WriteOp[StoreRelated]("related.store", Planner.store_related, _empty, home=lambda b: b.tier)

# The board: each in the tier of its working memory (write/boarding.py), answered by that tier's share.
MEMORY_CREATE = WriteOp[MemoryCreateRequest](C.OP_MEMORY_CREATE, boarding.create, _the_one)
MEMORY_UPDATE = WriteOp[MemoryUpdateRequest](C.OP_MEMORY_UPDATE, boarding.update, _the_one)
TASK_ADD = WriteOp[TaskAddRequest](C.OP_TASK_ADD, boarding.add, _the_one)
TASK_CLAIM = WriteOp[TaskClaimRequest](C.OP_TASK_CLAIM, boarding.claim, _the_one)
TASK_HEARTBEAT = WriteOp[TaskHeartbeatRequest](C.OP_TASK_HEARTBEAT, boarding.on_task, _the_one)
TASK_START = WriteOp[TaskStartRequest](C.OP_TASK_START, boarding.on_task, _the_one)
TASK_COMPLETE = WriteOp[TaskCompleteRequest](
    C.OP_TASK_COMPLETE,
    boarding.complete,
    boarding.completed,
    claims=lambda b: [i.id for i in b.result.learnings if i.id is not None],
)
TASK_FAIL = WriteOp[TaskFailRequest](C.OP_TASK_FAIL, boarding.on_task, _the_one)
TASK_RELEASE = WriteOp[TaskReleaseRequest](C.OP_TASK_RELEASE, boarding.on_task, _the_one)
TASK_REVIEW = WriteOp[TaskReviewRequest](C.OP_TASK_REVIEW, boarding.on_task, _the_one)
TASK_CANCEL = WriteOp[TaskCancelRequest](C.OP_TASK_CANCEL, boarding.on_task, _the_one)
TASK_PRIORITIZE = WriteOp[TaskPrioritizeRequest](C.OP_TASK_PRIORITIZE, boarding.on_task, _the_one)
DECISION_RECORD = WriteOp[DecisionRecordRequest](C.OP_DECISION_RECORD, boarding.record, _the_one)
DECISION_REVERSE = WriteOp[DecisionReverseRequest](C.OP_DECISION_REVERSE, boarding.reverse, _the_one)
ARTIFACT_RECORD = WriteOp[ArtifactRecordRequest](C.OP_ARTIFACT_RECORD, boarding.record, _the_one)
CHECKPOINT_RECORD = WriteOp[CheckpointRecordRequest](C.OP_CHECKPOINT_RECORD, boarding.record, _the_one)
MEMORY_NOTE = WriteOp[MemoryNoteRequest](C.OP_MEMORY_NOTE, boarding.record, _the_one)
NUDGE_SEND = WriteOp[NudgeSendRequest](C.OP_NUDGE_SEND, boarding.record, _the_one)
# a write: a poll marks what it delivers, so a resent poll gets the same nudges, not the next ones
NUDGE_POLL = WriteOp[NudgePollRequest](C.OP_NUDGE_POLL, boarding.poll, boarding.polled)
NUDGE_ACK = WriteOp[NudgeAckRequest](C.OP_NUDGE_ACK, boarding.ack, _summed("acked"))
# Lapsed leases of one tier, found between batches: internal only, never on the wire.
LEASES = WriteOp[LeaseExpiry]("task.expire", lambda p, b: {b.tier: BoardPart(b)}, _empty)
