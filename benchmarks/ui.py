"""The dashboard under load: first paint of each page, `/metrics` scrapes, and the writer's throughput with
five dashboards open on the busiest page against none, in the same run.

One coordinator (`--embedder none`: the learnings carry random unit vectors, searches are by keyword) holds
`--learnings` learnings, a working memory of `--tasks` tasks (a layered graph, some claimed), and a few closed
sessions. `groove ui` serves it. Each page is fetched `--requests` times in turn over loopback: the time to
the last byte is the server's time plus a loopback round trip. Then writer processes put learnings for
`--seconds`, alternately with and without five open event streams on the board (what an open board page
keeps), twice each; the ratio is the mean with over the mean without.

    python -m benchmarks.ui [--learnings 100000] [--tasks 20000] [--requests 40] [--seconds 8]
"""

from __future__ import annotations

import http.client
import json
import multiprocessing
import random
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click

from benchmarks.board import graph
from benchmarks.common import latency_summary, machine
from benchmarks.inject import preload
from groove.cli.output import table
from groove.cli.processes import start_coordinator
from groove.cli.ui import spawn_dashboard
from groove.client import GrooveClient
from groove.protocol import constants as C
from groove.swarm.fleet import stop_process

_DASHBOARDS = 5
_WRITERS = 4
_PUT = 16  # learnings per write request, as the load benchmark's agents send them


