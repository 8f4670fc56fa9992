"""The swarm's board on the wire (protocol version 1): working memories and their task graphs.

A working memory is a goal for one project with the tasks that reach it. Tasks depend on tasks, are claimed
by agents under a lease, and end completed (after a review, if they need one), failed or cancelled.
PROTOCOL.md, section 9, has the state machine, the lease and retry rules and each operation's errors.
"""

from __future__ import annotations

import heapq
import re
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from groove.protocol import constants as C
from groove.protocol.models import Body, LearningIn, NonBlank, ProjectRoot, Reply, ShortText, UuidV7

_TASK_ID_RE = re.compile(r"[A-Za-z0-9._:-]+")


def _task_id(value: str) -> str:
    if not _TASK_ID_RE.fullmatch(value):
        raise ValueError(f"{value[:60]!r} is not a task id (letters, digits and . _ : - only)")
    return value


MemoryId = UuidV7
TaskId = Annotated[str, Field(min_length=1, max_length=C.MAX_TASK_ID_CHARS), AfterValidator(_task_id)]
BoardText = Annotated[str, Field(min_length=1, max_length=C.MAX_BOARD_TEXT_CHARS), NonBlank]
LeaseMs = Annotated[int, Field(ge=C.MIN_LEASE_MS, le=C.MAX_LEASE_MS)]


# --- working memories ----------------------------------------------------------------------------------


Priority = Annotated[int, Field(ge=-1_000_000, le=1_000_000)]  # higher is claimed first


class MemoryCreateRequest(Body):
    """`memory.create`: a goal for a project, with the constraints every task of it must respect."""

    project: ProjectRoot
    name: ShortText
    goal: BoardText
    constraints: Annotated[list[BoardText], Field(max_length=100)] = Field(default_factory=list)
    owner: ShortText | None = None
    max_attempts: Annotated[int, Field(ge=1, le=100)] = C.DEFAULT_MAX_ATTEMPTS


class IdReply(Reply):
    """The id of what was made."""

    id: str


class WorkingMemory(Reply):
    """A working memory; `tasks` counts its tasks by status (in `memory.get` and `memory.list`)."""

    id: str
    project: str
    name: str
    goal: str
    constraints: list[str]
    owner: str | None
    status: C.MemoryStatus
    max_attempts: int
    created_at: int
    updated_at: int
    completed_at: int | None
    tasks: dict[str, int] = Field(default_factory=dict)


class MemoryGetRequest(Body):
    """`memory.get`: one working memory."""

    id: MemoryId


class MemoryGetReply(Reply):
    """The working memory, with its task counts."""

    memory: WorkingMemory


class MemoryListRequest(Body):
    """`memory.list`: working memories, of one project and in one status if given; newest first."""

    project: ProjectRoot | None = None
    status: C.MemoryStatus | None = None


class MemoryListReply(Reply):
    """The working memories."""

    memories: list[WorkingMemory]


class MemoryUpdateRequest(Body):
    """`memory.update`: a working memory's status. Only an `active` one hands out tasks."""

    id: MemoryId
    status: C.MemoryStatus


class StatusReply(Reply):
    """The status something is in now."""

    status: str


# --- tasks ---------------------------------------------------------------------------------------------


class TaskIn(Body):
    """A task as a plan gives it. `depends_on` names tasks of the same request or already in the memory."""

    id: TaskId | None = None
    title: ShortText
    description: Annotated[str, Field(max_length=C.MAX_BOARD_TEXT_CHARS)] = ""
    depends_on: Annotated[list[TaskId], Field(max_length=C.MAX_DEPENDENCIES)] = Field(default_factory=list)
    priority: Priority = 0
    role: ShortText | None = None
    needs_review: bool = False


class TaskAddRequest(Body):
    """`task.add`: tasks for a working memory, all or none."""

    memory_id: MemoryId
    tasks: Annotated[list[TaskIn], Field(min_length=1, max_length=C.MAX_TASKS_PER_ADD)]


class TaskAddReply(Reply):
    """Each task's id, in request order."""

    ids: list[str]


class Task(Reply):
    """A task as stored. `seq` orders tasks of equal priority (older first); `lease_until` is when an
    unrenewed claim lapses."""

    id: str
    memory_id: str
    seq: int
    title: str
    description: str
    status: C.TaskStatus
    priority: int
    role: str | None
    needs_review: bool
    depends_on: list[str]
    assigned_to: str | None
    assigned_at: int | None
    lease_ms: int | None
    lease_until: int | None
    started_at: int | None
    completed_at: int | None
    attempts: int
    last_error: str | None
    result: dict[str, Any] | None
    review_status: str | None
    reviewed_by: str | None
    review_comments: str | None
    created_at: int
    updated_at: int


