"""The real-agent workload (`groove agent --agent claude|codex --memory ID --repo DIR`): a swarm worker that
has a real coding agent do each task it claims.

For each task: claim it (of the worker's role, if it has one) under a lease; prepare the session (the
learnings `inject.prepare` chooses for the task, and the board's side: goal, constraints, decisions standing,
the nudges waiting, those waiting for an idle agent included, which are acknowledged once handed over); make
a git worktree on the attempt's own branch; run the agent there headless (agents.coding). While it runs the
worker renews the lease every third of it, and stops the agent (its whole process group) when the lease is
lost, the task is cancelled, or the time-out passes. Afterwards it commits what the agent left, records a
checkpoint (branch, commit, worktree) and each changed file as an artifact, and ends the task: done if the
agent called `complete_task` itself, else completed with the agent's final message when it exited 0, else
failed with the agent's error (retried while the memory's attempts last). Last it closes the injection with
whether the task succeeded (the agent may have closed it already with its own ratings: `conflict`); a
session that could not be prepared fails the task and closes its injection with no outcome.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from groove.client.client import GrooveClient
from groove.client.errors import Conflict, GrooveError
from groove.protocol import constants as C
from groove.protocol.board import Task
from groove.protocol.keys import CurveClient
from groove.swarm import gitwork
from groove.swarm.boardwork import HELD, PlanWork
from groove.swarm.coding import Given, Identity, find_binary, launch, prompt_for, read_ending

CLAIM, COMPLETE, FAIL, LOST, RELEASE = "claim", "complete", "fail", "lost", "release"
CANCELLED, TIMEOUT, STOPPED = "cancelled", "timeout", "stopped"
_IDLE_S: Final = 0.25  # nothing ready: look again after this
_POLL_S: Final = 0.1  # how often the worker looks at its running agent
_STOP_GRACE_S: Final = 3.0  # SIGTERM, then SIGKILL after this
_FINISH_GRACE_S: Final = 15.0  # an agent that completed its task gets this long to exit on its own
_ERROR_CHARS: Final = 2000
_MAX_ARTIFACTS: Final = 100  # changed files recorded per task (`task.complete` takes as many artifact names)


@dataclass
class Session:
    """One task as an agent worked it, for the live view and the report."""

    task_id: str
    title: str
    branch: str
    result: str = "running"  # completed | review | failed | retried | lost | cancelled
    elapsed_s: float = 0.0
    overhead_ms: float = 0.0  # claim to agent start, plus agent exit to the task's end acked
    commit: str = ""
    artifacts: int = 0
    error: str = ""
    injection_id: str = ""  # the session's learnings, closed with the task's success


def ready(agent: str, binary: str | None, repo: Path) -> tuple[str, Path]:
    """The agent's program and the repository's top directory, before anything is claimed; raises
    AgentNotFound or GitError (GrooveErrors) saying what is missing."""
    return find_binary(agent, binary), gitwork.check_repo(repo)


def board_context(client: GrooveClient, memory_id: str, task_id: str | None, agent_id: str | None, idle: bool) -> str:
    """The board's part of a session's block, as markdown: the memory's goal and constraints, the task, the
    decisions standing and the nudges waiting for the agent (`idle`: also those held for an idle agent, then
    acknowledged: the session hands them over)."""
    memory = client.memory(memory_id)
    lines = [f"\n## The plan: {memory.name}\n", f"Goal: {memory.goal}"]
    lines += [f"- Constraint: {constraint}" for constraint in memory.constraints]
    if task_id is not None:
        mine = client.task(task_id)
        lines += ["", f"### Your task: {mine.title} (`{mine.id}`)"] + ([mine.description] if mine.description else [])
    decisions = client.decisions(memory_id, standing=True)
    if decisions:
        lines += ["", "### Decisions standing"]
        lines += [f"- {d.question} **{d.choice}**: {d.rationale}" for d in decisions]
    if agent_id is not None:
        nudges = client.poll_nudges(agent_id, idle=idle, again=True)
        if nudges:
            lines += ["", "### Nudges for you"]
            lines += [f"- ({n.priority}) {n.message} — {n.created_by}" for n in nudges]
            if idle:  # handed over with the session: they are in front of the agent now
                client.ack_nudges(agent_id, [n.id for n in nudges][: C.MAX_NUDGES_PER_POLL])
    return "\n".join(lines) + "\n"


class AgentWork(PlanWork):
    """Claim a task, have the coding agent do it in a worktree, end the task; until the memory is done."""

    def __init__(
        self,
        *args: Any,
        memory_id: str,
        agent: str,
        repo: Path,
        lease_ms: int,
        agent_timeout: float,
        binary: str | None,
        role: str | None,
        connection: list[str],
        logs: Path | None,
        stopping: Callable[[], bool],
        curve: CurveClient | None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, memory_id=memory_id, lease_ms=lease_ms, **kwargs)
        self.agent = agent
        self.binary, self.repo = ready(agent, binary, repo)
        self.agent_timeout = agent_timeout
        self.role = role
        self.logs = logs
        self.connection = connection + (self._curve_options(curve) if curve is not None else [])
        self.stopping = stopping  # the worker was asked to stop: the agent is stopped, its task given back
        self.sessions: list[Session] = []

    def run(self) -> None:
        """Work the plan until it is done or `more` says stop."""
        project = self.client.memory(self.memory_id).project
        while self.more(len(self.sessions)):
            started = time.monotonic()
            try:
                task = self.client.claim_task(self.memory_id, self.agent_id, self.lease_ms, self.role)
            except GrooveError as exc:
                self.report.error(CLAIM, exc)
                time.sleep(_IDLE_S)
                continue
            if task is None:
                if self._plan_done():
                    return
                time.sleep(_IDLE_S)
                continue
            self.report.ok(CLAIM)
            self.holding = task.id
            try:
                self._work(task, project, started)
            finally:
                self.holding = None

    def _work(self, task: Task, project: str, claimed_at: float) -> None:
        session_id = f"{self.agent_id}:{task.id}:{task.attempts}"
        session = Session(task.id, task.title, gitwork.branch_name(task.id, self.agent_id))
        self.sessions.append(session)
        try:  # everything the agent needs before it starts; a failure here fails the task (retried), not the worker
            injection = self.client.inject(session_id, task=f"{task.title}\n{task.description}".strip(),
                                           project=project)  # fmt: skip
            session.injection_id = injection.injection_id
            board = board_context(self.client, self.memory_id, task.id, self.agent_id, idle=True)
            tree = gitwork.add_worktree(self.repo, task.id, self.agent_id)
        except (GrooveError, OSError) as exc:  # GitError is one
            self._give_up(task, session, f"the worker could not prepare {self.agent}'s session: {exc}")
            self._close(session, session_id, None)  # the learnings never reached an agent
            return
        identity = Identity(self.agent_id, self.memory_id, task.id, injection.injection_id, self.role)
        given = [Given(i.learning.id, i.learning.description, i.learning.insight) for i in injection.learnings]
        prompt = prompt_for(task.title, task.description, given, board, identity, tree.branch)
        start = launch(self.agent, self.binary, prompt, identity, self.connection)
        out_path = self._log(task, "out")
        began = time.monotonic()
        session.overhead_ms = (began - claimed_at) * 1000
        with out_path.open("wb") as out, self._log(task, "err").open("wb") as err:
            try:
                proc = subprocess.Popen(start.argv, cwd=tree.path, env=os.environ | start.env, stdout=out,
                                        stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
            except OSError as exc:
                self._give_up(task, session, f"cannot run {self.binary}: {exc.strerror or exc}")
                self._close(session, session_id, None)
                return
            try:
                self.client.start_task(task.id, self.agent_id)  # in_progress: its agent is at work
            except GrooveError as exc:
                self.report.error("start", exc)
            stopped = self._watch(proc, task)
        exited = time.monotonic()
        session.elapsed_s = exited - began
        ending = read_ending(self.agent, out_path.read_text(errors="replace"))
        success: bool | None = None  # a task taken away: the session's outcome is unknown
        if stopped in (LOST, CANCELLED):
            session.result = stopped
            self.report.ok(LOST)
        else:
            self._record_work(task, tree, session)
            success = self._end_task(task, session, proc.returncode, stopped, ending.message, ending.error)
            if session.commit:  # the work is on its branch: the checkout has served its turn
                try:
                    gitwork.remove_worktree(self.repo, tree)
                except GrooveError as exc:  # GitError: left on the disk, and replaced by the next attempt's
                    self.report.error("prune", exc)
            session.overhead_ms += (time.monotonic() - exited) * 1000
        self._close(session, session_id, success)

    def _close(self, session: Session, session_id: str, success: bool | None) -> None:
        """Close the session's injection, if it has one, with whether the task succeeded (None: unknown)."""
        if not session.injection_id:
            return
        try:
            self.client.close_session([], injection_id=session.injection_id, success=success, session_id=session_id)
        except Conflict:
            pass  # the agent closed it itself, with its own ratings (end_session)
        except GrooveError as exc:
            self.report.error("outcome", exc)

    def _give_up(self, task: Task, session: Session, why: str) -> None:
        """Fail the task (retried while attempts last) for a reason on the worker's side."""
        session.error = why[:_ERROR_CHARS]
        try:
            failed = self.client.fail_task(task.id, self.agent_id, session.error)
            session.result = "failed" if failed.status == "failed" else "retried"
            self.report.ok(FAIL)
        except GrooveError as exc:  # the lease lapses instead, and the task goes back all the same
            self.report.error(FAIL, exc)
            session.result = "failed"

    def _logs(self) -> Path:
        directory = self.logs or self.repo / ".git" / "groove-logs"
        directory.mkdir(parents=True, exist_ok=True)
        return directory

    def _log(self, task: Task, kind: str) -> Path:
        return self._logs() / f"{gitwork.branch_name(task.id, self.agent_id).replace('/', '--')}.{task.attempts}.{kind}"

    def _curve_options(self, curve: CurveClient) -> list[str]:
        """The agent's hooks and MCP server talk CURVE with this worker's keys: the server's public key as its
        40 characters, the client's pair in a file only this user can read."""
        secret = curve.write_secret(self._logs() / f"{gitwork.safe_name(self.agent_id)}.key_secret")
        return ["--server-key", curve.server_public.decode("ascii"), "--key", str(secret)]

    def _watch(self, proc: subprocess.Popen[bytes], task: Task) -> str | None:
        """Wait for the agent, renewing the lease; stop it when the lease is lost, the task is cancelled or
        the time-out passes. Returns why it was stopped (None: it exited on its own)."""
        deadline = time.monotonic() + self.agent_timeout
        renew_every = self.lease_ms / 3000
        next_renewal = time.monotonic() + renew_every
        finished_at: float | None = None  # when the agent's own complete_task was seen
        while proc.poll() is None:
            time.sleep(_POLL_S)
            now = time.monotonic()
            if now >= deadline:
                _stop(proc)
                return TIMEOUT
            if self.stopping():
                _stop(proc)
                return STOPPED
            if finished_at is not None and now - finished_at > _FINISH_GRACE_S:
                _stop(proc)  # done with the task but not exiting: what it owes is delivered
                return None
            if finished_at is None and now >= next_renewal:
                next_renewal = now + renew_every
                try:
                    self.client.renew_lease(task.id, self.agent_id, self.lease_ms)
                except Conflict:  # the task is no longer held under this lease: who ended it?
                    status = self._status(task)
                    if status == "cancelled" or status in HELD:  # called off, or another agent holds it now
                        _stop(proc)
                        return CANCELLED if status == "cancelled" else LOST
                    finished_at = now  # the agent completed or failed it itself: let it wrap up
                except GrooveError as exc:  # the coordinator is away: the lease may outlive this, try again
                    self.report.error("renew", exc)
        return None

    def _status(self, task: Task) -> str:
        try:
            return self.client.task(task.id).status
        except GrooveError:
            return "unknown"

    def _record_work(self, task: Task, tree: gitwork.Worktree, session: Session) -> None:
        """Commit what the agent left; the checkpoint of where the work stands, each changed file an artifact."""
        try:
            head = gitwork.commit_all(tree, f"{task.title}\n\ngroove task {task.id}, by {self.agent_id} ({self.agent})")
            session.commit = head
            files = gitwork.changed_files(tree, head)[:_MAX_ARTIFACTS]
            for name in files:
                self.client.record_artifact(self.memory_id, task.id, gitwork.artifact_type(name), name[:200],
                                            gitwork.checksum(tree.path / name), self.agent_id,
                                            git_commit=head, git_branch=tree.branch)  # fmt: skip
            self.client.record_checkpoint(self.memory_id, self.agent_id, tree.branch, head, str(tree.path),
                                          task_id=task.id, trigger="milestone",
                                          description=f"{self.agent} finished work on {task.title}")  # fmt: skip
            session.artifacts = len(files)
        except (GrooveError, OSError) as exc:  # GitError is one
            self.report.error("record", exc)

    def _end_task(self, task: Task, session: Session, status: int | None, stopped: str | None, message: str,
                  error: str | None) -> bool:  # fmt: skip
        """Complete or fail the task as the agent's run says; whether it succeeded."""
        now = self._status(task)
        if now in ("completed", "review"):  # the agent's own complete_task
            session.result = now
            self.completed.append(task.id)
            self.report.ok(COMPLETE)
            return True
        if now in ("failed", "pending"):  # the agent's own fail_task
            session.result, session.error = ("failed" if now == "failed" else "retried"), "the agent gave up"
            self.report.ok(FAIL)
            return False
        if stopped is None and status == 0 and error is None:
            try:
                done = self.client.complete_task(task.id, self.agent_id, message[: C.MAX_BOARD_TEXT_CHARS] or "done")
            except GrooveError as exc:
                self.report.error(COMPLETE, exc)
                session.result, session.error = "failed", str(exc)
                return False
            session.result = done.status
            self.completed.append(task.id)
            self.report.ok(COMPLETE)
            return True
        if stopped == STOPPED:  # not the task's fault: back to the plan untried, no attempt counted
            self._release(task, session, f"the worker {self.agent_id} was stopped while {self.agent} worked")
            return False
        why = (
            f"{self.agent} ran past its time-out of {self.agent_timeout:g} s"
            if stopped == TIMEOUT
            else f"{self.agent} exited with status {status}: {error or message or 'no message'}"
        )
        self._give_up(task, session, why)
        return False

    def _release(self, task: Task, session: Session, why: str) -> None:
        """Give the task back untried (`task.release`): this worker is stopping."""
        session.error = why[:_ERROR_CHARS]
        try:
            self.client.release_task(task.id, self.agent_id, session.error)
            session.result = "released"
            self.report.ok(RELEASE)
        except GrooveError as exc:  # the lease lapses instead (an attempt counted), and the task goes back
            self.report.error(RELEASE, exc)
            session.result = "failed"

    def sessions_report(self) -> list[dict[str, Any]]:
        """Each task this worker's agent worked, as maps."""
        return [asdict(s) for s in self.sessions]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the agent's process group (its MCP servers and hooks too), SIGKILL after a grace."""
    for sig, wait in ((signal.SIGTERM, _STOP_GRACE_S), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue
