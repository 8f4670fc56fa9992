"""How a task moves along its lifecycle (`lifecycle.py`) on one tier's board: each move counted for readers, a
pending task with its dependencies done offered to claims, leases granted and lapsing, a failure blocking what
waits on it. `state.Board` is one of these; what each request asks of the board is `state.py`'s.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from typing import Any

from groove.coordinator.board.lifecycle import BLOCKED, COMPLETED, FAILED, HELD, PENDING, move

Wire = dict[str, Any]


class TaskMoves:
    """A board's task mechanics, apart from its requests (the state `state.Board` sets up)."""

    memories: dict[str, Wire]
    tasks: dict[str, Wire]
    dependents: defaultdict[str, list[str]]
    unmet: dict[str, int]  # task -> dependencies not completed yet
    counts: defaultdict[str, Counter[str]]
    _ready: dict[tuple[str, str | None], list[tuple[int, int, str]]]
    _leases: list[tuple[int, str]]
    _dirty_tasks: set[str]
    _dirty_counts: set[str]

    def _touch(self, task: Wire, now: int) -> None:
        task["updated_at"] = now
        self._dirty_tasks.add(task["id"])

    def _set(self, task: Wire, status: str, now: int) -> str:
        self._count(task, task["status"], move(task["status"], status))
        task["status"] = status
        self._touch(task, now)
        return status

    def _count(self, task: Wire, was: str | None, status: str) -> None:
        counts = self.counts[task["memory_id"]]
        if was is not None:
            counts[was] -= 1
        counts[status] += 1
        self._dirty_counts.add(task["memory_id"])

    def _queue(self, task: Wire) -> None:
        """Offer a task to claims if it is pending with every dependency completed."""
        if task["status"] == PENDING and self.unmet[task["id"]] == 0:
            heap = self._ready.setdefault((task["memory_id"], task["role"]), [])
            heapq.heappush(heap, (-task["priority"], task["seq"], task["id"]))

    def _release(self, task: Wire) -> None:
        """The lease ends; who held the task, and since when, stay on it until it is handed out again."""
        task.update(lease_ms=None, lease_until=None)

    def _requeue(self, task: Wire, now: int) -> None:
        task.update(assigned_to=None, assigned_at=None, started_at=None)
        self._set(task, PENDING, now)
        self._queue(task)

    def next_expiry(self) -> int | None:
        """When the first lease held now lapses (None: no lease is held)."""
        while self._leases:
            until, tid = self._leases[0]
            task = self.tasks[tid]
            if task["status"] in HELD and task["lease_until"] == until:
                return until
            heapq.heappop(self._leases)
        return None

    def _lease(self, task: Wire, lease_ms: int, now: int) -> int:
        task.update(lease_ms=lease_ms, lease_until=now + lease_ms)
        heapq.heappush(self._leases, (task["lease_until"], task["id"]))
        self._touch(task, now)
        return int(task["lease_until"])

    def _finish(self, task: Wire, now: int) -> str:
        """The task is completed: its dependents may become ready."""
        task["completed_at"] = now
        for dep in self.dependents.get(task["id"], ()):
            self.unmet[dep] -= 1
            self._queue(self.tasks[dep])
        return self._set(task, COMPLETED, now)

    def _retry_or_fail(self, task: Wire, error: str, retry: bool, now: int) -> Wire:
        task["attempts"] += 1
        task["last_error"] = error
        self._release(task)
        max_attempts = self.memories[task["memory_id"]]["max_attempts"]
        if retry and task["attempts"] < max_attempts:
            self._requeue(task, now)
        else:
            self._fail(task, now)
        return {"status": task["status"], "attempts": task["attempts"]}

    def _fail(self, task: Wire, now: int, status: str = FAILED) -> None:
        """The task will not complete: every pending task that waits on it, directly or not, is blocked."""
        self._set(task, status, now)
        waiting = list(self.dependents.get(task["id"], ()))
        while waiting:
            dep = self.tasks[waiting.pop()]
            if dep["status"] == PENDING:
                self._set(dep, BLOCKED, now)
                waiting.extend(self.dependents.get(dep["id"], ()))

    def expire(self, now: int) -> int:
        """Tasks whose lease lapsed by `now` go back to `pending` (an attempt counted), or to `failed` when
        their attempts are spent; returns how many."""
        expired = 0
        while (until := self.next_expiry()) is not None and until <= now:
            _, tid = heapq.heappop(self._leases)
            task = self.tasks[tid]
            self._retry_or_fail(task, f"the lease of {task['assigned_to']!r} lapsed", True, now)
            expired += 1
        return expired

    def holders(self) -> set[str]:
        """The agents holding a lease now."""
        held = (self.tasks[tid] for _, tid in self._leases)
        return {task["assigned_to"] for task in held if task["status"] in HELD}

    def release(self, agents: set[str], now: int) -> int:
        """Tasks these agents hold go back to `pending` (an attempt counted) or to `failed`; returns how many."""
        released = 0
        for _, tid in list(self._leases):
            task = self.tasks[tid]
            if task["status"] in HELD and task["assigned_to"] in agents:
                self._retry_or_fail(task, f"agent {task['assigned_to']!r} is gone", True, now)
                released += 1
        return released
