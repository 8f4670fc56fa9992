"""Real coding agents on the board: what groove adds around them, with a scripted model so that no model's time
is in any figure (the figures are groove's and the agents' own).

- **MCP start-up**: `groove mcp` spawned `--spawns` times, each timed from the spawn to its tools listed (an
  agent offers them only once listed), beside the bare interpreter's start in the same run (`python -c pass`).
- **A plan drained by Claude Code workers**: `--tasks` tasks (chains of four) worked by `--workers` real
  `claude` processes through `Orchestrator.run(agent="claude")`; each task's agent writes a file with a tool
  call, then completes the task through groove's MCP server. Reported: tasks per minute, the orchestration
  overhead per task (claim to agent start, plus agent exit to the task's end acked, as each worker measured
  it), each worker's resident memory beside its agent, and a bare `claude -p` run of the same scene with no
  groove at all, the agents' own time to compare a task's with.
- **Nudges**: `--nudges` of the tasks make a tool call that takes 1 s; once its agent is at work an immediate
  nudge is sent to the agent holding it, and timed until a model request of that task shows it, counting the
  model requests between (at most one: the hook runs after the very next tool call).

    python -m benchmarks.realswarm [--tasks 100] [--workers 8] [--nudges 10] [--spawns 20]
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import click
import psutil

from benchmarks.common import latency_summary, machine
from benchmarks.scripted_model import Scene, Script, ScriptedModel
from groove.cli.output import pairs
from groove.cli.processes import start_coordinator
from groove.client import GrooveClient
from groove.swarm.coding import find_binary, groove_argv
from groove.swarm.fleet import stop_process
from groove.swarm.orchestrator import Orchestrator

AGENTS_BIN = Path(__file__).resolve().parents[1] / "coding-agents" / "node_modules" / ".bin"
NUDGE = "NUDGE {n}: check the totals before you finish"
_FIELDS = {"task_id": r"working task `([^`]+)`", "agent_id": r"You are agent `([^`]+)`"}
_COMPLETE = {"tool": "mcp__groove__complete_task",
             "input": {"task_id": "{task_id}", "agent_id": "{agent_id}", "summary": "done: {task_id}"}}  # fmt: skip


def mcp_startup(endpoint: str, spawns: int) -> dict[str, Any]:
    """Spawn to tools listed for `groove mcp`, and the bare interpreter's start, in ms."""
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    messages = [hello, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]  # fmt: skip
    listed, bare = [], []
    for _ in range(spawns):
        started = time.perf_counter()
        proc = subprocess.Popen(groove_argv("mcp", "--endpoint", endpoint), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE)  # fmt: skip
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        proc.stdin.flush()
        while '"id":2' not in proc.stdout.readline().decode():
            pass
        listed.append((time.perf_counter() - started) * 1000)
        proc.stdin.close()
        proc.wait(10)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        bare.append((time.perf_counter() - started) * 1000)
    return {"groove_mcp": latency_summary(listed), "bare_python": latency_summary(bare)}


def _plan(tasks: int) -> list[dict[str, Any]]:
    """Chains of four: each task waits for the one before it in its chain."""
    return [{"id": f"b{i:04d}", "title": f"ledger step {i}"} | ({"depends_on": [f"b{i - 1:04d}"]} if i % 4 else {})
            for i in range(tasks)]  # fmt: skip


def _script(tasks: int, nudged: set[int]) -> Script:
    scenes = []
    for i in range(tasks):
        work = [{"shell": f"echo {i} > b{i:04d}.txt"}]
        if i in nudged:  # a tool call that takes a while: the nudge is sent during it
            work = [{"shell": 'python3 -c "import time; time.sleep(1)"'}, *work]
        scenes.append(Scene([rf"working task `b{i:04d}`"], [*work, _COMPLETE, {"text": "done"}]))
    return Script(scenes=scenes, fields=_FIELDS)


class Watch(threading.Thread):
    """Samples the workers' resident memory (their own, not their agents'), and sends each nudge once its task's
    agent is at work."""

    def __init__(self, endpoint: str, memory: str, nudged: set[int], model: ScriptedModel) -> None:
        super().__init__(daemon=True)
        self.endpoint, self.memory, self.nudged, self.model = endpoint, memory, set(nudged), model
        self.rss_mb: list[float] = []
        self.sent: dict[int, tuple[float, str]] = {}  # task number -> (time sent, text)
        self.stopped = threading.Event()

    def run(self) -> None:
        me = psutil.Process()
        with GrooveClient(self.endpoint, timeout=30) as client:
            while not self.stopped.wait(0.2):
                for proc in me.children():
                    with contextlib.suppress(psutil.Error):  # a worker that just ended
                        if "agent" in proc.cmdline():
                            self.rss_mb.append(proc.memory_info().rss / 2**20)
                for i in sorted(self.nudged - set(self.sent)):
                    task = f"b{i:04d}"
                    if not any(self.model.seen(rf"working task `{task}`")):
                        continue
                    holder = client.task(task).assigned_to
                    if holder is None:
                        continue
                    text = NUDGE.format(n=i)
                    self.sent[i] = (time.time(), text)
                    client.send_nudge(holder, self.memory, text, "bench", priority="high", delivery="immediate")

    def delivery(self) -> tuple[list[float], int]:
        """Each nudge's time from sent to in a model request (ms), and the most model requests of its task
        between the two."""
        times, later = [], 0
        for i, (sent, text) in self.sent.items():
            mine = [r for r in self.model.seen(rf"working task `b{i:04d}`") if r.at >= sent]
            shown = next((n for n, r in enumerate(mine) if text in r.text), None)
            if shown is not None:
                times.append((mine[shown].at - sent) * 1000)
                later = max(later, shown)
        return times, later


