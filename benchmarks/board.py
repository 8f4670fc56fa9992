"""The board under a swarm: N agent processes drain a task graph through groove, then through a SQLite peer.

    python -m benchmarks.board [--agents 32] [--tasks 20000] [--depth 40]

The graph has `depth` levels of `tasks / depth` tasks; each task past the first level depends on two tasks
of the level before. Every agent loops claim → complete until the graph is done. The peer is what agents
sharing a file would do: one SQLite WAL file, each claim and each completion one `BEGIN IMMEDIATE`
transaction by the agent itself. Reported for each: tasks/s drained, claim and complete latency
(p50/p99/p99.9/max, over 1 s), lease expiries, and the history check — every task completed exactly once,
and none claimed before all its dependencies completed. The last line is JSON.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import click

from benchmarks.common import ProcessTree, latency_summary, machine, ratio
from groove.cli.output import table
from groove.cli.processes import start_coordinator
from groove.client import GrooveClient
from groove.protocol import constants as C
from groove.swarm.fleet import stop_process

_LEASE_MS = 60_000
_IDLE_S = 0.005  # an agent that found nothing ready polls again after this
_SETTLE_S = 2.0
_PER_AGENT_S = 0.25  # agent processes start together once all are up (one takes ~0.3 s of CPU to start)
_ADD_CHUNK = 5000
_PROBE = "nudge-probe"


def graph(tasks: int, depth: int) -> list[dict[str, Any]]:
    """The task graph, level by level: two dependencies per task past the first level, priorities varied."""
    width = max(1, tasks // depth)
    out = []
    for level in range(depth):
        for i in range(width):
            deps = sorted({f"t{level - 1}-{i}", f"t{level - 1}-{(i * 7 + 1) % width}"}) if level else []
            out.append({"id": f"t{level}-{i}", "title": f"task {level}-{i}", "priority": i % 5, "depends_on": deps})
    return out


def _spawn(role: str, args: list[str], count: int, work: Path) -> list[tuple[subprocess.Popen[bytes], Path]]:
    start_at = time.time() + _SETTLE_S + _PER_AGENT_S * count
    procs = []
    for n in range(count):
        out = work / f"{role}-{n}.json"
        argv = [sys.executable, "-m", "benchmarks.board", role, *args, "--agent-id", f"a{n}"]
        procs.append((subprocess.Popen([*argv, "--start-at", str(start_at), "--out", str(out)]), out))
    return procs


def _gather(procs: list[tuple[subprocess.Popen[bytes], Path]], timeout: float) -> list[list[Any]]:
    records: list[list[Any]] = []
    for proc, out in procs:
        if proc.wait(timeout=timeout) != 0:
            raise RuntimeError(f"an agent exited with {proc.returncode}")
        records += json.loads(out.read_text())
    return records


def summary(records: list[list[Any]], expected: list[dict[str, Any]], expiries: int) -> dict[str, Any]:
    """Throughput, latencies and the history check from the agents' records [task, claimed_at, claim_s,
    completed_at, complete_s] (times in seconds since the epoch)."""
    if not records:
        return {"tasks_per_s": 0.0, "completed": 0}
    first = min(r[1] for r in records)
    last = max(r[3] for r in records)
    completed: dict[str, list[list[Any]]] = {}
    for record in records:
        completed.setdefault(record[0], []).append(record)
    twice = sum(1 for runs in completed.values() if len(runs) > 1)
    missing = sum(1 for task in expected if task["id"] not in completed)
    early = 0
    for task in expected:
        mine = completed.get(task["id"])
        if mine is None:
            continue
        for dep in task["depends_on"]:
            done = completed.get(dep)
            # the claim's reply came before the dependency's completion was even sent (its claim's reply time)
            if done is None or done[0][1] + done[0][2] > mine[0][1] + mine[0][2]:
                early += 1
    return {
        "tasks_per_s": round(len(records) / max(1e-9, last - first), 1),
        "completed": len(records),
        "claim_ms": latency_summary([r[2] * 1000 for r in records]),
        "complete_ms": latency_summary([r[4] * 1000 for r in records]),
        "lease_expiries": expiries,
        "history": {"completed_twice": twice, "never_completed": missing, "before_dependencies": early},
    }


class NudgeProbe:
    """While the agents work: an `immediate` nudge every 100 ms to a connected probe agent, timed from just
    before `nudge.send` is sent to the push's arrival at the probe's own connection."""

    def __init__(self, endpoint: str, memory: str) -> None:
        self.endpoint, self.memory = endpoint, memory
        self.sent: dict[str, float] = {}
        self.arrived: dict[str, float] = {}
        self.stopped = threading.Event()
        self.ready = threading.Event()
        self.threads = [threading.Thread(target=self._listen), threading.Thread(target=self._send)]

    def start(self) -> None:
        """Connect the probe, then nudge it until stopped."""
        for thread in self.threads:
            thread.start()

    def stop(self) -> None:
        """Stop nudging; wait a moment for the pushes under way."""
        time.sleep(0.5)
        self.stopped.set()
        for thread in self.threads:
            thread.join()

    def _listen(self) -> None:
        with GrooveClient(self.endpoint, timeout=60) as probe:
            probe.hello(_PROBE)
            self.ready.set()
            beat = time.monotonic()
            while not self.stopped.is_set():
                for nudge in probe.pushed_nudges(wait=0.2):
                    self.arrived.setdefault(nudge.message, time.monotonic())
                if time.monotonic() - beat > C.HEARTBEAT_INTERVAL_S:  # stays alive in the registry
                    probe.heartbeat(_PROBE)
                    beat = time.monotonic()

    def _send(self) -> None:
        self.ready.wait()
        with GrooveClient(self.endpoint, timeout=60) as lead:
            n = 0
            while not self.stopped.wait(0.1):
                message = f"probe {n}"
                self.sent[message] = time.monotonic()
                lead.send_nudge(_PROBE, self.memory, message, "bench", "high", "immediate")
                n += 1

    def summary(self) -> dict[str, Any]:
        """Push latencies (ms) and how many never arrived."""
        took = [(self.arrived[m] - t) * 1000 for m, t in self.sent.items() if m in self.arrived]
        return latency_summary(took) | {"sent": len(self.sent), "missed": len(self.sent) - len(took)}


def run_groove(tasks: list[dict[str, Any]], agents: int, work: Path, chain: bool) -> dict[str, Any]:
    """The graph drained through a fresh coordinator."""
    data = work / "data"
    data.mkdir()
    coordinator, endpoint = start_coordinator(data, ["--embedder", "none"])
    try:
        with GrooveClient(endpoint, timeout=600) as client:
            memory = client.create_memory("/srv/board-bench", "bench", "drain the graph")
            for i in range(0, len(tasks), _ADD_CHUNK):
                client.add_tasks(memory, tasks[i : i + _ADD_CHUNK])
            chained = ["--chain" if chain else "--no-chain"]
            tree = ProcessTree(coordinator.pid)
            procs = _spawn("groove-agent", ["--endpoint", endpoint, "--memory", memory, *chained], agents, work)
            probe = NudgeProbe(endpoint, memory)
            probe.start()
            cpu_before = tree.cpu_seconds()
            records = _gather(procs, timeout=3600)
            cpu_s = tree.cpu_seconds() - cpu_before
            probe.stop()
            stored = {t.id: t for t in client.tasks(memory)}
    finally:
        stop_process(coordinator)
    result = summary(records, tasks, sum(1 for t in stored.values() if t.attempts > 0))
    result["nudge_push_ms"] = probe.summary()
    # the coordinator and its front, per task drained (each task is a claim and a completion, or one chained call)
    result["coordinator_cpu_us_per_task"] = round(cpu_s / len(tasks) * 1e6, 1)
    # by the coordinator's own clock: no task assigned before each of its dependencies completed
    result["history"]["stored_before_dependencies"] = sum(
        1
        for t in stored.values()
        for dep in t.depends_on
        if t.assigned_at is None or (stored[dep].completed_at or 0) > t.assigned_at
    )
    return result


def run_sqlite(tasks: list[dict[str, Any]], agents: int, work: Path) -> dict[str, Any]:
    """The same graph drained by agents sharing one SQLite WAL file."""
    db = work / "board.db"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(
        "CREATE TABLE tasks (id TEXT PRIMARY KEY, seq INTEGER, priority INTEGER, status TEXT, unmet INTEGER,"
        " assigned_to TEXT);"
        "CREATE INDEX ready ON tasks (status, unmet, priority DESC, seq);"
        "CREATE TABLE deps (task TEXT, dep TEXT); CREATE INDEX by_dep ON deps (dep);"
    )
    conn.execute("BEGIN")
    for seq, task in enumerate(tasks):
        conn.execute(
            "INSERT INTO tasks VALUES (?, ?, ?, 'pending', ?, NULL)",
            (task["id"], seq, task["priority"], len(task["depends_on"])),
        )
        conn.executemany("INSERT INTO deps VALUES (?, ?)", [(task["id"], dep) for dep in task["depends_on"]])
    conn.execute("COMMIT")
    conn.close()
    records = _gather(_spawn("sqlite-agent", ["--db", str(db)], agents, work), timeout=3600)
    return summary(records, tasks, 0)


@click.group(invoke_without_command=True)
@click.option("--agents", type=click.IntRange(1, 512), default=32, show_default=True)
@click.option("--tasks", type=click.IntRange(10), default=20_000, show_default=True)
@click.option("--depth", type=click.IntRange(1), default=40, show_default=True, help="Levels of the graph.")
@click.option("--peer/--no-peer", default=True, show_default=True, help="Also drain it through SQLite.")
@click.option(
    "--chain/--no-chain",
    default=True,
    show_default=True,
    help="groove agents claim the next task as they complete one.",
)
@click.pass_context
def main(ctx: click.Context, agents: int, tasks: int, depth: int, peer: bool, chain: bool) -> None:
    """Drain a task graph through groove, then through the SQLite peer; print tables, then one JSON line."""
    if ctx.invoked_subcommand is not None:
        return
    plan = graph(tasks, depth)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="groove-board-") as tmp:
        results["groove"] = run_groove(plan, agents, Path(tmp), chain)
        if peer:
            results["sqlite"] = run_sqlite(plan, agents, Path(tmp))
    rows = []
    for name, r in results.items():
        claim, complete, history = r["claim_ms"], r["complete_ms"], r["history"]
        rows.append(
            [name, r["tasks_per_s"], claim["p50_ms"], claim["p99_ms"], claim["p999_ms"], claim["max_ms"],
             claim["over_1s"], complete["p99_ms"], r["lease_expiries"], sum(history.values())]
        )  # fmt: skip
    head = ("drained by", "tasks/s", "claim p50", "p99", "p99.9", "max", "over 1 s", "complete p99", "expiries", "bad")
    click.echo(table(head, rows))
    push = results["groove"]["nudge_push_ms"]
    click.echo(
        f"immediate nudges pushed while the agents worked: {push['sent']} sent, {push['missed']} missed, "
        f"p50 {push['p50_ms']} / p99 {push['p99_ms']} / max {push['max_ms']} ms"
    )
    cpu = results["groove"]["coordinator_cpu_us_per_task"]
    click.echo(f"coordinator CPU per task drained (front included): {cpu} µs")
    over_sqlite = None
    if "sqlite" in results:
        over_sqlite = ratio(results["groove"]["tasks_per_s"], max(1e-9, results["sqlite"]["tasks_per_s"]))
        click.echo(f"groove tasks/s ÷ sqlite: {over_sqlite}")
    summary_line = {"bench": "board", "agents": agents, "tasks": len(plan), "depth": depth, "chain": chain}
    summary_line["results"] = results
    click.echo(json.dumps(summary_line | {"ratio_sqlite": over_sqlite, "machine": machine()}))


@main.command(name="groove-agent")
@click.option("--endpoint", required=True)
@click.option("--memory", required=True)
@click.option("--agent-id", required=True)
@click.option("--start-at", type=float, required=True)
@click.option("--out", type=click.Path(path_type=Path), required=True)
@click.option("--chain/--no-chain", default=True, help="Claim the next task with each completion.")
def groove_agent(endpoint: str, memory: str, agent_id: str, start_at: float, out: Path, chain: bool) -> None:
    """One agent: claim and complete until the memory has nothing left to do. Chained, a completion claims
    the next task in the same call, and that call's time counts as the next task's claim and as this one's
    completion alike."""
    records = []
    with GrooveClient(endpoint, timeout=600) as client:
        client.prepare(C.OP_TASK_CLAIM, C.OP_TASK_COMPLETE, C.OP_MEMORY_GET)  # like a worker: before the start
        time.sleep(max(0.0, start_at - time.time()))
        task, began, claimed = None, 0.0, 0.0
        while True:
            if task is None:
                began = time.time()
                task = client.claim_task(memory, agent_id, _LEASE_MS)
                claimed = time.time()
            if task is None:
                if set(client.memory(memory).tasks) <= {"completed", "failed", "cancelled", "blocked"}:
                    break
                time.sleep(_IDLE_S)
                continue
            done = client.complete_task(task.id, agent_id, "done", next_lease_ms=_LEASE_MS if chain else None)
            finished = time.time()
            records.append([task.id, began, claimed - began, finished, finished - claimed])
            task, began, claimed = done.next, claimed, finished
    out.write_text(json.dumps(records))


@main.command(name="sqlite-agent")
@click.option("--db", type=click.Path(path_type=Path), required=True)
@click.option("--agent-id", required=True)
@click.option("--start-at", type=float, required=True)
@click.option("--out", type=click.Path(path_type=Path), required=True)
def sqlite_agent(db: Path, agent_id: str, start_at: float, out: Path) -> None:
    """One agent on the shared file: each claim and each completion one BEGIN IMMEDIATE transaction."""
    conn = sqlite3.connect(db, timeout=60.0, isolation_level=None)
    conn.execute("PRAGMA synchronous=NORMAL")
    records = []
    time.sleep(max(0.0, start_at - time.time()))
    while True:
        began = time.time()
        conn.execute("BEGIN IMMEDIATE")
        row = conn.execute(
            "SELECT id FROM tasks WHERE status = 'pending' AND unmet = 0 ORDER BY priority DESC, seq LIMIT 1"
        ).fetchone()
        if row is not None:
            conn.execute("UPDATE tasks SET status = 'assigned', assigned_to = ? WHERE id = ?", (agent_id, row[0]))
        conn.execute("COMMIT")
        claimed = time.time()
        if row is None:
            if conn.execute("SELECT count(*) FROM tasks WHERE status != 'completed'").fetchone()[0] == 0:
                break
            time.sleep(_IDLE_S)
            continue
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE tasks SET status = 'completed' WHERE id = ?", (row[0],))
        conn.execute("UPDATE tasks SET unmet = unmet - 1 WHERE id IN (SELECT task FROM deps WHERE dep = ?)", (row[0],))
        conn.execute("COMMIT")
        records.append([row[0], began, claimed - began, time.time(), time.time() - claimed])
    out.write_text(json.dumps(records))


if __name__ == "__main__":
    main()
