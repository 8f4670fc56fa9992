"""Every write operation, planned against real temp tiers (no sockets): the parts go to the tiers they should,
and the batcher's combined reply is what the operation's reply model accepts.

A write op added to `coordinator/write/ops.py` without a case here fails `test_every_write_op_has_a_case`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from groove.coordinator.board.state import LeaseExpiry
from groove.coordinator.errors import Rejected
from groove.coordinator.loop.injection import InjectRecord
from groove.coordinator.loop.lifecycle import MaintainPart, RestorePart
from groove.coordinator.store.records import vector_blob
from groove.coordinator.write import ops
from groove.coordinator.write.bodies import ImportRecord, StoreRelated, StoreVectors
from groove.coordinator.write.ops import WriteOp
from groove.coordinator.write.parts import (
    BoardPart,
    DecidePart,
    DeletePart,
    EmbedPart,
    ImportPart,
    InjectPart,
    OutcomePart,
    Part,
    PromotePart,
    ProposePart,
    PutPart,
    RelatedPart,
    RelationPart,
)
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
from groove.protocol.ids import uuid7
from groove.protocol.loop import ArchiveRequest, InjectionRecordRequest, MaintainRequest, RestoreRequest
from groove.protocol.models import (
    LearningDeleteRequest,
    LearningPutRequest,
    OutcomeRecordRequest,
    RelationPutRequest,
)
from groove.protocol.ops import OPS
from groove.protocol.portability import ExportFile
from tests.coordinator.harness import NOW, Harness
from tests.helpers import learning

PROJECT = "project:/srv/api"


class World(Harness):
    """Temp tiers with a project learning and a user-tier learning, and a batcher to commit through."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__(data_dir)
        self.project_id, self.user_id = self.write(
            ops.PUT, LearningPutRequest.model_validate({"learnings": [learning(PROJECT, 1), learning("global", 2)]})
        )["ids"]

    def plan(self, op: WriteOp[Any], body: BaseModel) -> dict[str, Part]:
        planner = Planner(self.tiers, NOW, list(op.finds(body)), list(op.claims(body)), list(op.closes(body)))
        return op.plan(planner, body)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    built = World(tmp_path)
    yield built
    built.tiers.close()


def _put(w: World) -> tuple[BaseModel, dict[str, type]]:
    body = LearningPutRequest.model_validate({"learnings": [learning(PROJECT, 3), learning("user:alex", 4)]})
    return body, {PROJECT: PutPart, C.TIER_USER: PutPart}


def _outcome(w: World) -> tuple[BaseModel, dict[str, type]]:
    body = OutcomeRecordRequest(attributions=[{"learning_id": w.project_id, "outcome": "helpful"}])  # type: ignore[list-item]
    return body, {PROJECT: OutcomePart}


def _relation(w: World) -> tuple[BaseModel, dict[str, type]]:
    # a supersedes across tiers: stored in the newer's tier, the older demoted in its own
    body = RelationPutRequest(from_id=w.user_id, relation_type="supersedes", to_id=w.project_id)
    return body, {C.TIER_USER: RelationPart, PROJECT: RelationPart}


def _delete(w: World) -> tuple[BaseModel, dict[str, type]]:
    return LearningDeleteRequest(id=w.project_id), {PROJECT: DeletePart, C.TIER_USER: DeletePart}


def _maintain(w: World) -> tuple[BaseModel, dict[str, type]]:
    return MaintainRequest(now=NOW), {PROJECT: MaintainPart, C.TIER_USER: MaintainPart}


def _restore(w: World) -> tuple[BaseModel, dict[str, type]]:
    w.write(ops.MAINTAIN, MaintainRequest(now=NOW + 100 * C.DAY_MS))  # unused for 100 days: archived
    return RestoreRequest(id=w.project_id), {PROJECT: RestorePart}


def _archive(w: World) -> tuple[BaseModel, dict[str, type]]:
    return ArchiveRequest(id=w.project_id, reason="stale"), {PROJECT: MaintainPart}


def _promote(w: World) -> tuple[BaseModel, dict[str, type]]:
    return PromoteRequest(id=w.project_id), {C.TIER_USER: PromotePart}


def _propose(w: World) -> tuple[BaseModel, dict[str, type]]:
    return ProposeRequest(id=w.project_id, org="acme"), {"enterprise:acme": ProposePart}


def _decide(w: World) -> tuple[BaseModel, dict[str, type]]:
    review = w.write(ops.PROPOSE, ProposeRequest(id=w.project_id, org="acme"))["review_id"]
    body = ReviewDecideRequest(org="acme", review_id=review, decision="approve", curator="dana")
    return body, {"enterprise:acme": DecidePart}


