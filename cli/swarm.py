"""`groove agent` (one worker process) and `groove swarm` (a coordinator plus N workers, with a live view)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from agents import GrooveClient, GrooveError
from agents.worker import WorkerSpec, report_json, run_worker
from cli.output import emit_json, fail, pairs, table

_START_TIMEOUT_S = 60.0


def groove_argv(*args: str) -> list[str]:
    """The command line that runs `groove ARGS` with this interpreter."""
    return [sys.executable, "-m", "cli", *args]


@click.command(name="agent")
@click.option("--agent-id", default=lambda: f"agent-{os.getpid()}", help="Name in the coordinator's registry.")
@click.option("--workload", type=click.Choice(["basic", "writes", "search"]), default="basic", show_default=True)
@click.option("--rate", type=click.FloatRange(0.1), help="Writes per second to pace the writes workload at.")
@click.option("--duration", type=click.FloatRange(0.1), help="Seconds to run.")
@click.option("--count", type=click.IntRange(1), help="Operations to run (whichever limit comes first).")
@click.option(
    "--in-flight",
    type=click.IntRange(1, 1024),
    default=1,
    show_default=True,
    help="Requests in flight (writes workload).",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--scope", "scopes", multiple=True, default=["global"], show_default=True, help="Scopes to write to (repeatable)."
)
@click.option("--latencies-file", type=click.Path(path_type=Path), help="Write acked-write latencies (ms) here.")
@click.option(
    "--acked-file",
    type=click.Path(path_type=Path),
    help="Write the acked learning ids, each with its count of acked outcomes, here.",
)
@click.option("--start-at", type=float, help="Unix time to start the workload at (after connecting).")
@click.pass_context
def agent_command(ctx: click.Context, /, scopes: tuple[str, ...], **options: Any) -> None:
    """Run one agent worker against the coordinator and print its report as a JSON line."""
    if options["duration"] is None and options["count"] is None:
        fail("give --duration or --count")
    spec = WorkerSpec(ctx.obj["endpoint"], scopes=list(scopes), timeout=ctx.obj["timeout"], **options)
    try:
        report = run_worker(spec)
    except GrooveError as exc:
        fail(f"agent {spec.agent_id}: {exc}")
    click.echo(report_json(report))


def start_coordinator(data_dir: Path, extra: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    """Start `groove serve` on a free loopback port; returns the process and its endpoint once it serves."""
    endpoint_file = data_dir / "endpoint"
    endpoint_file.unlink(missing_ok=True)
    log = open(data_dir / "coordinator.log", "ab")  # noqa: SIM115 - the child keeps writing to it
    proc = subprocess.Popen(
        groove_argv(
            "serve",
            "--data-dir",
            str(data_dir),
            "--bind",
            "tcp://127.0.0.1:0",
            "--endpoint-file",
            str(endpoint_file),
            *extra,
        ),
        stdout=log,
        stderr=log,
    )
    deadline = time.monotonic() + _START_TIMEOUT_S
    while not endpoint_file.exists():
        if proc.poll() is not None:
            tail = (data_dir / "coordinator.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"coordinator exited with status {proc.returncode}:\n{tail}")
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"coordinator did not start within {_START_TIMEOUT_S:.0f} s")
        time.sleep(0.05)
    return proc, endpoint_file.read_text().strip()


def stop_process(proc: subprocess.Popen[bytes], grace: float = 30.0) -> int:
    """SIGTERM, then SIGKILL after `grace` seconds; returns the exit status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


