"""One tier's board in memory: its working memories and task graphs, and which tasks are ready to claim.

Built from the stored rows when a board write first needs the tier, then changed only by the writer thread as
it applies board parts. What a batch changed is rendered into that batch's transaction (`take_dirty`). A
commit that fails has the batcher rebuild the board from what is stored, so it never keeps a change that did
not commit. Every method checks before it changes anything: a `Rejected` leaves the board as it was.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from typing import Any

from pydantic import BaseModel

from groove.coordinator.board.lifecycle import (
    ASSIGNED,
    BLOCKED,
    CANCELLED,
    COMPLETED,
    ENDS_DEPENDENTS,
    FINISHED,
    HELD,
    IN_PROGRESS,
    PENDING,
    REVIEW,
    move,
)
from groove.coordinator.board.moves import TaskMoves
from groove.coordinator.board.nudges import NudgeBox
from groove.coordinator.board.records import Records
from groove.coordinator.errors import Rejected
from groove.coordinator.store.relations import MEMORIES, TASKS, Relation
from groove.coordinator.store.tiers import Tier
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
    dependency_order,
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

Wire = dict[str, Any]
_TAKES_TASKS = ("active", "paused")  # a memory that may still be given tasks


class LeaseExpiry(BaseModel):
    """The coordinator's own write: lapsed leases of one tier go back to `pending` (never on the wire)."""

    tier: str
    gone: list[str] = []  # agents gone from the registry: their leases end now, whenever they would lapse


def _conflict(message: str) -> Rejected:
    return Rejected(ErrorCode.CONFLICT, message)


