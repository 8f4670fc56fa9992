"""Reading the board (reader threads): what is committed, straight from the tiers, never the writer's board.

A memory or task is found by looking in every tier: a point lookup each, and a coordinator holds a few dozen
tiers, not thousands.
"""

from __future__ import annotations

from typing import Any

from groove.coordinator.board.directory import Boards
from groove.coordinator.board.lifecycle import ASSIGNED, IN_PROGRESS, REVIEW
from groove.coordinator.errors import Rejected
from groove.coordinator.store.relations import (
    ARTIFACTS,
    CHECKPOINTS,
    DECISIONS,
    MEMORIES,
    NOTES,
    NUDGES,
    TASKS,
    Relation,
)
from groove.coordinator.store.tiers import Tier
from groove.coordinator.store.tierset import TierSet
from groove.protocol import constants as C
from groove.protocol.board import MemoryGetRequest, MemoryListRequest, TaskGetRequest, TaskListRequest
from groove.protocol.boardrecords import (
    ArtifactListRequest,
    CheckpointListRequest,
    DecisionListRequest,
    NoteListRequest,
    NudgeListRequest,
)
from groove.protocol.errors import ErrorCode

Wire = dict[str, Any]
# statuses a memory holds few tasks in at a time (bounded by its agents and reviewers), read through the index
_FEW = (ASSIGNED, IN_PROGRESS, REVIEW)


def _counts(tier: Tier, boards: Boards, memory_id: str) -> dict[str, int]:
    """A memory's tasks by status: from its board in memory if loaded, else counted in CozoDB."""
    published = boards.counts(memory_id)
    if published is not None:
        return published
    # the equality first: CozoDB then reads the index's prefix instead of walking all of it
    rows = tier.run("?[status, count(id)] := memory_id = $m, *tasks:by_memory{memory_id, status, id}", {"m": memory_id})
    return {status: int(n) for status, n in rows}


def find_memory(tiers: TierSet, memory_id: str) -> tuple[Tier, dict[str, Any]]:
    """The tier holding working memory `memory_id`, and the memory; Rejected `not_found` if none does."""
    for tier in tiers.open_all():
        rows = tier.run(MEMORIES.by_key("id"), {"id": memory_id})
        if rows:
            return tier, MEMORIES.wire(rows[0])
    raise Rejected(ErrorCode.NOT_FOUND, f"no working memory {memory_id}")


def get_memory(tiers: TierSet, boards: Boards, body: MemoryGetRequest) -> dict[str, Any]:
    """`memory.get`: the memory with its tasks counted by status."""
    tier, memory = find_memory(tiers, body.id)
    return {"memory": memory | {"tasks": _counts(tier, boards, body.id)}}


def list_memories(tiers: TierSet, boards: Boards, body: MemoryListRequest) -> dict[str, Any]:
    """`memory.list`: of one project (its tier) or of all, in one status if asked; newest first."""
    if body.project is not None:
        tier = tiers.get(C.TIER_PROJECT_PREFIX + body.project, create=False)
        chosen = [tier] if tier is not None else []
    else:
        chosen = tiers.open_all()
    status = "" if body.status is None else ", status = $status"
    memories = []
    for tier in chosen:
        for row in tier.run(f"{MEMORIES.scan()}{status}", {"status": body.status}):
            memory = MEMORIES.wire(row)
            memories.append(memory | {"tasks": _counts(tier, boards, memory["id"])})
    memories.sort(key=lambda m: (-m["created_at"], m["id"]))
    return {"memories": memories}


def get_task(tiers: TierSet, body: TaskGetRequest) -> dict[str, Any]:
    """`task.get`: one task."""
    for tier in tiers.open_all():
        rows = tier.run(TASKS.by_key("id"), {"id": body.id})
        if rows:
            return {"task": TASKS.wire(rows[0])}
    raise Rejected(ErrorCode.NOT_FOUND, f"no task {body.id!r}")


