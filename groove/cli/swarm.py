"""`groove swarm`: a coordinator and N agent workers, with a live view and a report (what `make run` runs)."""

from __future__ import annotations

import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import click

from groove.cli.agent import check_mix
from groove.cli.options import checked_by, connection_options, connection_settings
from groove.cli.output import emit_json, fail, pairs, table
from groove.cli.processes import start_coordinator
from groove.cli.realswarm import RealSwarm, run_real_swarm
from groove.cli.ui import DEFAULT_BIND, parse_bind, spawn_dashboard
from groove.client import GrooveClient, GrooveError
from groove.coordinator.metrics import summarize
from groove.coordinator.net.config import EMBEDDERS
from groove.protocol import constants as C
from groove.protocol.stats import StatsReply
from groove.swarm.backends import BACKENDS, LOCAL, RAY, open_fleet
from groove.swarm.coding import AGENT_TIMEOUT_S, CODING_AGENTS
from groove.swarm.fleet import FleetBase, parse_ray_address, stop_process
from groove.swarm.plans import release_plan
from groove.swarm.worker import LEASE_MS
from groove.swarm.workloads import DEFAULT_MIX, KINDS, OPS

_check_address = checked_by(parse_ray_address)


class LiveView:
    """One line per tick from the coordinator's `stats`: ops/s and p99 by kind, queue, agents, CPU, RSS."""

    def __init__(self, started: float) -> None:
        self.started = started
        self.last: tuple[float, dict[str, int]] | None = None
        self.cpu: list[float] = []
        self.rss: list[float] = []

    def line(self, s: StatsReply, now: float) -> str:
        """The view of one `stats` reply."""
        rates = {}
        if self.last is not None:
            then, counts = self.last
            for kind, op in OPS.items():
                rates[kind] = (s.op_counts.get(op, 0) - counts.get(op, 0)) / max(1e-9, now - then)
        self.last = (now, dict(s.op_counts))
        self.cpu.append(s.cpu_percent)
        self.rss.append(s.rss_mb)
        kinds = "  ".join(
            f"{kind} {rates.get(kind, 0.0):5.0f}/s p99 {s.op_ms[op].p99 if op in s.op_ms else 0.0:5.1f}ms"
            for kind, op in OPS.items()
        )
        return (
            f"{now - self.started:5.1f}s  {kinds}  queue {s.write_queue_depth:4d}  "
            f"agents {s.agents_alive}/{s.agents_known}  CPU {s.cpu_percent:3.0f}%  RSS {s.rss_mb:4.0f} MB"
        )