def _seed_board(client: GrooveClient, tasks: int) -> str:
    memory = client.create_memory("/srv/bench", "bench plan", "drain a big plan")
    plan = graph(tasks, max(2, min(20, tasks // 10)))
    for start in range(0, len(plan), C.MAX_TASKS_PER_ADD):
        client.add_tasks(memory, plan[start : start + C.MAX_TASKS_PER_ADD])
    for i in range(min(20, tasks)):  # some leases held, some finished: every table of the page has rows
        task = client.claim_task(memory, f"agent-{i}", lease_ms=600_000)
        if task is not None and i % 2:
            client.complete_task(task.id, f"agent-{i}", "done")
    client.send_nudge("all", memory, "mind the shared fixtures", "bench")
    return memory


def _seed_sessions(client: GrooveClient, sessions: int) -> str:
    given = ""
    for i in range(sessions):
        reply = client.inject(f"bench-{i}", seed=i)
        if reply.learnings:
            given = reply.learnings[0].learning.id
            client.close_session([(given, "helpful")], injection_id=reply.injection_id, success=bool(i % 2))
    return given


def _timed(url: str, requests: int) -> dict[str, float]:
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        with urllib.request.urlopen(url, timeout=60) as response:
            response.read()
            if response.status != 200:
                raise click.ClickException(f"{url}: HTTP {response.status}")
        times.append((time.perf_counter() - started) * 1000)
    return latency_summary(times[1:])  # the first warms the page's templates


def _writer(endpoint: str, seconds: float, seed: int) -> int:
    """A writer process: puts of `_PUT` learnings for `seconds`; returns how many were acked."""
    rng = random.Random(seed)
    acked, deadline = 0, time.monotonic() + seconds
    with GrooveClient(endpoint, timeout=30) as client:
        while time.monotonic() < deadline:
            batch = [
                {"scope": "global", "category": "solution", "description": f"w{seed} {rng.random()}", "insight": "x"}
                for _ in range(_PUT)
            ]
            acked += len(client.put_learnings(batch).ids)
    return acked


def _writes_per_s(endpoint: str, seconds: float) -> float:
    with multiprocessing.get_context("spawn").Pool(_WRITERS) as pool:
        started = time.monotonic()
        counts = pool.starmap(_writer, [(endpoint, seconds, i) for i in range(_WRITERS)])
        return sum(counts) / (time.monotonic() - started)


def _watch(base: str, topic: str, stop: threading.Event, events: list[int]) -> None:
    """What an open page keeps: its event stream, read as it comes."""
    where = urlsplit(base)
    conn = http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port, timeout=30)
    conn.request("GET", f"/events/{topic}")
    response = conn.getresponse()
    while not stop.is_set():
        line = response.readline()
        if line.startswith(b"event: "):
            events.append(1)
    conn.close()


def _with_dashboards(base: str, topic: str, endpoint: str, seconds: float) -> tuple[float, int]:
    stop, events = threading.Event(), list[int]()
    watchers = [threading.Thread(target=_watch, args=(base, topic, stop, events), daemon=True) for _ in range(5)]
    for watcher in watchers:
        watcher.start()
    try:
        return _writes_per_s(endpoint, seconds), len(events)
    finally:
        stop.set()


@click.command()
@click.option("--learnings", type=click.IntRange(10), default=100_000, show_default=True)
@click.option("--tasks", type=click.IntRange(10), default=20_000, show_default=True)
@click.option("--requests", type=click.IntRange(3), default=40, show_default=True, help="Per page.")
@click.option("--seconds", type=click.FloatRange(0.5), default=8.0, show_default=True, help="Per writer run.")
def main(learnings: int, tasks: int, requests: int, seconds: float) -> None:
    """Time the dashboard's pages and /metrics, and the writer with dashboards open; a table, then JSON."""
    rng = random.Random(11)
    with tempfile.TemporaryDirectory(prefix="groove-ui-bench-") as tmp:
        proc, endpoint = start_coordinator(Path(tmp), ["--embedder", "none", "--bind", "tcp://127.0.0.1:0"])
        dashboard = None
        try:
            with GrooveClient(endpoint, timeout=300) as client:
                preload(client, rng, learnings)
                memory = _seed_board(client, tasks)
                given = _seed_sessions(client, 30)
            dashboard = spawn_dashboard(endpoint, Path(tmp) / "ui.log", "127.0.0.1:0")
            if dashboard is None:
                raise click.ClickException(f"groove ui did not start: {(Path(tmp) / 'ui.log').read_text()[-500:]}")
            base = dashboard[1].split("/login")[0]
            pages = {
                "overview": "/",
                "learnings": "/learnings",
                "search": "/learnings?q=lesson+needs+care&mode=keyword",
                "learning": f"/learnings/{given}",
                "sessions": "/sessions",
                "boards": "/board",
                "board": f"/board/{memory}",
            }
            timed = {name: _timed(base + path, requests) for name, path in pages.items()}
            scrape = _timed(base + "/metrics", requests)
            runs: dict[str, list[float]] = {"without": [], "with": []}
            events = 0
            for _ in range(2):
                runs["without"].append(_writes_per_s(endpoint, seconds))
                rate, seen = _with_dashboards(base, f"board:{memory}", endpoint, seconds)
                runs["with"].append(rate)
                events += seen
        finally:
            if dashboard is not None:
                stop_process(dashboard[0])
            stop_process(proc)
    without, with_ = (sum(runs[k]) / len(runs[k]) for k in ("without", "with"))
    rows = [(name, t["p50_ms"], t["p99_ms"], t["max_ms"]) for name, t in [*timed.items(), ("/metrics", scrape)]]
    click.echo(table(("page", "p50 ms", "p99 ms", "max ms"), rows))
    click.echo(
        f"writes/s: {without:.0f} without dashboards, {with_:.0f} with {_DASHBOARDS} open on the board "
        f"({events} updates sent): {with_ / without:.3f} x"
    )
    line: dict[str, Any] = {
        "bench": "ui",
        "learnings": learnings,
        "tasks": tasks,
        "pages": timed,
        "metrics_scrape": scrape,
        "writes_per_s": {"without": without, "with_dashboards": with_, "ratio": with_ / without, "runs": runs},
        "dashboard_updates": events,
        "machine": machine(),
    }
    click.echo(json.dumps(line))


if __name__ == "__main__":
    main()
