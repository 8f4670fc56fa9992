"""Planning board requests (coordinator/board): each goes to the tier of its working memory.

A memory lives in its project's tier; a task in its memory's. `task.complete` also carries the result's
learnings: those of the memory's tier commit in the same transaction as the completion, the others in
their own tiers (atomic per tier, as `learning.put` is).
"""

from __future__ import annotations

from typing import Any

from groove.coordinator.board.nudges import order
from groove.coordinator.errors import Rejected
from groove.coordinator.write.parts import BoardPart, Part, PutPart
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
from groove.protocol.errors import ErrorCode
from groove.protocol.ids import uuid7
from groove.protocol.models import LearningPutRequest

Recorded = (
    DecisionRecordRequest | ArtifactRecordRequest | CheckpointRecordRequest | NudgeSendRequest | MemoryNoteRequest
)

TaskRequest = (
    TaskHeartbeatRequest | TaskStartRequest | TaskFailRequest | TaskReleaseRequest | TaskReviewRequest
    | TaskCancelRequest | TaskPrioritizeRequest
)  # fmt: skip


def create(planner: Planner, body: MemoryCreateRequest) -> dict[str, Part]:
    """`memory.create`: in the project's tier, made if new."""
    tier = planner.tiers.get(C.TIER_PROJECT_PREFIX + body.project, create=True)
    assert tier is not None  # create=True yields a tier or raises
    return {tier.name: BoardPart(body, [uuid7()])}


def update(planner: Planner, body: MemoryUpdateRequest) -> dict[str, Part]:
    """`memory.update`: in the memory's tier."""
    return {planner.boards.memory_tier(body.id).name: BoardPart(body)}


def add(planner: Planner, body: TaskAddRequest) -> dict[str, Part]:
    """`task.add`: new ids for the tasks that give none; a given id must be new to every tier."""
    tier = planner.boards.memory_tier(body.memory_id)
    ids = [task.id or uuid7() for task in body.tasks]
    for index, task in enumerate(body.tasks):
        if task.id is None:
            continue
        holder = planner.boards.task_tier(task.id)
        if holder is not None and holder.name != tier.name:
            raise Rejected(ErrorCode.CONFLICT, f"tasks.{index}.id: task {task.id!r} exists already")
    return {tier.name: BoardPart(body, ids)}


def record(planner: Planner, body: Recorded) -> dict[str, Part]:
    """A decision, artifact, checkpoint, nudge or note: a new id, in the memory's tier."""
    return {planner.boards.memory_tier(body.memory_id).name: BoardPart(body, [uuid7()])}


def poll(planner: Planner, body: NudgePollRequest) -> dict[str, Part]:
    """`nudge.poll`: every tier that has something due for the agent (none: an empty reply)."""
    return {tier.name: BoardPart(body) for tier, board in planner.boards.every() if board.nudges.due(body)}


def ack(planner: Planner, body: NudgeAckRequest) -> dict[str, Part]:
    """`nudge.ack`: the tiers holding these nudges; Rejected `not_found` for an id no tier holds."""
    parts: dict[str, Part] = {}
    known: set[str] = set()
    for tier, board in planner.boards.every():
        here = {nid for nid in body.ids if nid in board.nudges.nudges}
        if here:
            parts[tier.name] = BoardPart(body)
            known |= here
    unknown = [nid for nid in body.ids if nid not in known]
    if unknown:
        raise Rejected(
            ErrorCode.NOT_FOUND, f"no nudge {unknown[0]}" + (f" (and {len(unknown) - 1} more)" if unknown[1:] else "")
        )
    return parts


def polled(_: NudgePollRequest, replies: list[dict[str, Any]]) -> dict[str, Any]:
    """Every tier's nudges, highest priority first."""
    return {"nudges": order([n for reply in replies for n in reply["nudges"]])}


def reverse(planner: Planner, body: DecisionReverseRequest) -> dict[str, Part]:
    """`decision.reverse`: in the decision's tier."""
    return {planner.boards.decision_tier(body.id).name: BoardPart(body)}


def claim(planner: Planner, body: TaskClaimRequest) -> dict[str, Part]:
    """`task.claim`: in the memory's tier."""
    return {planner.boards.memory_tier(body.memory_id).name: BoardPart(body)}


def on_task(planner: Planner, body: TaskRequest) -> dict[str, Part]:
    """A request about one task: in the task's tier."""
    return {_task_tier(planner, body.task_id): BoardPart(body)}


def complete(planner: Planner, body: TaskCompleteRequest) -> dict[str, Part]:
    """`task.complete`: the completion, with the result's learnings (their source the task) by tier."""
    holder = planner.boards.task_tier(body.task_id)
    if holder is None:
        raise Rejected(ErrorCode.NOT_FOUND, f"no task {body.task_id!r}")
    tier = holder.name
    memory_id = planner.boards.get(holder).tasks[body.task_id]["memory_id"]
    source = {"type": C.SOURCE_TASK, "task_id": body.task_id, "memory_id": memory_id, "agent_id": body.agent_id}
    learnings = [item.model_copy(update={"source": source}) for item in body.result.learnings]
    parts: dict[str, Part] = {}
    if learnings:
        parts.update(planner.put(LearningPutRequest.model_construct(learnings=learnings, tier=None)))
    board = BoardPart(body)
    here = parts.pop(tier, None)
    if isinstance(here, PutPart):
        board.put = here
    return {tier: board, **parts}


def _task_tier(planner: Planner, task_id: str) -> str:
    tier = planner.boards.task_tier(task_id)
    if tier is None:
        raise Rejected(ErrorCode.NOT_FOUND, f"no task {task_id!r}")
    return tier.name


def completed(body: TaskCompleteRequest, replies: list[dict[str, Any]]) -> dict[str, Any]:
    """The completion's status and its learnings' ids in request order, from every tier's share."""
    ids: list[str | None] = [None] * len(body.result.learnings)
    combined: dict[str, Any] = {}
    for reply in replies:
        combined.update((key, reply[key]) for key in ("status", "next") if key in reply)
        for index, lid in zip(reply.get("idx", ()), reply.get("ids", ()), strict=True):
            ids[index] = lid
    return combined | {"learning_ids": ids}
