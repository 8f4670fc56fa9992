"""`groove swarm --agent claude|codex`: real coding agents working a plan on the board, with a live view and a
closing report. Each worker is a `groove agent --agent ... --memory ...` process (agents/agentwork.py says
what one does with a task); the coordinator is the running one at `--endpoint`.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError

from groove.cli.board import load_plan
from groove.cli.options import curve_of
from groove.cli.output import emit_json, fail, pairs, table
from groove.client import GrooveClient, GrooveError
from groove.client.board import plan_order
from groove.client.errors import GrooveTimeout
from groove.protocol.board import TaskIn
from groove.swarm.agentwork import ready
from groove.swarm.backends import open_fleet
from groove.swarm.boardwork import HELD
from groove.swarm.fleet import FleetBase
from groove.swarm.gitwork import GitError

_TICK_S = 1.0


@dataclass(frozen=True)
class RealSwarm:
    """What `groove swarm --agent` was asked to run."""

    agent: str
    workers: int
    repo: Path | None
    memory: str | None
    plan: Path | None
    agent_timeout: float
    agent_binary: str | None
    lease_ms: int
    backend: str
    ray_options: dict[str, Any]


def run_real_swarm(job: RealSwarm, settings: dict[str, Any], as_json: bool) -> None:
    """Check the job, make the plan's memory if asked, start the workers, show them working, report.
    `settings` are the connection's (cli.options.connection_settings)."""
    endpoint, timeout = settings["endpoint"], settings["timeout"]
    curve = curve_of(settings)
    if (job.memory is None) == (job.plan is None):
        fail("--agent works a plan: give --memory ID (an existing working memory) or --plan FILE (a new one)", 2)
    try:
        _, repo = ready(job.agent, job.agent_binary, (job.repo or Path.cwd()).resolve())
    except GitError as exc:
        fail(f"--repo: {exc}", 2)
    except GrooveError as exc:  # the agent's program is missing
        fail(str(exc), 2)
    _hand_down_keys(settings)
    with GrooveClient(endpoint, timeout=timeout, curve=curve) as client:
        try:
            memory_id = job.memory or _make_memory(client, job.plan, repo)
            memory = client.memory(memory_id)
        except GrooveError as exc:
            fail(str(exc), 3 if isinstance(exc, GrooveTimeout) else 1)
        workdir = Path(tempfile.mkdtemp(prefix="groove-swarm-"))
        try:
            fleet = open_fleet(job.backend, endpoint, workdir, agents=job.workers, timeout=timeout, **job.ray_options)
        except GrooveError as exc:
            fail(str(exc))
        click.echo(f"{job.workers} {job.agent} workers on {memory.name} ({memory_id}) in {repo}; logs in {workdir}",
                   err=True)  # fmt: skip
        for i in range(job.workers):
            fleet.spawn(f"{job.agent}-{i}", memory=memory_id, agent=job.agent, repo=str(repo), lease_ms=job.lease_ms,
                        agent_timeout=job.agent_timeout, agent_binary=job.agent_binary)  # fmt: skip
        stop = threading.Event()
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        started = time.monotonic()
        while fleet.running() and not stop.wait(_TICK_S):
            for event in fleet.check():
                click.echo(f"  {event}", err=True)
            try:
                click.echo(live_line(client, memory_id, time.monotonic() - started), err=True)
            except GrooveError as exc:
                click.echo(f"  board unavailable: {exc}", err=True)
        if stop.is_set():
            click.echo("interrupted: each worker stops its agent and gives its task back, no attempt counted", err=True)
        fleet.stop()
        try:
            counts = client.memory(memory_id).tasks
        except GrooveError as exc:
            fail(f"the plan's state is unavailable: {exc}")
    summary = report(fleet, memory_id, counts, time.monotonic() - started)
    if as_json:
        emit_json(summary)
    else:
        _print(summary)
    unfinished = sum(n for status, n in counts.items() if status != "completed")
    if stop.is_set():
        sys.exit(130)
    if unfinished:  # a worker that crashed on the way is in the report; the plan is what the exit status says
        sys.exit(1)