def _inject(w: World) -> tuple[BaseModel, dict[str, type]]:
    reply = {"injection_id": uuid7(), "learnings": [], "markdown": "", "params": {}}
    body = InjectRecord(
        injection_id=reply["injection_id"],
        session_id="s-1",
        learnings=[(w.project_id, PROJECT)],
        had_task=False,
        params={},
        reply=reply,
    )
    return body, {PROJECT: InjectPart, C.TIER_USER: InjectPart}


def _inject_chosen_elsewhere(w: World) -> tuple[BaseModel, dict[str, type]]:
    return InjectionRecordRequest(injection_id=uuid7(), learning_ids=[w.project_id, uuid7()]), {PROJECT: InjectPart}


def _import(w: World) -> tuple[BaseModel, dict[str, type]]:
    lid = uuid7()
    usage = {"times_injected": 0, "times_helpful": 0, "times_ignored": 0, "times_contradicted": 0}
    exported = {
        "id": lid,
        "scope": "project:/srv/web",
        "category": "solution",
        "description": "imported",
        "insight": "from another coordinator",
        "confidence": 0.5,
        "source": {"type": "imported"},
        "created_at": 1,
        "updated_at": 2,
        "usage": usage | {"last_used": None, "confidence_alpha": 1.0, "confidence_beta": 1.0},
    }
    relation = {"from_id": lid, "relation_type": "related_to", "to_id": w.project_id, "weight": 0.5, "created_at": 3}
    tier = {"tier": "project:/srv/web", "learnings": [exported], "relations": [relation]}
    export = ExportFile.model_validate({"format": "groove-export", "version": 1, "exported_at": 4, "tiers": [tier]})
    return ImportRecord(tiers=export.tiers, embeds=False), {"project:/srv/web": ImportPart}


def _store_vectors(w: World) -> tuple[BaseModel, dict[str, type]]:
    return StoreVectors(tier=PROJECT, rows=[(w.project_id, vector_blob([1.0] + [0.0] * 383))]), {PROJECT: EmbedPart}


def _store_related(w: World) -> tuple[BaseModel, dict[str, type]]:
    return StoreRelated(tier=PROJECT, pairs=[(uuid7(), w.project_id, 0.95)]), {PROJECT: RelatedPart}


def _memory(w: World) -> str:
    """A working memory of PROJECT with task `t1` (needs review) claimed by `a1` and `t2` pending."""
    body = MemoryCreateRequest(project="/srv/api", name="n", goal="g")
    memory: str = w.write(ops.MEMORY_CREATE, body)["id"]
    tasks = [{"id": "t1", "title": "one", "needs_review": True, "priority": 1}, {"id": "t2", "title": "two"}]
    w.write(ops.TASK_ADD, TaskAddRequest.model_validate({"memory_id": memory, "tasks": tasks}))
    w.write(ops.TASK_CLAIM, TaskClaimRequest(memory_id=memory, agent_id="a1", lease_ms=60_000))
    return memory


def _board(make: Callable[[World, str], BaseModel]) -> Callable[[World], tuple[BaseModel, dict[str, type]]]:
    def case(w: World) -> tuple[BaseModel, dict[str, type]]:
        return make(w, _memory(w)), {PROJECT: BoardPart}

    return case


def _complete(w: World) -> tuple[BaseModel, dict[str, type]]:
    _memory(w)
    result = {"summary": "done", "learnings": [learning(PROJECT, 7), learning("global", 8)]}
    body = TaskCompleteRequest.model_validate({"task_id": "t1", "agent_id": "a1", "result": result})
    return body, {PROJECT: BoardPart, C.TIER_USER: PutPart}


def _review(w: World) -> tuple[BaseModel, dict[str, type]]:
    _complete(w)
    w.write(
        ops.TASK_COMPLETE,
        TaskCompleteRequest.model_validate({"task_id": "t1", "agent_id": "a1", "result": {"summary": "s"}}),
    )
    return TaskReviewRequest(task_id="t1", reviewer="lead", status="approved"), {PROJECT: BoardPart}


def _nudged(make: Callable[[World, str], BaseModel]) -> Callable[[World], tuple[BaseModel, dict[str, type]]]:
    def case(w: World) -> tuple[BaseModel, dict[str, type]]:
        body = NudgeSendRequest(target="a1", memory_id=_memory(w), message="m", created_by="lead")
        return make(w, w.write(ops.NUDGE_SEND, body)["id"]), {PROJECT: BoardPart}

    return case


def _reverse(w: World) -> tuple[BaseModel, dict[str, type]]:
    memory = _memory(w)
    body = DecisionRecordRequest(memory_id=memory, question="q", choice="c", rationale="r", made_by="a1")
    decision = w.write(ops.DECISION_RECORD, body)["id"]
    return DecisionReverseRequest(id=decision, reversed_by="lead"), {PROJECT: BoardPart}


