"""Helpers the tests share: deadlines, endpoints, coordinator process handles, CLI runs, sample learnings."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import click
import yaml

from groove.cli.processes import start_coordinator
from groove.swarm.coding import groove_argv
from groove.swarm.fleet import stop_process

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[1]  # the repository


def subcommands(group: click.Group) -> dict[str, click.Command]:
    """A group's commands by name, loading each (`groove`'s own verbs load only when asked for)."""
    ctx = click.Context(group)
    found = {name: group.get_command(ctx, name) for name in group.list_commands(ctx)}
    return {name: command for name, command in found.items() if command is not None}


def compose() -> dict[str, Any]:
    """docker-compose.yml, parsed."""
    data: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return data


def wait_for(condition: Callable[[], T], what: str, timeout: float = 10.0, every: float = 0.05) -> T:
    """Poll `condition` until it returns something truthy, and return it; fail naming `what` at the deadline."""
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        assert time.monotonic() < deadline, f"{what}: not within {timeout:.0f} s"
        time.sleep(every)
    return result


@contextmanager
def silent_endpoint() -> Iterator[str]:
    """A loopback TCP endpoint where nothing listens. Its port stays bound (not listening) until the block ends,
    so nothing else can take it meanwhile: connections to it are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield f"tcp://127.0.0.1:{s.getsockname()[1]}"


@dataclass
class RunningCoordinator:
    """A `groove serve` subprocess and how to reach, stop, kill and restart it."""

    data_dir: Path
    args: list[str]
    proc: subprocess.Popen[bytes]
    endpoint: str
    history: list[subprocess.Popen[bytes]] = field(default_factory=list)
    env: dict[str, str] | None = None  # environment variables set for it, over this process's

    def stop(self) -> int:
        """SIGTERM and wait: the coordinator flushes and exits."""
        return stop_process(self.proc, grace=30)

    def kill(self) -> None:
        """kill -9: no flush, no goodbye."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def restart(self) -> None:
        """Start again on the same data dir and endpoint."""
        self.history.append(self.proc)
        self.proc, self.endpoint = start_coordinator(self.data_dir, ["--bind", self.endpoint, *self.args], self.env)

    def log(self) -> str:
        """Everything the coordinator(s) logged so far."""
        return (self.data_dir / "coordinator.log").read_text(errors="replace")


def run_groove(*args: str, timeout: float = 60, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the `groove` CLI as a subprocess and capture its output."""
    return subprocess.run(
        groove_argv(*args),
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


def learning(scope: str = "global", n: int = 0, **extra: object) -> dict[str, object]:
    """A valid learning map."""
    return {
        "scope": scope,
        "category": "solution",
        "description": f"description {n}",
        "insight": f"insight {n}",
        **extra,
    }


def spawn_agent(endpoint: str, *args: str, timeout: float = 30.0) -> subprocess.Popen[bytes]:
    """Start a `groove agent` worker process against `endpoint`; `args` go to the agent verb."""
    argv = groove_argv("--endpoint", endpoint, "--timeout", str(timeout), "agent", *args)
    return subprocess.Popen(argv, stdout=subprocess.PIPE)


def agent_report(proc: subprocess.Popen[bytes], timeout: float = 300, status: int = 0) -> dict[str, Any]:
    """Wait for a worker and return its JSON report; fails the test unless it exited with `status`."""
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == status, f"agent exited with status {proc.returncode}"
    report: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return report


README = Path(__file__).resolve().parents[1] / "README.md"
DOCS = README.parent / "docs"


def example(name: str, language: str) -> str:
    """The `<!-- example: NAME -->` block of the README or of a docs page, as written."""
    for page in [README, *sorted(DOCS.glob("*.md"))]:
        found = re.search(rf"<!-- example: {name} -->\s*```{language}\n(.*?)```", page.read_text(), re.S)
        if found:
            return found.group(1)
    raise AssertionError(f"neither the README nor a docs page has its {name} example any more")


def run_readme_example(
    name: str, endpoint: str, workdir: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the `<!-- example: NAME -->` Python block (README or docs) as written, in `workdir`, against
    `endpoint` (`env` over this process's environment)."""
    (workdir / "example.py").write_text(example(name, "python"))
    run = subprocess.run(
        [sys.executable, "example.py"],
        cwd=workdir,
        env={**os.environ, "GROOVE_ENDPOINT": endpoint, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    return run


def benchmark(name: str, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run `python -m benchmarks.NAME ARGS` as users do; its output, and the JSON line it ends with."""
    argv = [sys.executable, "-m", f"benchmarks.{name}", *args]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    # a failed run says why: its own last lines, not only its exit status
    assert run.returncode == 0, f"{name} exited {run.returncode}:\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    result: dict[str, Any] = json.loads(run.stdout.splitlines()[-1])
    return run, result


def drawn_as_committed(data: Path, out: Path, charts: int, *args: str) -> list[Path]:
    """Draw `data`'s charts into `out` (`python -m benchmarks.plots`, with ARGS): `charts` of them, each as
    docs/plots holds it, so a chart cannot drift from its data."""
    _, result = benchmark("plots", str(data), "--out", str(out), *args)
    drawn = [Path(path) for path in result["written"]]
    assert len(drawn) == charts
    for chart in drawn:
        assert chart.read_text() == (Path("docs/plots") / chart.name).read_text(), chart.name  # as committed
    return drawn