def _hand_down_keys(settings: dict[str, Any]) -> None:
    """The CURVE keys given as options, in the environment the workers (and their agents' hooks and MCP
    servers, through them) inherit: a worker process reads GROOVE_SERVER_KEY and GROOVE_KEY."""
    for name, variable in (("server_key", "GROOVE_SERVER_KEY"), ("client_key", "GROOVE_KEY")):
        value = settings.get(name)
        if value:
            os.environ[variable] = str(Path(value).resolve()) if Path(value).exists() else str(value)


def _make_memory(client: GrooveClient, plan: Path | None, repo: Path) -> str:
    """A working memory for the plan file, in `repo`, with its tasks. The tasks are checked here first (fields,
    and dependencies within the plan), so a broken plan leaves nothing behind; if the coordinator still refuses
    them (a task id another memory has), the memory made for them is cancelled."""
    assert plan is not None
    try:
        meta, tasks = load_plan(plan)
        checked = [TaskIn.model_validate(task) for task in tasks]
    except click.BadParameter as exc:
        fail(f"--plan: {exc.format_message()}", 2)
    except ValidationError as exc:
        first = exc.errors()[0]
        fail(f"--plan: {plan}: task {first['loc'][0] if first['loc'] else ''}: {first['msg']}", 2)
    ids = {task.id for task in checked}
    dangling = sorted({dep for task in checked for dep in task.depends_on if dep not in ids})
    if dangling:
        fail(f"--plan: {plan}: depends on tasks the plan does not have: {', '.join(dangling)}", 2)
    try:
        plan_order(tasks)
    except ValueError as exc:
        fail(f"--plan: {plan}: {exc}", 2)
    memory = client.create_memory(
        str(repo),
        str(meta.get("name") or plan.stem),
        str(meta.get("goal") or f"the plan in {plan.name}"),
        [str(c) for c in meta.get("constraints") or []],
    )
    try:
        client.add_plan(memory, tasks)  # in chunks, dependencies first, for a plan of any size
    except GrooveError:
        client.set_memory_status(memory, "cancelled")
        raise
    return memory


def live_line(client: GrooveClient, memory_id: str, elapsed: float) -> str:
    """The plan's tasks by status, and what each worker's agent is doing: its task and for how long."""
    counts = client.memory(memory_id).tasks
    now_ms = time.time() * 1000
    held = [t for status in sorted(HELD) for t in client.tasks(memory_id, status)]
    held.sort(key=lambda t: t.assigned_to or "")
    working = "  ".join(f"{t.assigned_to}: {t.id} {(now_ms - (t.assigned_at or now_ms)) / 1000:.0f}s" for t in held)
    plan = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    return f"{elapsed:6.1f}s  {plan}" + (f"  |  {working}" if working else "")


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else "(it printed nothing)"


def report(fleet: FleetBase, memory_id: str, counts: dict[str, int], elapsed: float) -> dict[str, Any]:
    """The closing report: the plan's tasks by status, and each worker's tasks with their results."""
    sessions = [
        {"worker": m.agent_id} | s for m in fleet.members.values() for r in m.reports for s in r.get("sessions", [])
    ]
    return {
        "memory_id": memory_id,
        "tasks": counts,
        "elapsed_s": round(elapsed, 1),
        "workers": len(fleet.members),
        "workers_without_report": sum(1 for m in fleet.members.values() if not m.reports),
        "worker_crashes": sum(len(m.crashes) for m in fleet.members.values()),
        # each crashed run: its worker and the last line of what it printed
        "crashed": [f"{m.agent_id}: {_last_line(c)}" for m in fleet.members.values() for c in m.crashes],
        "sessions": sessions,
    }


def _print(summary: dict[str, Any]) -> None:
    rows = [
        (s["worker"], s["task_id"], s["result"], f"{s['elapsed_s']:.1f}", s["branch"], s["commit"][:10], s["error"])
        for s in summary["sessions"]
    ]
    click.echo(table(("worker", "task", "result", "seconds", "branch", "commit", "error"), rows))
    click.echo()
    scalars = [(k.replace("_", " "), v) for k, v in summary.items() if k != "sessions"]
    click.echo(pairs(scalars))