def list_tasks(tiers: TierSet, body: TaskListRequest) -> dict[str, Any]:
    """`task.list`: a memory's tasks, by priority (highest first), then in the order they were added."""
    tier, _ = find_memory(tiers, body.memory_id)
    agent = "" if body.assigned_to is None else ", assigned_to = $agent"
    params = {"m": body.memory_id, "status": body.status, "agent": body.assigned_to}
    if body.status in _FEW:
        # the index's prefix, then each task by id: 0.7 ms at 20,000 tasks, where a scan takes 33 ms
        script = (
            "ids[id] := memory_id = $m, status = $status, *tasks:by_memory{memory_id, status, id}\n"
            f"?[{', '.join(TASKS.cols)}] := ids[id], {TASKS.pattern()}{agent}"
        )
    else:  # many rows to order anyway: one scan is cheaper than a lookup each (100 against 160 ms at 20,000)
        status = "" if body.status is None else ", status = $status"
        script = f"{TASKS.scan()}, memory_id = $m{status}{agent}"
    rows = tier.run(f"{script} :order -priority, seq :limit {body.limit}", params)
    return {"tasks": [TASKS.wire(row) for row in rows]}


def _of_memory(
    tiers: TierSet, relation: Relation, memory_id: str, filters: dict[str, str | None]
) -> tuple[Tier, list[Wire]]:
    """The memory's tier, and its rows of `relation` with these columns equal to these values (None: any)."""
    tier, _ = find_memory(tiers, memory_id)
    chosen = {column: value for column, value in filters.items() if value is not None}
    where = "".join(f", {column} = ${column}" for column in chosen)
    rows = tier.run(f"{relation.scan()}, memory_id = $memory_id{where}", {"memory_id": memory_id, **chosen})
    return tier, [relation.wire(row) for row in rows]


def list_decisions(tiers: TierSet, body: DecisionListRequest) -> dict[str, Any]:
    """`decision.list`: newest first; `standing`: only those not reversed."""
    _, found = _of_memory(tiers, DECISIONS, body.memory_id, {"task_id": body.task_id})
    if body.standing:
        found = [d for d in found if d["reversed_by"] is None]
    return {"decisions": sorted(found, key=lambda d: (-d["made_at"], d["id"]))}


def list_artifacts(tiers: TierSet, body: ArtifactListRequest) -> dict[str, Any]:
    """`artifact.list`: by path, then version."""
    _, found = _of_memory(tiers, ARTIFACTS, body.memory_id, {"task_id": body.task_id, "path": body.path})
    return {"artifacts": sorted(found, key=lambda a: (a["path"], a["version"]))}


def list_checkpoints(tiers: TierSet, body: CheckpointListRequest) -> dict[str, Any]:
    """`checkpoint.list`: newest first."""
    _, found = _of_memory(tiers, CHECKPOINTS, body.memory_id, {"agent_id": body.agent_id, "task_id": body.task_id})
    return {"checkpoints": sorted(found, key=lambda c: (-c["created_at"], c["id"]))}


def list_notes(tiers: TierSet, body: NoteListRequest, now: int) -> dict[str, Any]:
    """`note.list`: newest first, live ones only unless `include_expired`."""
    tier, _ = find_memory(tiers, body.memory_id)
    chosen = {column: value for column, value in (("kind", body.kind), ("task_id", body.task_id)) if value is not None}
    where = "".join(f", {column} = ${column}" for column in chosen)
    if not body.include_expired:
        where += ", is_null(expires_at) or expires_at > $now"
    # the memory's equality first, on the index: CozoDB then reads its prefix instead of every note of the tier
    rows = tier.run(
        f"?[{', '.join(NOTES.cols)}] := memory_id = $memory_id, *memory_notes:by_memory{{memory_id, id}}, "
        f"{NOTES.pattern()}{where} :order -created_at, -id :limit {body.limit}",
        {"memory_id": body.memory_id, "now": now, **chosen},
    )
    return {"notes": [NOTES.wire(row) for row in rows]}


def list_nudges(tiers: TierSet, body: NudgeListRequest) -> dict[str, Any]:
    """`nudge.list`: newest first, each with the agents that acknowledged it."""
    tier, found = _of_memory(tiers, NUDGES, body.memory_id, {"target": body.target})
    found = sorted(found, key=lambda n: (n["created_at"], n["id"]), reverse=True)[: body.limit]
    acks: dict[str, list[str]] = {}
    if found:
        rows = tier.run(
            "?[nudge_id, agent_id] := nudge_id in $ids, *nudge_acks{nudge_id, agent_id}",
            {"ids": [n["id"] for n in found]},
        )
        for nudge_id, agent_id in rows:
            acks.setdefault(nudge_id, []).append(agent_id)
    return {"nudges": [n | {"acked_by": sorted(acks.get(n["id"], []))} for n in found]}
