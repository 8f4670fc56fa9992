"""One tier's board as pure logic: readiness, claims, leases, retries and blocking, with time passed in."""

from __future__ import annotations

from typing import Any

import pytest

from groove.coordinator.board import lifecycle
from groove.coordinator.board.state import Board, LeaseExpiry
from groove.coordinator.errors import Rejected
from groove.coordinator.store.relations import MEMORIES, TASKS
from groove.protocol import constants as C
from groove.protocol.board import (
    MemoryCreateRequest,
    TaskAddRequest,
    TaskCancelRequest,
    TaskClaimRequest,
    TaskCompleteRequest,
    TaskFailRequest,
    TaskHeartbeatRequest,
)
from groove.protocol.errors import ErrorCode

MEMORY = "01a20000-0000-7000-8000-000000000001"


def board_with(tasks: list[dict[str, Any]], max_attempts: int = 3) -> Board:
    board = Board([], [])
    board.apply(MemoryCreateRequest(project="/srv/x", name="n", goal="g", max_attempts=max_attempts), [MEMORY], 0)
    add = TaskAddRequest.model_validate({"memory_id": MEMORY, "tasks": tasks})
    board.apply(add, [t["id"] for t in tasks], 0)
    return board


def claim(board: Board, agent: str, now: int, role: str | None = None, lease_ms: int = 1000) -> str | None:
    reply = board.apply(TaskClaimRequest(memory_id=MEMORY, agent_id=agent, role=role, lease_ms=lease_ms), [], now)
    return None if reply["task"] is None else str(reply["task"]["id"])


def complete(board: Board, task: str, agent: str, now: int) -> None:
    body = TaskCompleteRequest.model_validate({"task_id": task, "agent_id": agent, "result": {"summary": "s"}})
    board.apply(body, [], now)


def test_priority_then_age_and_roles_choose_the_task() -> None:
    board = board_with(
        [
            {"id": "low", "title": "t"},
            {"id": "high", "title": "t", "priority": 5},
            {"id": "high-later", "title": "t", "priority": 5},
            {"id": "qa", "title": "t", "priority": 9, "role": "qa"},
        ]
    )
    assert [claim(board, f"a{n}", 1) for n in range(3)] == ["high", "high-later", "low"]
    assert claim(board, "a4", 1) is None
    assert claim(board, "a5", 1, role="qa") == "qa"


def test_a_failed_dependency_blocks_everything_downstream() -> None:
    board = board_with(
        [
            {"id": "a", "title": "t"},
            {"id": "b", "title": "t", "depends_on": ["a"]},
            {"id": "c", "title": "t", "depends_on": ["b"]},
            {"id": "free", "title": "t", "depends_on": []},
        ],
        max_attempts=1,
    )
    assert claim(board, "x", 1) == "a"
    reply = board.apply(TaskFailRequest(task_id="a", agent_id="x", error="boom"), [], 2)
    assert reply == {"status": "failed", "attempts": 1}
    assert [board.tasks[t]["status"] for t in "abc"] == ["failed", "blocked", "blocked"]
    assert claim(board, "x", 3) == "free"


def test_leases_lapse_at_their_time_and_renewals_move_them() -> None:
    board = board_with([{"id": "a", "title": "t"}], max_attempts=2)
    claim(board, "x", 0, lease_ms=1000)
    assert board.next_expiry() == 1000
    assert board.apply(TaskHeartbeatRequest(task_id="a", agent_id="x", lease_ms=5000), [], 500) == {"lease_until": 5500}
    assert board.expire(1000) == 0  # the old lease entry is stale
    assert board.next_expiry() == 5500
    assert board.apply(LeaseExpiry(tier="t"), [], 5500) == {"expired": 1, "released": 0}
    task = board.tasks["a"]
    assert (task["status"], task["attempts"], task["assigned_to"]) == ("pending", 1, None)
    with pytest.raises(Rejected) as late:
        complete(board, "a", "x", 5600)
    assert late.value.code is ErrorCode.CONFLICT
    claim(board, "y", 6000)
    assert board.expire(7000) == 1
    assert board.tasks["a"]["status"] == "failed"  # its second attempt was its last
    assert board.next_expiry() is None


def test_a_refused_request_changes_nothing() -> None:
    board = board_with([{"id": "a", "title": "t"}])
    board.take_dirty()
    before = {tid: dict(task) for tid, task in board.tasks.items()}
    cycle = [{"id": "x", "title": "t", "depends_on": ["y"]}, {"id": "y", "title": "t", "depends_on": ["x"]}]
    refused = [
        (TaskAddRequest.model_validate({"memory_id": MEMORY, "tasks": cycle}), ["x", "y"]),
        (TaskAddRequest.model_validate({"memory_id": MEMORY, "tasks": [{"title": "t", "depends_on": ["z"]}]}), ["n"]),
        (TaskAddRequest.model_validate({"memory_id": MEMORY, "tasks": [{"title": "t"}, {"title": "t"}]}), ["d", "d"]),
        (TaskCancelRequest(task_id="nope"), []),
        (TaskHeartbeatRequest(task_id="a", agent_id="x"), []),
    ]
    for body, ids in refused:
        with pytest.raises(Rejected):
            board.apply(body, ids, 1)
    assert board.tasks == before
    assert not any(rows for _, rows in board.take_dirty())