@click.command(name="swarm")
@click.option("--agents", "n_agents", type=click.IntRange(1, 512), default=6, show_default=True)
@click.option("--duration", type=click.FloatRange(1), default=20.0, show_default=True, help="Seconds.")
@click.option("--data-dir", type=click.Path(path_type=Path), help="Data directory (default: a new temp dir).")
@click.option(
    "--project",
    "projects",
    multiple=True,
    default=["/srv/demo/api", "/srv/demo/web"],
    show_default=True,
    help="Project roots the agents write to, besides global (repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def swarm_command(
    n_agents: int, duration: float, data_dir: Path | None, projects: tuple[str, ...], as_json: bool
) -> None:
    """Start a coordinator and N agent workers, show progress, and report what was acked and read back."""
    data_dir = data_dir or Path(tempfile.mkdtemp(prefix="groove-swarm-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    try:
        coordinator, endpoint = start_coordinator(data_dir, [])
    except RuntimeError as exc:
        fail(str(exc))
    click.echo(f"coordinator on {endpoint}, data in {data_dir}; {n_agents} agents for {duration:g} s", err=True)
    scopes = ["global"] + [f"project:{p}" for p in projects]
    agents = [
        subprocess.Popen(
            groove_argv(
                "--endpoint",
                endpoint,
                "agent",
                "--agent-id",
                f"agent-{i}",
                "--workload",
                "basic",
                "--duration",
                str(duration),
                "--seed",
                str(i),
                *[a for s in scopes for a in ("--scope", s)],
            ),
            stdout=subprocess.PIPE,
        )
        for i in range(n_agents)
    ]
    started = time.monotonic()
    final: dict[str, Any] = {}
    try:
        with GrooveClient(endpoint, timeout=5.0) as client:
            last, last_t = 0, started
            while any(a.poll() is None for a in agents):
                time.sleep(1.0)
                try:
                    s = client.stats()
                except GrooveError as exc:
                    click.echo(f"  stats unavailable: {exc}", err=True)
                    continue
                now = time.monotonic()
                rate = (s.writes_committed - last) / max(1e-9, now - last_t)
                last, last_t = s.writes_committed, now
                click.echo(
                    f"  {now - started:5.1f}s  writes {s.writes_committed:7d} ({rate:6.0f}/s)  "
                    f"queue {s.write_queue_depth:4d}  batch {s.batch_size.mean:5.1f}  "
                    f"commit p99 {s.commit_ms.p99:6.2f} ms  agents {s.agents_alive}/{s.agents_known}  "
                    f"embed queue {s.embedding_queue_depth:5d}  "
                    f"RSS {s.rss_mb:4.0f} MB  CPU {s.cpu_percent:3.0f}%",
                    err=True,
                )
            final = client.stats().model_dump()
    except KeyboardInterrupt:
        click.echo("interrupted: stopping agents and coordinator", err=True)
        for a in agents:
            a.terminate()
    elapsed = time.monotonic() - started
    reports = []
    for a in agents:
        out, _ = a.communicate()
        lines = out.decode(errors="replace").strip().splitlines()
        if a.returncode == 0 and lines:
            reports.append(json.loads(lines[-1]))
    status = stop_process(coordinator)
    summary = _summary(reports, n_agents, elapsed, final, status)
    if as_json:
        emit_json(summary)
    else:
        click.echo(
            table(
                ("agent", "writes", "outcomes", "reads", "verified", "mismatches", "errors"),
                [
                    (r["agent_id"], r["writes"], r["outcomes"], r["reads"], r["verified"], r["mismatches"], r["errors"])
                    for r in reports
                ],
            )
        )
        click.echo()
        click.echo(pairs([(k.replace("_", " "), v) for k, v in summary.items() if not isinstance(v, dict)]))
    if summary["errors"] or summary["mismatches"] or summary["agents_failed"] or status != 0:
        sys.exit(1)


def _summary(
    reports: list[dict[str, Any]], n_agents: int, elapsed: float, final: dict[str, Any], status: int
) -> dict[str, Any]:
    writes = sum(r["writes"] for r in reports)

    def rate(key: str) -> float:
        # agents run side by side, so the swarm's rate is the sum of each agent's own
        total: float = sum(float(r[key]) / float(r["elapsed_s"]) for r in reports if r["elapsed_s"] > 0)
        return round(total, 1)

    return {
        "agents": n_agents,
        "agents_failed": n_agents - len(reports),
        "elapsed_s": round(elapsed, 1),
        "writes_acked": writes,
        "outcomes_applied": sum(r["outcomes"] for r in reports),
        "reads": sum(r["reads"] for r in reports),
        "verified_after": sum(r["verified"] for r in reports),
        "mismatches": sum(r["mismatches"] for r in reports),
        "errors": sum(r["errors"] for r in reports),
        "learnings_per_s": rate("writes"),
        "attributions_per_s": rate("outcomes"),
        "reads_per_s": rate("reads"),
        "verify_s": round(max((r["verify_s"] for r in reports), default=0.0), 1),
        "batches": final.get("batches_committed", 0),
        "mean_batch": round(final.get("batch_size", {}).get("mean", 0.0), 1),
        "coordinator_rss_mb": round(final.get("rss_mb", 0.0), 1),
        "coordinator_exit": status,
    }
