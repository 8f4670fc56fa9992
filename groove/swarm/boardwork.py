"""The board workload (`groove agent --memory ID`): an agent working through a working memory's plan.

It claims the best ready task under a lease, "works" it (the synthetic stand-in for real work: it learns
one corpus learning on the way, reported with the result), then completes it — claiming the next task in
the same call — or, for a configurable share of tasks, fails it (to be retried while attempts are left).
Every few completions it shares a note with the others (what it found) and reads its nudges, those pushed
to it included. The worker's heartbeat thread renews the lease on the task it holds and tells the registry
which task that is (`holding`), or that it is idle. It stops when the memory has nothing left to do (or at
its duration or count). At the end it reads back every completion and note it was acked: each such task
must be stored completed (or in review), each note stored.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from groove.client.errors import Conflict, GrooveError
from groove.protocol import constants as C
from groove.protocol.board import Task
from groove.swarm.corpus import load
from groove.swarm.workloads import Workload

COMPLETE, FAIL, CLAIM, NUDGE, NOTE = "complete", "fail", "claim", "nudge", "note"
_NUDGES_EVERY = 5  # tasks between two looks at the agent's nudges
_NOTE_EVERY = 4  # completions between two notes
_IDLE_S = 0.05  # nothing ready: poll again after this
DONE = frozenset({"completed", "failed", "cancelled", "blocked"})  # statuses of a task no one will work on again
HELD = frozenset({"assigned", "in_progress"})  # statuses of a task an agent holds under a lease


class PlanWork(Workload):
    """What every workload that works a memory's plan shares: the task it holds, the completions it was acked,
    when the plan is done, and the read-back of those completions."""

    def __init__(self, *args: Any, memory_id: str, lease_ms: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.memory_id = memory_id
        self.lease_ms = lease_ms
        self.holding: str | None = None  # the task held now, for the heartbeat's status
        self.completed: list[str] = []  # tasks whose completion was acked

    def _plan_done(self) -> bool:
        """Whether no task of the memory is left for anyone to work on."""
        try:
            return set(self.client.memory(self.memory_id).tasks) <= DONE
        except GrooveError as exc:
            self.report.error(CLAIM, exc)
            return False

    def verify(self, stopping: Callable[[], bool]) -> None:
        """Every acked completion is stored (the task completed or in review), until done or `stopping()`."""
        calls = [(C.OP_TASK_GET, {"id": task_id}) for task_id in self.completed]
        for _, body in self._read_back(calls, stopping):
            if body["task"]["status"] in ("completed", "review"):
                self.report.verified += 1
            else:
                self.report.mismatches += 1


class BoardWork(PlanWork):
    """Claim, work, complete (or fail) until the memory is done."""

    def __init__(self, *args: Any, fail_share: float, role: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fail_share = fail_share
        self.role = role  # a role-aware claim: tasks of this role, and role-less ones
        self.corpus = load()
        self.noted: dict[str, str] = {}  # note id -> its task, for the notes acked
        self.polled = False  # the first poll after connecting asks for unacknowledged nudges again

    def run(self) -> None:
        """Work the plan until it is done or `more` says stop; NotFound (a GrooveError) for an unknown memory."""
        self.client.memory(self.memory_id)
        task: Task | None = None
        while self.more(self._done()):
            if task is None:
                task = self._claim()
                if task is None:
                    if self._plan_done():
                        return
                    time.sleep(_IDLE_S)
                    continue
            self.holding = task.id
            task = self._finish(task)
            if len(self.completed) % _NUDGES_EVERY == 0:
                self._read_nudges()
        if task is not None:  # claimed with the last completion, never worked: back to the plan, untried
            with contextlib.suppress(GrooveError):  # else its lease lapses, and it goes back all the same
                self.client.release_task(task.id, self.agent_id, f"{self.agent_id} is stopping")
        self.holding = None

    def _read_nudges(self) -> None:
        """Read the nudges waiting (a real agent would act on them) and acknowledge them."""
        try:
            polled = self.client.poll_nudges(self.agent_id, again=not self.polled)
            self.polled = True
            # a pushed nudge (when_idle, immediate) also comes with polls until acknowledged: each id once
            ids = list(dict.fromkeys(n.id for n in [*polled, *self.client.pushed_nudges()]))
            for start in range(0, len(ids), C.MAX_NUDGES_PER_POLL):
                self.client.ack_nudges(self.agent_id, ids[start : start + C.MAX_NUDGES_PER_POLL])
        except GrooveError as exc:
            self.report.error(NUDGE, exc)
            return
        for _ in ids:
            self.report.ok(NUDGE)

    def _claim(self) -> Task | None:
        started = time.monotonic()
        try:
            task = self.client.claim_task(self.memory_id, self.agent_id, self.lease_ms, self.role)
        except GrooveError as exc:
            self.report.error(CLAIM, exc)
            return None
        self.report.ok(CLAIM)
        self.evidence.latency(CLAIM, time.monotonic() - started)
        return task

    def _finish(self, task: Task) -> Task | None:
        """Work the task, then complete it (claiming the next) or fail it; returns the next task held."""
        started = time.monotonic()
        learning = self.corpus.learning(self.rng, noted_by=self.agent_id)
        try:
            if self.rng.random() < self.fail_share:
                self.client.fail_task(task.id, self.agent_id, "the synthetic work failed")
                self.report.ok(FAIL)
                self.evidence.latency(FAIL, time.monotonic() - started)
                return None
            done = self.client.complete_task(
                task.id,
                self.agent_id,
                f"{task.title}: done",
                learnings=[learning],
                next_lease_ms=self.lease_ms,
                next_role=self.role,
            )
        except Conflict as exc:  # the lease lapsed (a stalled agent): the task went back to the plan
            self.report.error(COMPLETE, exc)
            return None
        except GrooveError as exc:
            self.report.error(COMPLETE, exc)
            return None
        self.report.ok(COMPLETE)
        self.evidence.latency(COMPLETE, time.monotonic() - started)
        self.completed.append(task.id)
        for lid in done.learning_ids:
            if lid is not None:
                self.evidence.written[lid] = learning["description"]
        if len(self.completed) % _NOTE_EVERY == 0:
            self._note(task, learning["insight"])
        return done.next

    def _note(self, task: Task, found: str) -> None:
        """Tell the others working the memory what this task taught."""
        try:
            note_id = self.client.note(self.memory_id, f"{task.title}: {found}", "discovery", task.id, self.agent_id)
        except GrooveError as exc:
            self.report.error(NOTE, exc)
            return
        self.report.ok(NOTE)
        self.noted[note_id] = task.id

    def verify(self, stopping: Callable[[], bool]) -> None:
        """Every acked completion is stored (the task completed or in review), and every acked note."""
        started = time.monotonic()
        by_task: dict[str, list[str]] = {}
        for note_id, task_id in self.noted.items():
            by_task.setdefault(task_id, []).append(note_id)
        tasks = sorted(by_task)
        body = {"memory_id": self.memory_id, "include_expired": True}
        for index, listed in self._read_back([(C.OP_NOTE_LIST, body | {"task_id": t}) for t in tasks], stopping):
            stored = {note["id"] for note in listed["notes"]}
            for note_id in by_task[tasks[index]]:
                if note_id in stored:
                    self.report.verified += 1
                else:
                    self.report.mismatches += 1
        super().verify(stopping)
        self.report.verify_s = time.monotonic() - started
