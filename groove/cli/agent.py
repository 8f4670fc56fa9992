"""`groove agent`: one worker process (what swarms, the orchestrator and the load harness spawn)."""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from groove.cli.options import checked_by, connection_options, curve_of
from groove.cli.output import fail
from groove.client import GrooveError
from groove.swarm.agentwork import ready
from groove.swarm.coding import AGENT_TIMEOUT_S, CODING_AGENTS
from groove.swarm.corpus import load
from groove.swarm.worker import (
    EXIT_MISMATCHES,
    EXIT_UNVERIFIED,
    LEASE_MS,
    STOP_GRACE_S,
    SYNTHETIC,
    VECTOR_SEARCH,
    WorkerSpec,
    report_json,
    run_worker,
)
from groove.swarm.workloads import DEFAULT_MIX, parse_mix, parse_script

F = TypeVar("F", bound=Callable[..., Any])


def _check_workload(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    if value in (SYNTHETIC, VECTOR_SEARCH):
        return value
    path = Path(value)
    if not path.is_file():
        raise click.BadParameter(f"expected {SYNTHETIC}, {VECTOR_SEARCH} or a JSON-lines file; no file {value!r}")
    try:
        parse_script(path)
    except (ValueError, OSError) as exc:
        raise click.BadParameter(str(exc)) from None
    return value


# Click callbacks: a mix `parse_mix` accepts, and projects the corpus has
check_mix = checked_by(parse_mix)
_check_projects = checked_by(lambda value: load().only(value.split(",")))


def agent_option(flag: str, **kwargs: Any) -> Callable[[F], F]:
    """An option also read from GROOVE_AGENT_<NAME> (`--in-flight`: GROOVE_AGENT_IN_FLIGHT, `--agent-id`:
    GROOVE_AGENT_ID), shown in the help: containers scaled by replicas share one configuration."""
    name = flag.removeprefix("--").removeprefix("agent-").replace("-", "_").upper()
    return click.option(flag, envvar=f"GROOVE_AGENT_{name}", show_envvar=True, **kwargs)


@click.command(name="agent")
@agent_option("--agent-id", help="Name in the registry [default: <host>-<pid>].")
@agent_option(
    "--role",
    default="worker",
    show_default=True,
    help="Role in the registry.",
)
@agent_option(
    "--workload",
    default=SYNTHETIC,
    show_default=True,
    callback=_check_workload,
    help="synthetic (the learn/outcome/search/inject mix over the bundled corpus), search (vector searches) "
    "or a JSON-lines FILE of requests.",
)
@agent_option(
    "--mix",
    default=DEFAULT_MIX,
    show_default=True,
    callback=check_mix,
    help="Synthetic mix: KIND=WEIGHT,...",
)
@agent_option(
    "--rate",
    type=click.FloatRange(0.1),
    help="Requests per second to pace at.",
)
@agent_option("--duration", type=click.FloatRange(0.1), help="Seconds to run.")
@agent_option(
    "--count",
    type=click.IntRange(1),
    help="Requests to make (whichever limit first).",
)
@agent_option(
    "--in-flight",
    type=click.IntRange(1, 1024),
    default=1,
    show_default=True,
    help="Requests in flight.",
)
@agent_option("--memory", help="Work this working memory's plan (claim, complete, fail) instead of --workload.")
@agent_option(
    "--lease-ms",
    type=click.IntRange(1000, 3_600_000),
    default=LEASE_MS,
    show_default=True,
    help="With --memory: each claim's lease, renewed by the heartbeat.",
)
@agent_option(
    "--fail-share",
    type=click.FloatRange(0.0, 1.0),
    default=0.0,
    show_default=True,
    help="With --memory: the share of tasks to fail (they are retried while attempts are left).",
)
@agent_option(
    "--agent",
    type=click.Choice(CODING_AGENTS),
    help="With --memory: a real coding agent does each task, headless, in a git worktree of --repo.",
)
@agent_option(
    "--repo",
    type=click.Path(exists=True, file_okay=False),
    help="With --agent: the git repository to work in (each task gets a worktree on its own branch) [default: .].",
)
@agent_option(
    "--agent-timeout",
    type=click.FloatRange(1),
    default=AGENT_TIMEOUT_S,
    show_default=True,
    help="With --agent: seconds one task's agent may run; then it is stopped and the task failed (retried).",
)
@agent_option(
    "--agent-binary",
    help="With --agent: the agent's program [default: claude or codex on PATH].",
)
@agent_option(
    "--projects",
    callback=_check_projects,
    help="Synthetic: keep to these corpus projects (comma-separated), writing no global learning.",
)
@agent_option(
    "--stop-grace",
    type=click.FloatRange(0),
    default=STOP_GRACE_S,
    show_default=True,
    help="Seconds a stopped agent gives its requests in flight and its read-back; what is not read back by then is "
    "reported, and the agent exits 5.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Makes the synthetic workload reproducible.")
@click.option("--verify/--no-verify", default=True, show_default=True, help="Read back every acked learning.")
@click.option("--latencies-file", type=click.Path(path_type=Path), help="Write acked latencies (ms, by kind) here.")
@click.option(
    "--acked-file",
    type=click.Path(path_type=Path),
    help="Write the acked learning ids, and each learning's acked injections and attributions, here.",
)
@click.option("--start-at", type=float, help="Unix time to start the workload at (after connecting).")
@connection_options
@click.pass_context
def agent_command(ctx: click.Context, /, agent_id: str | None, **options: Any) -> None:
    """Run one agent worker against the coordinator and print its report as a JSON line.

    It says hello, heartbeats every 5 s from a side thread, and stops cleanly on SIGTERM or Ctrl-C: it
    finishes the requests in flight, reads back what was acked (a second signal skips that), all within
    --stop-grace, and prints its report. A coordinator silent for a whole --timeout ends the workload too. It
    exits 0; 4 when a reply or a read-back was not what it should have been; 5 when acked writes could not be
    read back (the report says how many and why). Every option can
    also be set by the environment variable shown in its help (containers scaled by replicas share one
    configuration).
    """
    unbounded = options["workload"] in (SYNTHETIC, VECTOR_SEARCH) and options["memory"] is None
    if options["duration"] is None and options["count"] is None and unbounded:
        fail("give --duration or --count (how long the workload runs)", 2)
    if options["agent"] is not None and options["memory"] is None:
        fail("--agent works a plan: give --memory ID", 2)
    if options["agent"] is not None:
        try:  # before anything is claimed: a missing agent or repository leaves the plan untouched
            ready(options["agent"], options["agent_binary"], Path(options["repo"] or "."))
        except GrooveError as exc:
            fail(f"agent {agent_id or options['agent']}: {exc}", 2)
    spec = WorkerSpec(
        ctx.obj["endpoint"],
        agent_id or f"{socket.gethostname()}-{os.getpid()}",
        timeout=ctx.obj["timeout"],
        curve=curve_of(ctx.obj),
        **options,
    )
    stop, abort = threading.Event(), threading.Event()

    def stopping(*_: object) -> None:
        (abort if stop.is_set() else stop).set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stopping)
    try:
        report = run_worker(spec, stop, abort)
    except GrooveError as exc:
        fail(f"agent {spec.agent_id}: {exc}")
    click.echo(report_json(report))
    if report.unverified:
        click.echo(
            f"groove: error: agent {spec.agent_id}: {report.unverified} acked writes not read back: "
            f"{report.unverified_why}",
            err=True,
        )
        if not report.mismatches:
            sys.exit(EXIT_UNVERIFIED)
    if report.mismatches:
        # the report is printed first: a harness reads it, and the status says the run found something wrong
        click.echo(f"groove: error: agent {spec.agent_id}: {report.mismatches} mismatches", err=True)
        sys.exit(EXIT_MISMATCHES)