class Board(TaskMoves):
    """A tier's working memories and tasks."""

    def __init__(
        self, memories: list[Wire], tasks: list[Wire], records: Records | None = None, nudges: NudgeBox | None = None
    ) -> None:
        self.memories: dict[str, Wire] = {m["id"]: m for m in memories}
        self.records = records if records is not None else Records([], [])
        self.nudges = nudges if nudges is not None else NudgeBox([], [])
        self.tasks: dict[str, Wire] = {t["id"]: t for t in tasks}
        self.dependents: defaultdict[str, list[str]] = defaultdict(list)
        self.unmet: dict[str, int] = {}  # task -> dependencies not completed yet
        # (memory, role or None) -> heap of (-priority, seq, task id): pending tasks with every dependency
        # completed. Entries go stale when a task moves on; they are skipped when they come to the top.
        self._ready: dict[tuple[str, str | None], list[tuple[int, int, str]]] = {}
        self._leases: list[tuple[int, str]] = []  # (lease_until, task id), stale entries skipped likewise
        self.next_seq = 1 + max((t["seq"] for t in tasks), default=0)
        self._dirty_memories: set[str] = set()
        self._dirty_tasks: set[str] = set()
        # memory -> its tasks by status, kept as tasks move, and as of the last commit for readers (`memory.get`
        # counted 20,000 tasks in CozoDB each time, 80 % of a drained board's reads): a reader takes a published
        # map whole, and the writer replaces a memory's map after each commit that changed it
        self.counts: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self._dirty_counts: set[str] = set()
        for task in tasks:
            self.counts[task["memory_id"]][task["status"]] += 1
            for dep in task["depends_on"]:
                self.dependents[dep].append(task["id"])
        self.published: dict[str, dict[str, int]] = {memory_id: dict(n) for memory_id, n in self.counts.items()}
        for task in tasks:
            self.unmet[task["id"]] = sum(1 for dep in task["depends_on"] if self.tasks[dep]["status"] != COMPLETED)
            self._queue(task)
            if task["status"] in HELD and task["lease_until"] is not None:
                heapq.heappush(self._leases, (task["lease_until"], task["id"]))

    @classmethod
    def load(cls, tier: Tier) -> Board:
        """The board as stored in `tier`."""
        memories = [MEMORIES.wire(row) for row in tier.run(MEMORIES.scan())]
        tasks = [TASKS.wire(row) for row in tier.run(TASKS.scan())]
        return cls(memories, tasks, Records.load(tier), NudgeBox.load(tier))

    def take_dirty(self) -> list[tuple[Relation, list[list[Any]]]]:
        """The rows changed since the last call, per relation, to commit."""
        rows = [
            (MEMORIES, [MEMORIES.row(self.memories[mid]) for mid in sorted(self._dirty_memories)]),
            (TASKS, [TASKS.row(self.tasks[tid]) for tid in sorted(self._dirty_tasks)]),
        ]
        self._dirty_memories.clear()
        self._dirty_tasks.clear()
        return rows + self.records.take_dirty() + self.nudges.take_dirty()

    def publish(self) -> None:
        """What was committed is now what readers count (the writer calls it after each commit to the tier)."""
        for memory_id in self._dirty_counts:
            self.published[memory_id] = {status: n for status, n in self.counts[memory_id].items() if n}
        self._dirty_counts.clear()

    def apply(self, body: BaseModel, ids: list[str], now: int) -> Wire:
        """Apply one board request (with the ids planning chose for what it makes); returns the reply."""
        match body:
            case MemoryCreateRequest():
                return self._create(body, ids[0], now)
            case MemoryUpdateRequest():
                return self._update(body, now)
            case TaskAddRequest():
                return self._add(body, ids, now)
            case TaskClaimRequest():
                return self._claim(body, now)
            case TaskHeartbeatRequest():
                task = self._held(body.task_id, body.agent_id, now)
                return {"lease_until": self._lease(task, body.lease_ms or task["lease_ms"], now)}
            case TaskStartRequest():
                task = self._held(body.task_id, body.agent_id, now)
                if task["started_at"] is None:
                    task["started_at"] = now
                return {"status": self._set(task, IN_PROGRESS, now)}
            case TaskCompleteRequest():
                return self._complete(body, now)
            case TaskFailRequest():
                task = self._held(body.task_id, body.agent_id, now)
                return self._retry_or_fail(task, body.error, body.retry, now)
            case TaskReleaseRequest():  # given back untried: no attempt counted
                task = self._held(body.task_id, body.agent_id, now)
                task["last_error"] = body.reason or f"released by {body.agent_id!r}"
                self._release(task)
                self._requeue(task, now)
                return {"status": task["status"], "attempts": task["attempts"]}
            case TaskReviewRequest():
                return self._review(body, now)
            case TaskCancelRequest():
                return self._cancel(body, now)
            case TaskPrioritizeRequest():
                task = self.task(body.task_id)
                if task["status"] in FINISHED:
                    raise _conflict(f"task {body.task_id!r} is {task['status']} already")
                task["priority"] = body.priority
                self._touch(task, now)
                self._queue(task)  # its entry at the old priority goes stale
                return {"status": task["status"]}
            case DecisionRecordRequest():
                self._in_memory(body.memory_id, [body.task_id] if body.task_id else [], "task_id")
                self._in_memory(body.memory_id, body.affects_tasks, "affects_tasks")
                return self.records.decide(body, ids[0], now)
            case DecisionReverseRequest():
                return self.records.reverse(body, now)
            case ArtifactRecordRequest():
                self._in_memory(body.memory_id, [body.task_id], "task_id")
                return self.records.artifact(body, ids[0], now)
            case CheckpointRecordRequest():
                self._in_memory(body.memory_id, [body.task_id] if body.task_id else [], "task_id")
                return self.records.checkpoint(body, ids[0], now)
            case MemoryNoteRequest():
                self._in_memory(body.memory_id, [body.task_id] if body.task_id else [], "task_id")
                return self.records.note(body, ids[0], now)
            case NudgeSendRequest():
                self.memory(body.memory_id)
                return self.nudges.send(body, ids[0], now)
            case NudgePollRequest():
                return self.nudges.poll(body)
            case NudgeAckRequest():
                return self.nudges.ack(body, now)
            case LeaseExpiry():
                return {"expired": self.expire(now), "released": self.release(set(body.gone), now)}
            case _:
                raise TypeError(f"not a board request: {type(body).__name__}")

    # --- lookups -------------------------------------------------------------------------------------

    def memory(self, memory_id: str) -> Wire:
        """The working memory `memory_id`; Rejected `not_found` if this tier has none."""
        memory = self.memories.get(memory_id)
        if memory is None:
            raise Rejected(ErrorCode.NOT_FOUND, f"no working memory {memory_id}")
        return memory

    def task(self, task_id: str) -> Wire:
        """The task `task_id`; Rejected `not_found` if this tier has none."""
        task = self.tasks.get(task_id)
        if task is None:
            raise Rejected(ErrorCode.NOT_FOUND, f"no task {task_id!r}")
        return task

    def _in_memory(self, memory_id: str, task_ids: list[str], field: str) -> None:
        """Rejected `not_found` without the memory, `bad_request` for a task that is not one of its own."""
        self.memory(memory_id)
        for tid in task_ids:
            if self.tasks.get(tid, {}).get("memory_id") != memory_id:
                raise Rejected(ErrorCode.BAD_REQUEST, f"{field}: no task {tid!r} in working memory {memory_id}")

    def _held(self, task_id: str, agent_id: str, now: int) -> Wire:
        """The task, if `agent_id` holds its lease now; Rejected `conflict` otherwise."""
        task = self.task(task_id)
        if task["status"] not in HELD or task["assigned_to"] != agent_id:
            holder = f" (held by {task['assigned_to']!r})" if task["status"] in HELD else ""
            raise _conflict(f"task {task_id!r} is {task['status']}{holder}, not held by {agent_id!r}")
        if task["lease_until"] <= now:
            raise _conflict(f"the lease of {agent_id!r} on task {task_id!r} has lapsed; the task goes back to pending")
        return task

    def _create(self, body: MemoryCreateRequest, memory_id: str, now: int) -> Wire:
        fields = body.model_dump()
        self.memories[memory_id] = {
            "id": memory_id,
            **fields,
            "status": "active",
            "created_at": now,
            "updated_at": now,
            "completed_at": None,
        }
        self._dirty_memories.add(memory_id)
        return {"id": memory_id}

    def _update(self, body: MemoryUpdateRequest, now: int) -> Wire:
        memory = self.memory(body.id)
        memory.update(status=body.status, updated_at=now)
        if body.status == "completed" and memory["completed_at"] is None:
            memory["completed_at"] = now
        self._dirty_memories.add(body.id)
        return {"status": body.status}

    def _add(self, body: TaskAddRequest, ids: list[str], now: int) -> Wire:
        memory = self.memory(body.memory_id)
        if memory["status"] not in _TAKES_TASKS:
            raise _conflict(f"working memory {body.memory_id} is {memory['status']}: it takes no more tasks")
        new = dict(zip(ids, body.tasks, strict=True))
        if len(new) != len(ids):
            raise Rejected(ErrorCode.BAD_REQUEST, "tasks: the same id appears more than once in one request")
        for index, (tid, item) in enumerate(new.items()):
            if tid in self.tasks:
                raise _conflict(f"tasks.{index}.id: task {tid!r} exists already")
            for dep in item.depends_on:
                known = dep in new or self.tasks.get(dep, {}).get("memory_id") == body.memory_id
                if not known:
                    raise Rejected(ErrorCode.BAD_REQUEST, f"tasks.{index}.depends_on: no task {dep!r} in this memory")
        _check_acyclic({tid: [d for d in item.depends_on if d in new] for tid, item in new.items()})
        for tid, item in new.items():
            blocked = any(self.tasks.get(d, {}).get("status") in ENDS_DEPENDENTS for d in item.depends_on)
            self.tasks[tid] = {
                "id": tid,
                "memory_id": body.memory_id,
                "seq": self.next_seq,
                **item.model_dump(exclude={"id"}),
                "status": move(None, BLOCKED if blocked else PENDING),
                "assigned_to": None,
                "assigned_at": None,
                "lease_ms": None,
                "lease_until": None,
                "started_at": None,
                "completed_at": None,
                "attempts": 0,
                "last_error": None,
                "result": None,
                "review_status": None,
                "reviewed_by": None,
                "review_comments": None,
                "created_at": now,
                "updated_at": now,
            }
            self.next_seq += 1
            self._dirty_tasks.add(tid)
            self._count(self.tasks[tid], None, self.tasks[tid]["status"])
            for dep in item.depends_on:
                self.dependents[dep].append(tid)
        for tid, item in new.items():
            self.unmet[tid] = sum(1 for d in item.depends_on if self.tasks[d]["status"] != COMPLETED)
            self._queue(self.tasks[tid])
        return {"ids": ids}

    def _claim(self, body: TaskClaimRequest, now: int) -> Wire:
        if self.memory(body.memory_id)["status"] != "active":
            return {"task": None}
        best: tuple[tuple[int, int, str], list[tuple[int, int, str]]] | None = None
        roles = (None, body.role) if body.role is not None else (None,)
        for role in roles:
            heap = self._ready.get((body.memory_id, role))
            while heap and not self._claimable(heap[0]):
                heapq.heappop(heap)
            if heap and (best is None or heap[0] < best[0]):
                best = (heap[0], heap)
        if best is None:
            return {"task": None}
        heapq.heappop(best[1])
        task = self.tasks[best[0][2]]
        task.update(assigned_to=body.agent_id, assigned_at=now, started_at=None)
        self._lease(task, body.lease_ms, now)
        self._set(task, ASSIGNED, now)
        return {"task": dict(task)}

    def _claimable(self, entry: tuple[int, int, str]) -> bool:
        task = self.tasks[entry[2]]
        return task["status"] == PENDING and self.unmet[task["id"]] == 0 and task["priority"] == -entry[0]

    def _complete(self, body: TaskCompleteRequest, now: int) -> Wire:
        task = self._held(body.task_id, body.agent_id, now)
        result = body.result.model_dump(exclude={"learnings"})
        task["result"] = result | {"learnings": len(body.result.learnings)}
        self._release(task)
        reply = {"status": self._set(task, REVIEW, now) if task["needs_review"] else self._finish(task, now)}
        if body.next is not None:
            claim = TaskClaimRequest(
                memory_id=task["memory_id"], agent_id=body.agent_id, role=body.next.role, lease_ms=body.next.lease_ms
            )
            reply["next"] = self._claim(claim, now)["task"]
        return reply

    def _review(self, body: TaskReviewRequest, now: int) -> Wire:
        task = self.task(body.task_id)
        if task["status"] != REVIEW:
            raise _conflict(f"task {body.task_id!r} is {task['status']}, not in review")
        task.update(review_status=body.status, reviewed_by=body.reviewer, review_comments=body.comments)
        if body.status == "approved":
            return {"status": self._finish(task, now)}
        if body.status == "needs_rework":
            self._requeue(task, now)
        else:
            self._fail(task, now)
        return {"status": task["status"]}

    def _cancel(self, body: TaskCancelRequest, now: int) -> Wire:
        task = self.task(body.task_id)
        if task["status"] in FINISHED:
            raise _conflict(f"task {body.task_id!r} is {task['status']} already")
        self._release(task)
        self._fail(task, now, CANCELLED)
        return {"status": CANCELLED}


def _check_acyclic(edges: dict[str, list[str]]) -> None:
    """Rejected `bad_request` if the new tasks' dependencies among themselves form a cycle (existing tasks
    cannot depend on new ones, so a cycle lies among these)."""
    tids = list(edges)
    index = {tid: i for i, tid in enumerate(tids)}
    _, stuck = dependency_order([[index[dep] for dep in edges[tid]] for tid in tids])
    cycle = sorted(tids[i] for i in stuck)
    if cycle:
        more = " ..." if len(cycle) > 5 else ""
        raise Rejected(ErrorCode.BAD_REQUEST, f"tasks: dependencies form a cycle among {', '.join(cycle[:5])}{more}")