class TaskClaimRequest(Body):
    """`task.claim`: the best ready task of the memory for this agent, under a lease."""

    memory_id: MemoryId
    agent_id: ShortText
    role: ShortText | None = None
    lease_ms: LeaseMs


class TaskClaimReply(Reply):
    """The claimed task, or null when none is ready."""

    task: Task | None


class TaskHeartbeatRequest(Body):
    """`task.heartbeat`: the lease holder extends its lease (by `lease_ms`, or by the claim's)."""

    task_id: TaskId
    agent_id: ShortText
    lease_ms: LeaseMs | None = None


class LeaseReply(Reply):
    """When the lease lapses now."""

    lease_until: int


class TaskStartRequest(Body):
    """`task.start`: the lease holder says work began (`in_progress`); optional."""

    task_id: TaskId
    agent_id: ShortText


class TaskResult(Body):
    """What a task produced. Its learnings are stored as learnings whose source is the task."""

    summary: BoardText
    artifacts: Annotated[list[ShortText], Field(max_length=100)] = Field(default_factory=list)
    next_steps: Annotated[list[BoardText], Field(max_length=100)] = Field(default_factory=list)
    learnings: Annotated[list[LearningIn], Field(max_length=C.MAX_LEARNINGS_PER_PUT)] = Field(default_factory=list)


class NextClaim(Body):
    """With `task.complete`: claim the memory's next ready task in the same write, as `task.claim` would."""

    lease_ms: LeaseMs
    role: ShortText | None = None


class TaskCompleteRequest(Body):
    """`task.complete`: the lease holder's result (and, with `next`, its next task: one round trip, not two)."""

    task_id: TaskId
    agent_id: ShortText
    result: TaskResult
    next: NextClaim | None = None


class TaskCompleteReply(Reply):
    """`completed`, or `review` for a task that needs one; the ids of the result's learnings, in order; with
    `next` asked for, the task claimed next (null when none is ready)."""

    status: str
    learning_ids: list[str]
    next: Task | None = None


class TaskFailRequest(Body):
    """`task.fail`: the lease holder gives up; with `retry` the task goes back to `pending` while attempts are
    left."""

    task_id: TaskId
    agent_id: ShortText
    error: BoardText
    retry: bool = True


class TaskFailReply(Reply):
    """`pending` (to be tried again) or `failed`, and the attempts counted so far."""

    status: str
    attempts: int


class TaskReleaseRequest(Body):
    """`task.release`: the lease holder gives the task back untried (it is stopping): `pending` again, no attempt
    counted."""

    task_id: TaskId
    agent_id: ShortText
    reason: BoardText | None = None


class TaskReviewRequest(Body):
    """`task.review`: a verdict on a task in `review`."""

    task_id: TaskId
    reviewer: ShortText
    status: C.TaskReview
    comments: BoardText | None = None


class TaskCancelRequest(Body):
    """`task.cancel`: a task not yet finished will not be done; its dependents are blocked."""

    task_id: TaskId


class TaskPrioritizeRequest(Body):
    """`task.prioritize`: a task not yet finished gets a new priority; claims follow it from now on."""

    task_id: TaskId
    priority: Priority


class TaskGetRequest(Body):
    """`task.get`: one task."""

    id: TaskId


class TaskGetReply(Reply):
    """The task."""

    task: Task


class TaskListRequest(Body):
    """`task.list`: a memory's tasks, in one status or held by one agent if given; by priority, then age."""

    memory_id: MemoryId
    status: C.TaskStatus | None = None
    assigned_to: ShortText | None = None
    limit: Annotated[int, Field(ge=1, le=C.MAX_TASK_LIST)] = C.MAX_TASK_LIST


class TaskListReply(Reply):
    """The tasks."""

    tasks: list[Task]


def dependency_order(waits_on: list[list[int]]) -> tuple[list[int], list[int]]:
    """Tasks by index, each after the tasks it waits on (`waits_on[i]`: indexes of the same list), in list order
    wherever that already holds; and the tasks a cycle holds back (empty without one). The client orders a plan
    with it, the coordinator checks a `task.add` with it."""
    waiting = [len(deps) for deps in waits_on]
    after: dict[int, list[int]] = {}
    for task, deps in enumerate(waits_on):
        for dep in deps:
            after.setdefault(dep, []).append(task)
    ready = [task for task, n in enumerate(waiting) if n == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        task = heapq.heappop(ready)
        order.append(task)
        for nxt in after.get(task, []):
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                heapq.heappush(ready, nxt)
    return order, [task for task, n in enumerate(waiting) if n > 0]