@click.command(name="swarm")
@click.option(
    "--agents", "n_agents", type=click.IntRange(1, 512), default=6, show_default=True, help="Agent worker processes."
)
@click.option("--duration", type=click.FloatRange(1), default=20.0, show_default=True, help="Seconds.")
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path),
    help="Data directory, kept afterwards (default: a temporary one, removed unless the run went wrong).",
)
@click.option(
    "--mix", default=DEFAULT_MIX, show_default=True, callback=check_mix, help="Each agent's mix: KIND=WEIGHT,..."
)
@click.option("--in-flight", type=click.IntRange(1, 1024), default=1, show_default=True, help="Per agent.")
@click.option(
    "--embedder",
    type=click.Choice(EMBEDDERS),
    default="minilm",
    show_default=True,
    help="The coordinator's embedder (none: keyword search only, no model loaded).",
)
@click.option(
    "--board-agents",
    type=click.IntRange(0, 512),
    default=3,
    show_default=True,
    help="Agents working the bundled release plan (300 tasks) on the board besides them; 0: none.",
)
@click.option(
    "--backend",
    type=click.Choice(BACKENDS),
    default=LOCAL,
    show_default=True,
    help="Where the agents run: processes on this host, or Ray actors spread over a Ray cluster's nodes "
    "(pip install 'groove[ray]').",
)
@click.option(
    "--ray-address",
    callback=_check_address,
    help="With --backend ray: auto (the cluster this host is in), HOST:PORT (a head node's GCS) or "
    "ray://HOST:PORT (Ray Client) [default: a local Ray started for the run].",
)
@click.option(
    "--cpus-per-agent",
    type=click.FloatRange(0.01, 64),
    default=1.0,
    show_default=True,
    help="With --backend ray: the CPUs Ray reserves for each agent.",
)
@click.option(
    "--agent",
    type=click.Choice(CODING_AGENTS),
    help="Real coding agents instead: --workers of them work a plan (--memory or --plan) in --repo, against the "
    "coordinator at --endpoint.",
)
@click.option("--memory", help="With --agent: the working memory whose plan the agents work.")
@click.option(
    "--plan",
    type=click.Path(path_type=Path, dir_okay=False),
    help="With --agent: a plan file (YAML or JSON; name, goal, constraints, tasks) made into a new working memory.",
)
@click.option("--workers", type=click.IntRange(1, 256), default=3, show_default=True, help="With --agent: agents.")
@click.option(
    "--repo",
    type=click.Path(path_type=Path, file_okay=False),
    help="With --agent: the git repository they work in, a worktree and branch per task [default: .].",
)
@click.option(
    "--agent-timeout",
    type=click.FloatRange(1),
    default=AGENT_TIMEOUT_S,
    show_default=True,
    help="With --agent: seconds an agent may spend on one task before it is stopped and the task failed.",
)
@click.option("--agent-binary", help="With --agent: the agent's program [default: claude or codex on PATH].")
@click.option(
    "--lease-ms",
    type=click.IntRange(1000, 3_600_000),
    default=LEASE_MS,
    show_default=True,
    help="With --agent: each task's lease, renewed while its agent runs; a worker gone that long loses it.",
)
@click.option(
    "--ui",
    "ui_bind",
    default=DEFAULT_BIND,
    callback=checked_by(lambda value: value == "off" or parse_bind(value)),
    show_default=True,
    help="Serve the dashboard over the synthetic swarm on HOST:PORT (any free port if taken); `off` for none.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@connection_options
@click.pass_context
def swarm_command(
    ctx: click.Context,
    n_agents: int,
    duration: float,
    data_dir: Path | None,
    mix: str,
    in_flight: int,
    embedder: str,
    board_agents: int,
    backend: str,
    ray_address: str | None,
    cpus_per_agent: float,
    agent: str | None,
    memory: str | None,
    plan: Path | None,
    workers: int,
    repo: Path | None,
    agent_timeout: float,
    agent_binary: str | None,
    lease_ms: int,
    ui_bind: str,
    as_json: bool,
) -> None:
    """Start a coordinator and N agent workers running the synthetic mix, and board agents working a plan
    (the swarm approves the tasks that need a review and nudges everyone now and then); restart any that
    crash, show a live view, stop everything cleanly at the end or on Ctrl-C, and report what was acked and
    read back, how far the plan got, and the node each agent ran on.

    With --backend ray the agents run as Ray actors, spread over the nodes, restarted by Ray if their
    process dies; the coordinator still runs here, on loopback, so the nodes are this host's (a local Ray,
    or several raylets on one machine). Across hosts, run `groove serve` where the nodes reach it and use
    Orchestrator.spawn_workers(backend="ray") (see docs/swarms.md).

    With --agent claude|codex, real coding agents work a plan instead: --workers of them, each claiming a task,
    running the agent headless in a worktree of --repo on the task's own branch, and completing or failing
    it, against the coordinator at --endpoint; a live line per second shows the plan and each agent's task,
    and the report each task's result, branch and commit. It exits 0 when every task is completed (a worker that
    crashed on the way is in the report), 1 when some are not, 130 when interrupted."""
    if backend == LOCAL and (ray_address is not None or cpus_per_agent != 1.0):
        fail("--ray-address and --cpus-per-agent go with --backend ray", 2)
    ray_options: dict[str, Any] = {"address": ray_address, "cpus_per_agent": cpus_per_agent} if backend == RAY else {}
    if agent is not None:
        job = RealSwarm(agent, workers, repo, memory, plan, agent_timeout, agent_binary, lease_ms, backend, ray_options)
        run_real_swarm(job, connection_settings(ctx.obj), as_json)
        return
    if memory is not None or plan is not None or repo is not None:
        fail("--memory, --plan and --repo go with --agent (real coding agents working a plan)", 2)
    temporary = data_dir is None
    data_dir = data_dir or Path(tempfile.mkdtemp(prefix="groove-swarm-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    try:
        coordinator, endpoint = start_coordinator(data_dir, ["--embedder", embedder])
    except RuntimeError as exc:
        fail(str(exc) + (f" (its log is in {data_dir})" if temporary else ""))
    try:
        fleet = open_fleet(backend, endpoint, data_dir / "agents", agents=n_agents + board_agents, **ray_options)
    except GrooveError as exc:
        stop_process(coordinator)
        if temporary:
            shutil.rmtree(data_dir, ignore_errors=True)
        fail(str(exc))
    click.echo(f"coordinator on {endpoint}, data in {data_dir}; {n_agents} agents for {duration:g} s", err=True)
    dashboard = spawn_dashboard(endpoint, data_dir / "ui.log", ui_bind) if ui_bind != "off" else None
    if dashboard is not None:
        click.echo(f"dashboard: {dashboard[1]} (open it to watch the swarm)", err=True)
    elif ui_bind != "off":
        click.echo(f"dashboard did not start (see {data_dir / 'ui.log'}); the swarm runs without it", err=True)
    if backend == RAY:
        click.echo(f"Ray ready, with room for every agent, in {fleet.startup_s:.1f} s", err=True)
    for i in range(n_agents):
        fleet.spawn(f"agent-{i}", mix=mix, in_flight=in_flight, seed=i, duration=duration)
    lead = Lead(endpoint, fleet, board_agents, duration) if board_agents else None
    started = time.monotonic()
    view = LiveView(started)
    final: dict[str, Any] = {}
    # Ctrl-C sets a flag the loop checks: an exception raised at an arbitrary point could lose a report
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with GrooveClient(endpoint, timeout=5.0) as client:
        while fleet.running() and not stop.wait(1.0):
            for event in fleet.check():
                click.echo(f"  {event}", err=True)
            try:
                click.echo(view.line(client.stats(), time.monotonic()), err=True)
                if lead is not None:
                    click.echo(lead.tick(client), err=True)
            except GrooveError as exc:
                click.echo(f"  stats unavailable: {exc}", err=True)
        if stop.is_set():
            click.echo("interrupted: the agents read back what was acked, then the coordinator stops", err=True)
        fleet.stop()  # interrupted or not, each agent still reads back its acked learnings and reports
        try:
            final = client.stats().model_dump()
            board = lead.report(client) if lead is not None else None
        except GrooveError as exc:
            click.echo(f"  final stats unavailable: {exc}", err=True)
            board = None
    interrupted = stop.is_set()
    elapsed = time.monotonic() - started
    if dashboard is not None:
        stop_process(dashboard[0])
    status = stop_process(coordinator)
    summary = _summary(fleet, n_agents, elapsed, final, view, status) | {"interrupted": interrupted, "board": board}
    if as_json:
        emit_json(summary)
    else:
        _print(summary)
    bad = summary["errors"] or summary["mismatches"] or summary["agents_without_report"] or status != 0
    if temporary and not bad:
        shutil.rmtree(data_dir, ignore_errors=True)
    elif temporary:
        click.echo(f"kept {data_dir} (coordinator.log, agents/) to look into what went wrong", err=True)
    if bad:
        sys.exit(1)
    if interrupted:
        sys.exit(130)  # the shell's status for a run ended by Ctrl-C


class Lead:
    """The swarm's side of the board: the plan made, reviews approved, a nudge to everyone now and then."""

    NUDGE_EVERY_S = 5.0

    def __init__(self, endpoint: str, fleet: FleetBase, agents: int, duration: float) -> None:
        with GrooveClient(endpoint, timeout=60) as client:
            self.memory = client.create_memory(
                "/srv/groove-demo/shop", "release 2.0", "ship the shop's release 2.0", ["keep the public API"]
            )
            client.add_tasks(self.memory, release_plan())
        for i in range(agents):
            fleet.spawn(f"board-{i}", memory=self.memory, fail_share=0.05, lease_ms=30_000, seed=i, duration=duration)
        self.reviewed = self.nudges_sent = 0
        self.last_nudge = time.monotonic() - self.NUDGE_EVERY_S  # the first at the first look at the board

    def tick(self, client: GrooveClient) -> str:
        """Approve what waits for a review, nudge everyone every few seconds; the board's line of the view."""
        for task in client.tasks(self.memory, status="review"):
            client.review_task(task.id, "swarm-lead", "approved")
            self.reviewed += 1
        if time.monotonic() - self.last_nudge >= self.NUDGE_EVERY_S:
            client.send_nudge("all", self.memory, "checkpoint your work before the next task", "swarm-lead")
            self.nudges_sent += 1
            self.last_nudge = time.monotonic()
        counts = client.memory(self.memory).tasks
        return "        board: " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))

    def report(self, client: GrooveClient) -> dict[str, Any]:
        """How far the plan got."""
        tasks = client.tasks(self.memory)
        done = [t for t in tasks if t.status == "completed" and t.completed_at is not None]
        lapsed = sum(1 for t in tasks if t.last_error is not None and "lapsed" in t.last_error)
        # over the time the plan took, from its first claim to its last completion, not the whole run (whose
        # start-up and wind-down would dilute it); the whole run if nothing was completed
        claimed = [t.assigned_at for t in tasks if t.assigned_at is not None]
        took_s = (max(t.completed_at for t in done if t.completed_at) - min(claimed)) / 1000 if done and claimed else 0
        return {
            "memory_id": self.memory,
            "tasks": client.memory(self.memory).tasks,
            "plan_took_s": round(took_s, 1),
            "completed_per_s": round(len(done) / took_s, 1) if took_s > 0 else 0.0,
            "retries": sum(t.attempts for t in tasks),
            "lease_expiries": lapsed,
            "reviews_approved": self.reviewed,
            "lead_nudges": self.nudges_sent,  # the lead's own, to every agent (the summary counts all of them)
        }


def _summary(
    fleet: FleetBase, n_agents: int, elapsed: float, final: dict[str, Any], view: LiveView, status: int
) -> dict[str, Any]:
    reports = fleet.reports()
    latencies = fleet.latencies()
    window = max((r["elapsed_s"] for r in reports), default=elapsed)  # the workload's own time, not start-up
    by_kind = {}
    for kind in KINDS:
        acked = sum(r["ops"].get(kind, 0) for r in reports)
        percentiles = summarize(latencies.get(kind, []))
        by_kind[kind] = {
            "acked": acked,
            "per_s": round(acked / window, 1) if window else 0.0,
            "p50_ms": round(percentiles["p50"], 2),
            "p99_ms": round(percentiles["p99"], 2),
        }
    agents = [
        {"agent_id": m.agent_id, "node": m.node[:12], "runs": m.runs, "crashes": len(m.crashes)}
        | {kind: sum(r["ops"].get(kind, 0) for r in m.reports) for kind in KINDS}
        | {"tasks": sum(r["ops"].get("complete", 0) for r in m.reports)}  # completed on the board
        | {k: sum(r[k] for r in m.reports) for k in ("errors", "verified", "mismatches")}
        for m in fleet.members.values()
    ]
    warm = view.rss[len(view.rss) // 4 :] or [0.0]
    return {
        "agents": n_agents,
        "backend": fleet.backend,
        "nodes": len({m.node for m in fleet.members.values()}),
        "backend_startup_s": round(fleet.startup_s, 2),
        "agents_without_report": sum(1 for m in fleet.members.values() if not m.reports),
        "restarts": sum(m.runs - 1 for m in fleet.members.values()),
        "elapsed_s": round(elapsed, 1),
        "ops": by_kind,
        "learnings_created": sum(r["created"] for r in reports),
        "attributions_applied": sum(r["attributions"] for r in reports),
        "verified_after": sum(r["verified"] for r in reports),
        "mismatches": sum(r["mismatches"] for r in reports),
        "errors": sum(r["errors"] for r in reports),
        "error_samples": [s for r in reports for s in r["error_samples"]][:5],
        "batches": final.get("batches_committed", 0),
        "mean_batch": round(final.get("batch_size", {}).get("mean", 0.0), 1),
        "coordinator_cpu_percent_mean": round(sum(view.cpu) / len(view.cpu), 1) if view.cpu else 0.0,
        "coordinator_rss_mb": round(final.get("rss_mb", 0.0), 1),
        "coordinator_rss_mb_after_warmup": [round(min(warm), 1), round(max(warm), 1)],
        "coordinator_exit": status,
        # every nudge stored, the agents' and the lead's, as the coordinator counted them
        "nudges_sent": final.get("op_outcomes", {}).get(C.OP_NUDGE_SEND, {}).get("ok", 0),
        # delivered: acknowledged, once per agent that acknowledged it (a nudge to all reaches several)
        "nudges_delivered": final.get("events", {}).get("nudges_acked", 0),
        "per_agent": agents,
    }


def _print(summary: dict[str, Any]) -> None:
    columns = ("agent_id", "node", "runs", *KINDS, "tasks", "errors", "verified", "mismatches")
    if summary["board"] is not None:
        click.echo(pairs([(k.replace("_", " "), v) for k, v in summary["board"].items()]))
        click.echo()
    click.echo(table(columns, [tuple(a[c] for c in columns) for a in summary["per_agent"]]))
    click.echo()
    rows = [(kind, v["acked"], v["per_s"], v["p50_ms"], v["p99_ms"]) for kind, v in summary["ops"].items()]
    click.echo(table(("kind", "acked", "per s", "p50 ms", "p99 ms"), rows))
    click.echo()
    scalars = [
        (k.replace("_", " "), v) for k, v in summary.items() if not isinstance(v, dict | list) or k.endswith("warmup")
    ]
    click.echo(pairs(scalars))
    for sample in summary["error_samples"]:
        click.echo(f"error: {sample}", err=True)