def test_a_board_rebuilt_from_its_rows_hands_out_the_same_tasks() -> None:
    tasks = [
        {"id": f"t{i}", "title": "t", "priority": i % 4, "depends_on": [f"t{i - 1}"] if i % 3 else []}
        for i in range(30)
    ]
    board = board_with(tasks)
    first = claim(board, "x", 1)
    assert first == "t3"  # of the tasks without dependencies, priority 3 and oldest
    complete(board, first, "x", 2)
    rows = {relation.name: taken for relation, taken in board.take_dirty()}
    memories, stored = rows[MEMORIES.name], rows[TASKS.name]
    rebuilt = Board([MEMORIES.wire(r) for r in memories], [TASKS.wire(r) for r in stored])
    order = [claim(board, "a", 3) for _ in range(12)]
    assert [claim(rebuilt, "a", 3) for _ in range(12)] == order
    # by priority, then age; t4 is ready because t3 completed, t1 is not while t0 is only claimed
    assert order == ["t15", "t27", "t6", "t18", "t9", "t21", "t0", "t4", "t12", "t24", None, None]


def test_a_gone_agent_loses_every_lease_it_holds_at_once() -> None:
    board = board_with([{"id": "a", "title": "t"}, {"id": "b", "title": "t"}, {"id": "c", "title": "t"}])
    claim(board, "gone", 0, lease_ms=600_000)
    claim(board, "gone", 0, lease_ms=600_000)
    claim(board, "alive", 0, lease_ms=600_000)
    assert board.holders() == {"gone", "alive"}
    assert board.apply(LeaseExpiry(tier="t", gone=["gone"]), [], 10) == {"expired": 0, "released": 2}
    assert board.holders() == {"alive"}
    assert sorted(t["id"] for t in board.tasks.values() if t["status"] == "pending") == ["a", "b"]
    assert {t["last_error"] for t in board.tasks.values() if t["status"] == "pending"} == {"agent 'gone' is gone"}


def test_counts_follow_every_move_and_readers_see_them_only_once_published() -> None:
    tasks: list[dict[str, Any]] = [
        {"id": "a", "title": "t"},
        {"id": "b", "title": "t", "depends_on": ["a"]},
        {"id": "c", "title": "t", "depends_on": ["b"]},
        {"id": "d", "title": "t"},
        {"id": "e", "title": "t"},
    ]
    board = board_with(tasks, max_attempts=1)
    assert board.published == {}  # nothing committed yet
    board.publish()
    assert board.published[MEMORY] == {"pending": 5}
    complete(board, str(claim(board, "x", 1)), "x", 2)  # a
    assert claim(board, "y", 3) == "b"
    board.apply(TaskFailRequest(task_id="b", agent_id="y", error="no", retry=False), [], 4)  # c is blocked
    board.apply(TaskCancelRequest(task_id="e"), [], 5)
    assert claim(board, "z", 6) == "d"
    assert board.published[MEMORY] == {"pending": 5}  # the batch has not committed yet
    board.publish()
    truth = {"completed": 1, "failed": 1, "blocked": 1, "cancelled": 1, "assigned": 1}
    assert board.published[MEMORY] == truth
    board.expire(10_000)  # d's lease lapses with its one attempt spent
    board.publish()
    assert board.published[MEMORY] == {"completed": 1, "failed": 2, "blocked": 1, "cancelled": 1}  # no zeros
    rows = {relation.name: taken for relation, taken in board.take_dirty()}
    rebuilt = Board([MEMORIES.wire(r) for r in rows[MEMORIES.name]], [TASKS.wire(r) for r in rows[TASKS.name]])
    assert rebuilt.published == board.published  # a board loaded from its rows starts published


def test_the_lifecycle_table_names_every_state_and_finished_ones_go_nowhere() -> None:
    assert set(lifecycle.MOVES) == set(C.TASK_STATUSES)
    assert all(moves <= set(C.TASK_STATUSES) for moves in lifecycle.MOVES.values())
    assert {lifecycle.COMPLETED, lifecycle.FAILED, lifecycle.CANCELLED} == lifecycle.FINISHED
    assert lifecycle.move(lifecycle.PENDING, lifecycle.ASSIGNED) == lifecycle.ASSIGNED
    with pytest.raises(AssertionError):
        lifecycle.move(lifecycle.COMPLETED, lifecycle.PENDING)  # a defect of the board's, never a request's
