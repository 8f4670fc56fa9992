"""Searches while agents write: search latency with the default embedder against the same load with
`--embedder none`, in one run.

Each run is a fresh coordinator (the model loaded before the load starts, when it has one) and `--agents`
`groove agent` processes with `--in-flight` requests each over the synthetic corpus (`--mix`, by default
learn=80,search=20), for `--duration` seconds. Latencies come from the agents' `--latencies-file`. With the
embedder, every learning written queues for its vector, so the workers' bulk passes run beside the queries:
the ratio says what a search pays for them. The coordinator's own figures for the embedded queries
(`stats.query_embedding_ms`) come with it.

    python -m benchmarks.queryfirst [--agents 6] [--in-flight 8] [--duration 20]
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from benchmarks.common import machine, ratio
from benchmarks.search import wait_for
from groove.cli.processes import start_coordinator
from groove.client import GrooveClient
from groove.coordinator.metrics import percentile
from groove.swarm.coding import groove_argv
from groove.swarm.fleet import stop_process


def _load(endpoint: str, agents: int, in_flight: int, duration: float, mix: str, work: Path) -> dict[str, Any]:
    """The agents' run: search and learn latency percentiles, and how many of each were acked."""
    procs = []
    start_at = time.time() + 2.0  # every agent connected before the first request
    for i in range(agents):
        path = work / f"lat-{i}.json"
        argv = groove_argv(
            "agent", "--endpoint", endpoint, "--agent-id", f"q{i}", "--mix", mix, "--in-flight", str(in_flight),
            "--duration", str(duration), "--seed", str(i), "--no-verify", "--latencies-file", str(path),
            "--start-at", str(start_at),
        )  # fmt: skip
        procs.append((subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL), path))
    by_kind: dict[str, list[float]] = {}
    for proc, path in procs:
        proc.communicate(timeout=duration + 120)
        for kind, values in json.loads(path.read_text()).items():
            by_kind.setdefault(kind, []).extend(values)
    out: dict[str, Any] = {}
    for kind in ("search", "learn"):
        values = sorted(by_kind.get(kind, []))
        out[kind] = {
            "done": len(values),
            **{f"p{q}_ms": round(percentile(values, q), 1) for q in (50, 90, 99)},
        }
    return out


def run(embedder: str, agents: int, in_flight: int, duration: float, mix: str) -> dict[str, Any]:
    """One load against a fresh coordinator with this embedder ("default" or "none")."""
    with tempfile.TemporaryDirectory(prefix="groove-queryfirst-") as tmp:
        work = Path(tmp)
        extra = [] if embedder == "default" else ["--embedder", "none"]
        (work / "data").mkdir()
        proc, endpoint = start_coordinator(work / "data", extra)
        try:
            with GrooveClient(endpoint, timeout=60) as client:
                if embedder == "default":
                    wait_for(lambda: client.stats().embedder not in ("loading", "none"))
                    client.search("warm the query path", limit=1)
                result = _load(endpoint, agents, in_flight, duration, mix, work)
                stats = client.stats()
                result["coordinator"] = {
                    "query_embedding_ms": stats.query_embedding_ms.model_dump(),
                    "embedding_queue_depth": stats.embedding_queue_depth,
                    "embedding_oldest_ms": stats.embedding_oldest_ms,
                    "rss_mb": stats.rss_mb,
                }
        finally:
            stop_process(proc)
    return result


@click.command()
@click.option("--agents", type=click.IntRange(1, 64), default=6, show_default=True)
@click.option("--in-flight", type=click.IntRange(1, 64), default=8, show_default=True)
@click.option("--duration", type=click.FloatRange(min=1), default=20.0, show_default=True)
@click.option("--mix", default="learn=80,search=20", show_default=True)
def main(agents: int, in_flight: int, duration: float, mix: str) -> None:
    result: dict[str, Any] = {"benchmark": "queryfirst", "machine": machine()}
    for embedder in ("default", "none"):
        click.echo(f"{agents} agents x {in_flight} in flight, {duration:g} s, embedder {embedder} ...", err=True)
        result[embedder] = run(embedder, agents, in_flight, duration, mix)
        search = result[embedder]["search"]
        click.echo(f"  search p50 {search['p50_ms']} ms, p90 {search['p90_ms']} ms, {search['done']} done", err=True)
    result["search_vs_none"] = {
        q: ratio(result["default"]["search"][q], result["none"]["search"][q]) for q in ("p50_ms", "p90_ms", "p99_ms")
    }
    click.echo(json.dumps(result))


if __name__ == "__main__":
    main()