CASES: dict[str, Callable[[World], tuple[BaseModel, dict[str, type]]]] = {
    "MEMORY_CREATE": lambda w: (MemoryCreateRequest(project="/srv/api", name="n", goal="g"), {PROJECT: BoardPart}),
    "MEMORY_UPDATE": _board(lambda w, m: MemoryUpdateRequest(id=m, status="paused")),
    "TASK_ADD": _board(lambda w, m: TaskAddRequest.model_validate({"memory_id": m, "tasks": [{"title": "x"}]})),
    "TASK_CLAIM": _board(lambda w, m: TaskClaimRequest(memory_id=m, agent_id="a2", lease_ms=1000)),
    "TASK_HEARTBEAT": _board(lambda w, m: TaskHeartbeatRequest(task_id="t1", agent_id="a1")),
    "TASK_START": _board(lambda w, m: TaskStartRequest(task_id="t1", agent_id="a1")),
    "TASK_COMPLETE": _complete,
    "TASK_FAIL": _board(lambda w, m: TaskFailRequest(task_id="t1", agent_id="a1", error="e")),
    "TASK_RELEASE": _board(lambda w, m: TaskReleaseRequest(task_id="t1", agent_id="a1", reason="stopping")),
    "TASK_REVIEW": _review,
    "TASK_CANCEL": _board(lambda w, m: TaskCancelRequest(task_id="t2")),
    "TASK_PRIORITIZE": _board(lambda w, m: TaskPrioritizeRequest(task_id="t2", priority=7)),
    "LEASES": _board(lambda w, m: LeaseExpiry(tier=PROJECT)),
    "DECISION_RECORD": _board(
        lambda w, m: DecisionRecordRequest(memory_id=m, question="q", choice="c", rationale="r", made_by="a1")
    ),
    "DECISION_REVERSE": _reverse,
    "NUDGE_SEND": _board(lambda w, m: NudgeSendRequest(target="a1", memory_id=m, message="m", created_by="lead")),
    "NUDGE_POLL": _nudged(lambda w, n: NudgePollRequest(agent_id="a1")),
    "NUDGE_ACK": _nudged(lambda w, n: NudgeAckRequest(agent_id="a1", ids=[n])),
    "ARTIFACT_RECORD": _board(
        lambda w, m: ArtifactRecordRequest(
            memory_id=m, task_id="t1", type="code", path="a.py", checksum="x", created_by="a1"
        )
    ),
    "CHECKPOINT_RECORD": _board(
        lambda w, m: CheckpointRecordRequest(memory_id=m, agent_id="a1", branch="b", commit="c", worktree_path="/w")
    ),
    "MEMORY_NOTE": _board(lambda w, m: MemoryNoteRequest(memory_id=m, content="the sandbox is slow", kind="discovery")),
    "PUT": _put,
    "OUTCOME": _outcome,
    "RELATION": _relation,
    "DELETE": _delete,
    "MAINTAIN": _maintain,
    "RESTORE": _restore,
    "ARCHIVE": _archive,
    "PROMOTE": _promote,
    "PROPOSE": _propose,
    "DECIDE": _decide,
    "INJECT": _inject,
    "INJECTION_RECORD": _inject_chosen_elsewhere,
    "IMPORT": _import,
    "STORE_VECTORS": _store_vectors,
    "STORE_RELATED": _store_related,
}


def test_every_write_op_has_a_case() -> None:
    declared = {name for name, value in vars(ops).items() if isinstance(value, WriteOp)}
    assert declared == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_write_is_planned_into_its_tiers_and_its_reply_is_well_formed(world: World, name: str) -> None:
    op: WriteOp[Any] = getattr(ops, name)
    body, expected = CASES[name](world)
    parts = world.plan(op, body)
    assert {tier: type(part) for tier, part in parts.items()} == expected
    reply = world.write(op, body)
    if op.name in OPS:  # the internal embedding.store has no wire reply
        OPS[op.name].reply.model_validate(reply)


def test_planning_rejects_what_cannot_apply_before_anything_is_written(world: World) -> None:
    unknown = uuid7()
    cases: list[tuple[WriteOp[Any], BaseModel]] = [
        (ops.OUTCOME, OutcomeRecordRequest(attributions=[{"learning_id": unknown, "outcome": "helpful"}])),  # type: ignore[list-item]
        (ops.RELATION, RelationPutRequest(from_id=world.project_id, relation_type="related_to", to_id=unknown)),
        (ops.RESTORE, RestoreRequest(id=world.project_id)),  # not archived
        (ops.PROMOTE, PromoteRequest(id=world.user_id)),  # not a project learning
    ]
    for op, body in cases:
        with pytest.raises(Rejected):
            world.plan(op, body)
