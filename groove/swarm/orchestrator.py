"""`Orchestrator`: what a swarm's orchestrator does with groove around each agent session.

Before a session it asks the coordinator for the learnings that fit the session's project and task
(`inject.prepare`) and writes their block into the agent's working directory — `CLAUDE.md`, replacing the
block a previous session left there in place, keeping everything else in the file. After the session it
records the outcome: which learnings helped, which were ignored or wrong, and whether the session
succeeded (`outcome.record` with the injection id). It also spawns agent workers with the coordinator's
endpoint: `groove agent` processes here, or Ray actors over a cluster (agents.fleet, agents.rayfleet).

With the board, it plans (`plan`: a working memory and its tasks), runs workers on the plan (`run`), and
`prepare` given the memory, task and agent adds to the block what the agent must know of the board: its
task and the memory's goal and constraints, the decisions standing, and the nudges waiting for it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groove.client.board import plan_order
from groove.client.client import GrooveClient
from groove.client.errors import GrooveError
from groove.protocol import constants as C
from groove.protocol.ids import uuid7
from groove.protocol.keys import CurveClient
from groove.protocol.models import OutcomeRecordReply
from groove.swarm.agentwork import board_context
from groove.swarm.backends import LOCAL, open_fleet
from groove.swarm.coding import AGENT_TIMEOUT_S
from groove.swarm.fleet import FleetBase
from groove.swarm.workloads import DEFAULT_MIX

CONTEXT_FILE = "CLAUDE.md"


class OrchestratorError(GrooveError):
    """The orchestrator cannot do what was asked (e.g. a context file whose groove block is broken)."""


@dataclass(frozen=True)
class Session:
    """A prepared session: its id, the injection to report against, the learnings given, the file written."""

    session_id: str
    injection_id: str
    learning_ids: tuple[str, ...]
    context_file: Path


def write_block(path: Path, block: str) -> None:
    """Put `block` (which starts and ends with groove's markers) into `path`: in place of the previous
    block if there is one, else appended after the file's own text; written atomically."""
    text = path.read_text() if path.exists() else ""
    begin, end = text.find(C.INJECT_BEGIN), text.find(C.INJECT_END)
    if (begin < 0) != (end < 0) or end < begin:
        raise OrchestratorError(
            f"{path} has a broken groove block (one marker without the other, or in the wrong order); "
            f"fix or remove the lines {C.INJECT_BEGIN!r} and {C.INJECT_END!r} by hand"
        )
    if begin >= 0:
        after = end + len(C.INJECT_END)
        if text[after : after + 1] == "\n":
            after += 1
        text = text[:begin] + block + text[after:]
    else:
        text = text + ("\n" if text and not text.endswith("\n") else "") + ("\n" if text else "") + block
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class Orchestrator:
    """Prepares sessions' context from groove and records their outcomes; spawns workers.

    Use as a context manager: it closes its connection and stops the workers it spawned on exit.
    """

    def __init__(
        self, endpoint: str, timeout: float = 30.0, workdir: Path | None = None, curve: CurveClient | None = None
    ) -> None:
        """`curve`: the keys of a coordinator running with `--curve`, for this client and every worker spawned."""
        self.endpoint = endpoint
        self.curve = curve
        self.client = GrooveClient(endpoint, timeout=timeout, curve=curve)
        self._workdir = workdir
        self.fleets: list[FleetBase] = []

    def __enter__(self) -> Orchestrator:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the workers still running and close the connection."""
        for fleet in self.fleets:
            fleet.stop()
        self.client.close()

    def spawn_workers(
        self,
        n: int,
        *,
        duration: float | None = None,
        count: int | None = None,
        mix: str = DEFAULT_MIX,
        backend: str = LOCAL,
        **ray_options: Any,
    ) -> FleetBase:
        """Start `n` agent workers against this coordinator: `groove agent` processes here, or with
        `backend="ray"` Ray actors over a cluster (`ray_options`: address, cpus_per_agent, curve; see
        agents.rayfleet). Crashed ones are restarted while their duration lasts. `fleet.wait()` waits for
        them; their reports are `fleet.reports()`."""
        if duration is None and count is None:
            raise ValueError("give the workers a duration or a count")
        fleet = self._fleet(n, backend, ray_options)
        for i in range(n):
            fleet.spawn(f"worker-{len(self.fleets) - 1}-{i}", mix=mix, seed=i, count=count, duration=duration)
        return fleet

    def plan(self, project: str, name: str, goal: str, tasks: list[dict[str, Any]], **more: Any) -> str:
        """A working memory for `goal` with these tasks (maps of the protocol's task fields; `constraints`,
        `owner`, `max_attempts` in `more`); returns its id."""
        plan_order(tasks)  # ValueError for a cycle, before anything is made
        memory = self.client.create_memory(project, name, goal, **more)
        self.client.add_plan(memory, tasks)
        return memory

    def run(
        self,
        memory_id: str,
        n: int,
        *,
        duration: float | None = None,
        fail_share: float = 0.0,
        backend: str = LOCAL,
        agent: str | None = None,
        repo: Path | None = None,
        agent_timeout: float = AGENT_TIMEOUT_S,
        **ray_options: Any,
    ) -> FleetBase:
        """Start `n` workers on the memory's plan (as `spawn_workers` does); each stops when nothing is left
        to do (or at `duration`). With `agent` ("claude" or "codex") each task is done by that real coding agent,
        headless, in a worktree of the git repository `repo` (agents.agentwork); else the workers are synthetic,
        failing `fail_share` of their tasks. `fleet.wait()` waits for them; `fleet.reports()` has what each did
        (a real agent's tasks under `sessions`)."""
        fleet = self._fleet(n, backend, ray_options)
        work: dict[str, Any] = (
            {"fail_share": fail_share}
            if agent is None
            else {"agent": agent, "repo": str(repo or Path.cwd()), "agent_timeout": agent_timeout}
        )
        for i in range(n):
            name = f"{agent or 'board'}-{len(self.fleets) - 1}-{i}"
            fleet.spawn(name, memory=memory_id, seed=i, duration=duration, **work)
        return fleet

    def _fleet(self, n: int, backend: str, ray_options: dict[str, Any]) -> FleetBase:
        workdir = self._workdir or Path(tempfile.mkdtemp(prefix="groove-workers-"))
        options: dict[str, Any] = {"curve": self.curve} | ray_options  # workers talk CURVE as this orchestrator
        fleet = open_fleet(backend, self.endpoint, workdir / f"fleet-{len(self.fleets)}", agents=n, **options)
        self.fleets.append(fleet)
        return fleet

    def prepare(
        self,
        workdir: Path,
        *,
        task: str | None = None,
        project: str | None = None,
        enterprise: str | None = None,
        budget: int | None = None,
        session_id: str | None = None,
        memory_id: str | None = None,
        task_id: str | None = None,
        agent_id: str | None = None,
    ) -> Session:
        """Choose the session's learnings and write their block into `workdir`/CLAUDE.md; with `memory_id`,
        add the board's side (the task `task_id`, standing decisions, and the nudges for `agent_id`)."""
        session_id = session_id or f"session-{uuid7()}"
        reply = self.client.inject(session_id, task=task, project=project, enterprise=enterprise, budget=budget)
        path = workdir / CONTEXT_FILE
        block = reply.markdown
        if memory_id is not None:
            board = board_context(self.client, memory_id, task_id, agent_id, idle=False)
            block = block.replace(C.INJECT_END, board + C.INJECT_END)
        write_block(path, block)
        ids = tuple(item.learning.id for item in reply.learnings)
        return Session(session_id, reply.injection_id, ids, path)

    def record(
        self,
        session: Session,
        *,
        success: bool,
        helpful: Iterable[str] = (),
        ignored: Iterable[str] = (),
        contradicted: Iterable[str] = (),
    ) -> OutcomeRecordReply:
        """Close the session: attributions for the learnings named (the other injected ones count as
        ignored) and whether it succeeded. A second record for the same session raises Conflict."""
        attributions = [
            (lid, outcome)
            for outcome, ids in (
                (C.OUTCOME_HELPFUL, helpful),
                (C.OUTCOME_IGNORED, ignored),
                (C.OUTCOME_CONTRADICTED, contradicted),
            )
            for lid in ids
        ]
        return self.client.close_session(
            attributions, injection_id=session.injection_id, success=success, session_id=session.session_id
        )
