"""How soon a coordinator killed with -9 serves again: from the new process's start to its endpoint file
(written once it serves), polled every 2 ms, against the bare interpreter's start (`python -c pass`) in the
same run. The data dir holds `--learnings` learnings, so each start recovers a crashed tier.

    python -m benchmarks.restart [--restarts 10] [--learnings 1000]
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

from benchmarks.common import latency_summary, machine
from groove.cli.output import table
from groove.cli.processes import start_coordinator
from groove.client import GrooveClient
from groove.swarm.fleet import stop_process

_POLL_S = 0.002


def _serving_after(data: Path, endpoint: str) -> tuple[float, subprocess.Popen[bytes]]:
    """Start `groove serve` on `data` at `endpoint`; seconds until its endpoint file appears, and the process."""
    started = time.perf_counter()
    try:
        proc, _ = start_coordinator(data, ["--bind", endpoint, "--embedder", "none"], poll_s=_POLL_S)
    except RuntimeError as exc:
        raise click.ClickException(f"the coordinator did not serve: {exc}") from None
    return time.perf_counter() - started, proc


def _python_start() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


@click.command()
@click.option("--restarts", type=click.IntRange(1), default=10, show_default=True)
@click.option("--learnings", type=click.IntRange(0), default=1000, show_default=True)
def main(restarts: int, learnings: int) -> None:
    """Kill a coordinator with -9 and time each start until it serves; print a table, then JSON."""
    with tempfile.TemporaryDirectory(prefix="groove-restart-") as tmp:
        data = Path(tmp)
        proc, endpoint = start_coordinator(data, ["--embedder", "none"])
        with GrooveClient(endpoint, timeout=60) as client:
            for first in range(0, learnings, 100):
                batch = range(first, min(learnings, first + 100))
                client.put_learnings(
                    [
                        {"scope": "global", "category": "solution", "description": f"d {n}", "insight": f"i {n}"}
                        for n in batch
                    ]
                )
        restart_ms, python_ms = [], []
        try:
            for _ in range(restarts):
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                seconds, proc = _serving_after(data, endpoint)
                restart_ms.append(seconds * 1000)
                python_ms.append(_python_start() * 1000)
        finally:
            stop_process(proc)
    results = {"restart": latency_summary(restart_ms), "python_start": latency_summary(python_ms)}
    ratio = round(results["restart"]["p50_ms"] / max(1e-9, results["python_start"]["p50_ms"]), 1)
    rows = [[name, r["p50_ms"], r["max_ms"]] for name, r in results.items()]
    click.echo(table(["start", "p50 ms", "max ms"], rows))
    click.echo(f"a restart takes {ratio} times the bare interpreter's start")
    line = {"bench": "restart", "restarts": restarts, "learnings": learnings, "results": results}
    click.echo(json.dumps(line | {"ratio_python": ratio, "machine": machine()}))


if __name__ == "__main__":
    main()