def _bare_agent(model: ScriptedModel, env: dict[str, str], repo: Path, runs: int) -> list[float]:
    """Seconds for `claude -p` alone on a task's scene (its tool call and final answer), no groove."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([find_binary("claude"), "-p", "You are agent `bare`, working task `b0000` now.",
                        "--output-format", "stream-json", "--verbose", "--allowedTools", "Bash"],
                       cwd=repo, env=env, capture_output=True, check=True, timeout=120)  # fmt: skip
        times.append(time.perf_counter() - started)
    return times


@click.command()
@click.option("--tasks", type=click.IntRange(1), default=100, show_default=True)
@click.option("--workers", type=click.IntRange(1), default=8, show_default=True)
@click.option("--nudges", type=click.IntRange(0), default=10, show_default=True, help="Tasks nudged mid-way.")
@click.option("--spawns", type=click.IntRange(1), default=20, show_default=True, help="groove mcp start-ups timed.")
def main(tasks: int, workers: int, nudges: int, spawns: int) -> None:
    """Drain a plan with real Claude Code workers against a scripted model; print the figures, then JSON."""
    nudged = set(range(1, tasks, max(1, tasks // max(1, nudges)))[:nudges]) if nudges else set()
    with tempfile.TemporaryDirectory(prefix="groove-realswarm-") as tmp:
        root = Path(tmp)
        (root / "data").mkdir()
        proc, endpoint = start_coordinator(root / "data", ["--embedder", "none"])
        try:
            startup = mcp_startup(endpoint, spawns)
            repo = root / "ledger"
            repo.mkdir()
            for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "init"]):
                subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", *args], cwd=repo, check=True)
            with ScriptedModel(_script(tasks, nudged)) as model:
                env = model.environment(root / "home") | {"PATH": f"{AGENTS_BIN}{os.pathsep}{os.environ['PATH']}"}
                os.environ.update(env)  # the workers and their agents inherit it
                bare = _bare_agent(model, env, repo, runs=3)
                with Orchestrator(endpoint, workdir=root / "fleet") as orchestrator:
                    memory = orchestrator.plan(str(repo), "ledger", "a ledger, step by step", _plan(tasks))
                    watch = Watch(endpoint, memory, nudged, model)
                    watch.start()
                    started = time.monotonic()
                    fleet = orchestrator.run(memory, workers, agent="claude", repo=repo)
                    fleet.wait()
                    wall = time.monotonic() - started
                    watch.stopped.set()
                    watch.join()
                    counts = orchestrator.client.memory(memory).tasks
                    reports = fleet.reports()
        finally:
            stop_process(proc)
    sessions = [s for r in reports for s in r["sessions"]]
    delivered, later = watch.delivery()
    result = {
        "mcp_startup": startup,
        "tasks": counts,
        "workers": workers,
        "tasks_per_min": round(counts.get("completed", 0) / wall * 60, 1),
        "wall_s": round(wall, 1),
        "overhead": latency_summary([s["overhead_ms"] for s in sessions]),
        "session_s_mean": round(sum(s["elapsed_s"] for s in sessions) / max(1, len(sessions)), 2),
        "bare_claude_s_mean": round(sum(bare) / len(bare), 2),
        "nudge": latency_summary(delivered)
        | {"sent": len(watch.sent), "seen": len(delivered), "most_requests_later": later},
        "worker_rss_mb_max": round(max(watch.rss_mb, default=0.0), 1),
    }
    rows = [
        ("groove mcp spawn to tools listed, p50 / p99 ms",
         f"{startup['groove_mcp']['p50_ms']:.0f} / {startup['groove_mcp']['p99_ms']:.0f}"),
        ("bare python start, p50 ms", f"{startup['bare_python']['p50_ms']:.0f}"),
        ("tasks completed per minute", result["tasks_per_min"]),
        ("orchestration overhead per task, p50 / p99 ms",
         f"{result['overhead']['p50_ms']:.0f} / {result['overhead']['p99_ms']:.0f}"),
        ("agent session, mean s (bare claude -p: s)", f"{result['session_s_mean']} ({result['bare_claude_s_mean']})"),
        ("nudge sent to in front of the model, p50 / p99 ms",
         f"{result['nudge']['p50_ms']:.0f} / {result['nudge']['p99_ms']:.0f}"),
        ("nudge: most model requests later", later),
        ("worker RSS beside its agent, max MB", result["worker_rss_mb_max"]),
    ]  # fmt: skip
    click.echo(pairs(rows))
    click.echo(json.dumps({"bench": "realswarm", "tasks_planned": tasks, "result": result, "machine": machine()}))


if __name__ == "__main__":
    main()
