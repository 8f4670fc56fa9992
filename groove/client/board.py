"""The board's client methods (working memories and tasks), mixed into `GrooveClient`."""

from __future__ import annotations

from typing import Any

from groove.client.calls import Call, Steps, operation
from groove.protocol import constants as C
from groove.protocol.board import (
    IdReply,
    LeaseReply,
    MemoryGetReply,
    MemoryListReply,
    StatusReply,
    Task,
    TaskAddReply,
    TaskClaimReply,
    TaskCompleteReply,
    TaskFailReply,
    TaskGetReply,
    TaskListReply,
    WorkingMemory,
    dependency_order,
)
from groove.protocol.boardrecords import (
    Artifact,
    ArtifactListReply,
    ArtifactRecordReply,
    Checkpoint,
    CheckpointListReply,
    Decision,
    DecisionListReply,
    ListedNudge,
    Note,
    NoteListReply,
    Nudge,
    NudgeAckReply,
    NudgeListReply,
    NudgePollReply,
)
from groove.protocol.search import NoteHit, SearchReply


def clean(**fields: Any) -> dict[str, Any]:
    """The fields given a value: a request body without the optional fields left out."""
    return {k: v for k, v in fields.items() if v is not None}


class BoardCalls:
    """One method per board operation, written once as steps (`calls.py`) for both clients; PROTOCOL.md,
    section 9, says what each does and refuses."""

    @operation
    def create_memory(
        self,
        project: str,
        name: str,
        goal: str,
        constraints: list[str] | None = None,
        owner: str | None = None,
        max_attempts: int | None = None,
    ) -> Steps[str]:
        """Start a working memory for a project; returns its id."""
        body = clean(
            project=project, name=name, goal=goal, constraints=constraints, owner=owner, max_attempts=max_attempts
        )
        return IdReply.model_validate((yield Call(C.OP_MEMORY_CREATE, body))).id

    @operation
    def memory(self, memory_id: str) -> Steps[WorkingMemory]:
        """A working memory, with its tasks counted by status."""
        return MemoryGetReply.model_validate((yield Call(C.OP_MEMORY_GET, {"id": memory_id}))).memory

    @operation
    def memories(self, project: str | None = None, status: str | None = None) -> Steps[list[WorkingMemory]]:
        """Working memories (of one project, in one status), newest first."""
        reply = yield Call(C.OP_MEMORY_LIST, clean(project=project, status=status))
        return MemoryListReply.model_validate(reply).memories

    @operation
    def set_memory_status(self, memory_id: str, status: str) -> Steps[str]:
        """Pause, resume, complete, cancel or archive a working memory."""
        reply = yield Call(C.OP_MEMORY_UPDATE, {"id": memory_id, "status": status})
        return StatusReply.model_validate(reply).status

    @operation
    def add_tasks(self, memory_id: str, tasks: list[dict[str, Any]]) -> Steps[list[str]]:
        """Add tasks (maps of the protocol's task fields), all or none; returns their ids in order."""
        reply = yield Call(C.OP_TASK_ADD, {"memory_id": memory_id, "tasks": tasks})
        return TaskAddReply.model_validate(reply).ids

    @operation
    def add_plan(self, memory_id: str, tasks: list[dict[str, Any]]) -> Steps[list[str]]:
        """Add a plan of any size: its tasks ordered so that each comes after the tasks it depends on, then sent
        C.MAX_TASKS_PER_ADD at a time (each `task.add` is all or none; a task may name only tasks of its own
        request or already added). Returns the ids in the plan's order. ValueError for a cycle."""
        ordered = plan_order(tasks)
        ids: dict[int, str] = {}
        for start in range(0, len(ordered), C.MAX_TASKS_PER_ADD):
            chunk = ordered[start : start + C.MAX_TASKS_PER_ADD]
            added = yield from BoardCalls.add_tasks.steps(self, memory_id, [tasks[i] for i in chunk])
            ids.update(zip(chunk, added, strict=True))
        return [ids[i] for i in range(len(tasks))]

    @operation
    def claim_task(self, memory_id: str, agent_id: str, lease_ms: int, role: str | None = None) -> Steps[Task | None]:
        """The best ready task, now this agent's under a lease; None when none is ready."""
        body = clean(memory_id=memory_id, agent_id=agent_id, lease_ms=lease_ms, role=role)
        return TaskClaimReply.model_validate((yield Call(C.OP_TASK_CLAIM, body))).task

    @operation
    def renew_lease(self, task_id: str, agent_id: str, lease_ms: int | None = None) -> Steps[int]:
        """Extend the lease on a task this agent holds; returns when it lapses now (ms since the epoch)."""
        body = clean(task_id=task_id, agent_id=agent_id, lease_ms=lease_ms)
        return LeaseReply.model_validate((yield Call(C.OP_TASK_HEARTBEAT, body))).lease_until

    @operation
    def start_task(self, task_id: str, agent_id: str) -> Steps[None]:
        """Mark a held task `in_progress`."""
        yield Call(C.OP_TASK_START, {"task_id": task_id, "agent_id": agent_id})

    @operation
    def complete_task(
        self,
        task_id: str,
        agent_id: str,
        summary: str,
        learnings: list[dict[str, Any]] | None = None,
        artifacts: list[str] | None = None,
        next_steps: list[str] | None = None,
        next_lease_ms: int | None = None,
        next_role: str | None = None,
    ) -> Steps[TaskCompleteReply]:
        """Finish a held task with its result; its learnings are stored with the task as their source. With
        `next_lease_ms`, the same call claims the memory's next ready task (`reply.next`, None if none)."""
        result = clean(summary=summary, learnings=learnings, artifacts=artifacts, next_steps=next_steps)
        body: dict[str, Any] = {"task_id": task_id, "agent_id": agent_id, "result": result}
        if next_lease_ms is not None:
            body["next"] = clean(lease_ms=next_lease_ms, role=next_role)
        return TaskCompleteReply.model_validate((yield Call(C.OP_TASK_COMPLETE, body)))

    @operation
    def fail_task(self, task_id: str, agent_id: str, error: str, retry: bool = True) -> Steps[TaskFailReply]:
        """Give up a held task: back to pending while attempts are left (with `retry`), else failed."""
        body = {"task_id": task_id, "agent_id": agent_id, "error": error, "retry": retry}
        return TaskFailReply.model_validate((yield Call(C.OP_TASK_FAIL, body)))

    @operation
    def release_task(self, task_id: str, agent_id: str, reason: str | None = None) -> Steps[TaskFailReply]:
        """Give a held task back untried (this agent is stopping): pending again, no attempt counted."""
        body = clean(task_id=task_id, agent_id=agent_id, reason=reason)
        return TaskFailReply.model_validate((yield Call(C.OP_TASK_RELEASE, body)))

    @operation
    def review_task(self, task_id: str, reviewer: str, status: str, comments: str | None = None) -> Steps[str]:
        """Approve, send back or reject a task in review; returns its status now."""
        body = clean(task_id=task_id, reviewer=reviewer, status=status, comments=comments)
        return StatusReply.model_validate((yield Call(C.OP_TASK_REVIEW, body))).status

    @operation
    def cancel_task(self, task_id: str) -> Steps[None]:
        """Cancel a task not yet finished (its dependents are blocked)."""
        yield Call(C.OP_TASK_CANCEL, {"task_id": task_id})

    @operation
    def prioritize_task(self, task_id: str, priority: int) -> Steps[None]:
        """Give a task not yet finished a new priority (higher is claimed first)."""
        yield Call(C.OP_TASK_PRIORITIZE, {"task_id": task_id, "priority": priority})

    @operation
    def task(self, task_id: str) -> Steps[Task]:
        """One task."""
        return TaskGetReply.model_validate((yield Call(C.OP_TASK_GET, {"id": task_id}))).task

    @operation
    def tasks(
        self, memory_id: str, status: str | None = None, assigned_to: str | None = None, limit: int | None = None
    ) -> Steps[list[Task]]:
        """A memory's tasks (in one status, held by one agent), highest priority first."""
        body = clean(memory_id=memory_id, status=status, assigned_to=assigned_to, limit=limit)
        return TaskListReply.model_validate((yield Call(C.OP_TASK_LIST, body))).tasks

    @operation
    def record_decision(
        self,
        memory_id: str,
        question: str,
        choice: str,
        rationale: str,
        made_by: str,
        alternatives: list[str] | None = None,
        task_id: str | None = None,
        affects_tasks: list[str] | None = None,
        reversible: bool | None = None,
        confidence: str | None = None,
    ) -> Steps[str]:
        """Record a decision with its rationale; returns its id."""
        body = clean(
            memory_id=memory_id, question=question, choice=choice, rationale=rationale, made_by=made_by,
            alternatives=alternatives, task_id=task_id, affects_tasks=affects_tasks, reversible=reversible,
            confidence=confidence,
        )  # fmt: skip
        return IdReply.model_validate((yield Call(C.OP_DECISION_RECORD, body))).id

    @operation
    def reverse_decision(self, decision_id: str, reversed_by: str) -> Steps[None]:
        """Mark a reversible decision as no longer holding."""
        yield Call(C.OP_DECISION_REVERSE, {"id": decision_id, "reversed_by": reversed_by})

    @operation
    def decisions(self, memory_id: str, task_id: str | None = None, standing: bool = False) -> Steps[list[Decision]]:
        """A memory's decisions, newest first (`standing`: only those not reversed)."""
        body = clean(memory_id=memory_id, task_id=task_id) | {"standing": standing}
        return DecisionListReply.model_validate((yield Call(C.OP_DECISION_LIST, body))).decisions

    @operation
    def record_artifact(self, /, memory_id: str, task_id: str, type: str, path: str, checksum: str, created_by: str,
                        **more: Any) -> Steps[ArtifactRecordReply]:  # fmt: skip
        """Record a file a task produced (`description`, `git_commit`, `git_branch` in `more`); a new checksum
        for the path is a new version."""
        body = {"memory_id": memory_id, "task_id": task_id, "type": type, "path": path, "checksum": checksum,
                "created_by": created_by} | clean(**more)  # fmt: skip
        return ArtifactRecordReply.model_validate((yield Call(C.OP_ARTIFACT_RECORD, body)))

    @operation
    def artifacts(self, memory_id: str, task_id: str | None = None, path: str | None = None) -> Steps[list[Artifact]]:
        """A memory's artifacts, by path and version."""
        body = clean(memory_id=memory_id, task_id=task_id, path=path)
        return ArtifactListReply.model_validate((yield Call(C.OP_ARTIFACT_LIST, body))).artifacts

    @operation
    def record_checkpoint(self, /, memory_id: str, agent_id: str, branch: str, commit: str, worktree_path: str,
                          **more: Any) -> Steps[str]:  # fmt: skip
        """Record where an agent's work stood in git (`task_id`, `trigger`, `description`, `staged_changes`,
        `unstaged_changes`, `stash_ref` in `more`); returns its id."""
        body = {"memory_id": memory_id, "agent_id": agent_id, "branch": branch, "commit": commit,
                "worktree_path": worktree_path} | clean(**more)  # fmt: skip
        return IdReply.model_validate((yield Call(C.OP_CHECKPOINT_RECORD, body))).id

    @operation
    def checkpoints(
        self, memory_id: str, agent_id: str | None = None, task_id: str | None = None
    ) -> Steps[list[Checkpoint]]:
        """A memory's checkpoints, newest first."""
        body = clean(memory_id=memory_id, agent_id=agent_id, task_id=task_id)
        return CheckpointListReply.model_validate((yield Call(C.OP_CHECKPOINT_LIST, body))).checkpoints

    @operation
    def send_nudge(
        self, target: str, memory_id: str, message: str, created_by: str, priority: str = "normal",
        delivery: str = "next_turn",
    ) -> Steps[str]:  # fmt: skip
        """Nudge an agent (its id), a role (`role:<role>`) or `all`; returns the nudge's id."""
        body = {"target": target, "memory_id": memory_id, "message": message, "created_by": created_by,
                "priority": priority, "delivery": delivery}  # fmt: skip
        return IdReply.model_validate((yield Call(C.OP_NUDGE_SEND, body))).id

    @operation
    def poll_nudges(
        self, agent_id: str, role: str | None = None, idle: bool = False, again: bool = False
    ) -> Steps[list[Nudge]]:
        """The nudges for this agent not yet delivered to it, highest priority first (`again`: also those
        delivered but not acknowledged, as after a reconnect)."""
        body = clean(agent_id=agent_id, role=role) | {"idle": idle, "again": again}
        return NudgePollReply.model_validate((yield Call(C.OP_NUDGE_POLL, body))).nudges

    @operation
    def ack_nudges(self, agent_id: str, ids: list[str]) -> Steps[int]:
        """Acknowledge nudges read; they are never delivered to this agent again. Returns how many were new."""
        return NudgeAckReply.model_validate((yield Call(C.OP_NUDGE_ACK, {"agent_id": agent_id, "ids": ids}))).acked

    @operation
    def nudges(self, memory_id: str, target: str | None = None, limit: int | None = None) -> Steps[list[ListedNudge]]:
        """A memory's nudges, newest first, each with the agents that acknowledged it."""
        body = clean(memory_id=memory_id, target=target, limit=limit)
        return NudgeListReply.model_validate((yield Call(C.OP_NUDGE_LIST, body))).nudges

    @operation
    def note(
        self, memory_id: str, content: str, kind: str, task_id: str | None = None, created_by: str | None = None,
        expires_at: int | None = None,
    ) -> Steps[str]:  # fmt: skip
        """Share a note with the agents working a memory (`context`, `discovery` or `artifact_ref`), searchable
        by meaning until `expires_at` (ms since the epoch); returns its id."""
        body = {"memory_id": memory_id, "content": content, "kind": kind} | clean(
            task_id=task_id, created_by=created_by, expires_at=expires_at
        )
        return IdReply.model_validate((yield Call(C.OP_MEMORY_NOTE, body))).id

    @operation
    def notes(
        self, memory_id: str, kind: str | None = None, task_id: str | None = None, include_expired: bool = False,
        limit: int | None = None,
    ) -> Steps[list[Note]]:  # fmt: skip
        """A memory's notes, newest first (live ones, unless `include_expired`)."""
        body = clean(memory_id=memory_id, kind=kind, task_id=task_id, limit=limit) | {
            "include_expired": include_expired
        }
        return NoteListReply.model_validate((yield Call(C.OP_NOTE_LIST, body))).notes

    @operation
    def search_notes(
        self, memory_id: str, text: str, limit: int | None = None, mode: str | None = None
    ) -> Steps[list[NoteHit]]:
        """A memory's live notes by meaning and words, best first."""
        body = clean(memory_id=memory_id, text=text, limit=limit, mode=mode)
        return SearchReply.model_validate((yield Call(C.OP_SEARCH, body))).notes


def plan_order(tasks: list[dict[str, Any]]) -> list[int]:
    """The plan's task indexes with every task after those it depends on, the plan's own order kept where it
    already is; dependencies on tasks outside the plan (already added) are the coordinator's to check.
    ValueError naming the tasks of a cycle."""
    where = {task["id"]: i for i, task in enumerate(tasks) if task.get("id") is not None}
    order, stuck = dependency_order([[where[d] for d in task.get("depends_on") or [] if d in where] for task in tasks])
    if stuck:
        names = sorted(str(tasks[i].get("id")) for i in stuck)
        raise ValueError(f"the plan's dependencies form a cycle among {', '.join(names[:5])}")
    return order
