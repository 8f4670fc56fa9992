"""The SessionStart hook's latency as an agent sees it: `groove hook SessionStart` run as a new process with the
event's JSON on stdin, from process start to exit, against peers measured in the same run:
- `python -c pass`: the interpreter's own start, the floor no Python hook goes below;
- `inject.prepare` from a client already running: the coordinator's share of the work.

One coordinator with the real model on a fresh data dir holds `--learnings` learnings, half of them in the
project the sessions work in. Each run is a new session (a new injection), closed afterwards by a timed
`groove hook SessionEnd`.

    python -m benchmarks.hook [--learnings 2000] [--sessions 100]
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

from benchmarks.common import latency_summary, machine
from benchmarks.inject import PROJECT, preload
from benchmarks.search import wait_for
from groove.cli.output import table
from groove.cli.processes import start_coordinator
from groove.client import GrooveClient
from groove.swarm.coding import groove_argv
from groove.swarm.fleet import stop_process

_WARM = 5
_MEASURED = ("session_start_hook", "session_end_hook", "python_start", "inject_prepare_in_process")


def _timed(argv: list[str], stdin: str, env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, timeout=60, check=False)
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise click.ClickException(f"{' '.join(argv[-3:])} failed: {done.stderr.strip()}")
    return elapsed, done.stdout


@click.command()
@click.option("--learnings", type=click.IntRange(10), default=2000, show_default=True)
@click.option("--sessions", type=click.IntRange(1), default=100, show_default=True)
def main(learnings: int, sessions: int) -> None:
    """Time SessionStart and SessionEnd hooks against the bare interpreter's start and an in-process
    `inject.prepare`; print a table, then JSON."""
    rng = random.Random(11)
    with tempfile.TemporaryDirectory(prefix="groove-hook-") as tmp:
        proc, endpoint = start_coordinator(Path(tmp), ["--bind", "tcp://127.0.0.1:0"])
        env = {**os.environ, "GROOVE_STATE_DIR": str(Path(tmp) / "state"), "GROOVE_ENDPOINT": endpoint}
        try:
            with GrooveClient(endpoint, timeout=60) as client:
                preload(client, rng, learnings)
                wait_for(lambda: client.stats().embedder not in ("loading", "none"), 300)
                times: dict[str, list[float]] = {name: [] for name in _MEASURED}
                given = 0
                for i in range(sessions + _WARM):
                    event = {"session_id": f"bench-{i}", "cwd": PROJECT, "hook_event_name": "SessionStart",
                             "source": "startup"}  # fmt: skip
                    start, out = _timed(groove_argv("hook", "SessionStart"), json.dumps(event), env)
                    given += bool(out)
                    end, _ = _timed(groove_argv("hook", "SessionEnd"), json.dumps(event), env)
                    floor, _ = _timed([sys.executable, "-c", "pass"], "", env)
                    began = time.perf_counter()
                    client.inject(f"bare-{i}", project=PROJECT)
                    work = (time.perf_counter() - began) * 1000
                    if i >= _WARM:
                        for name, took in zip(_MEASURED, (start, end, floor, work), strict=True):
                            times[name].append(took)
        finally:
            stop_process(proc)
    results = {name: latency_summary(took) for name, took in times.items()}
    rows = [(name, r["p50_ms"], r["p99_ms"], r["max_ms"]) for name, r in results.items()]
    click.echo(table(("measured", "p50 ms", "p99 ms", "max ms"), rows))
    click.echo(f"sessions given learnings: {given} of {sessions + _WARM}")
    line = {"bench": "hook", "learnings": learnings, "sessions": sessions, "results": results, "machine": machine()}
    click.echo(json.dumps(line))


if __name__ == "__main__":
    main()
