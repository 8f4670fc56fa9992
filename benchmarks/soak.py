"""A soak with the default embedder: steady writes below the model's capacity, for as long as you like. Does
meaning keep up, and what does the coordinator's memory grow by?

A fresh coordinator (the model loaded first) and `--agents` `groove agent` processes, each paced at `--rate`
requests/s with `--in-flight` 4 over the synthetic mix (learn=40,outcome=30,search=20,inject=10), for
`--duration` seconds. Every `--every` seconds the coordinator's `stats` is read: its RSS, the learnings stored,
the embedding backlog and the oldest text's wait, the visibility lag. Once the agents stop, the run waits for
the backlog to drain and says how long that took.

The memory figure: over the last third of the load, the RSS slope against the stored learnings' slope, in KB per
learning, beside what a stored learning costs at rest with `--embedder none` (benchmarks.memory: about 1.9 KB
here, 2026-11-25) and the vector each adds (1.5 KB). A backlog or a cache that grows with time shows as a
slope well above those.

    python -m benchmarks.soak [--agents 4] [--rate 40] [--duration 1200] [--every 10]
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from benchmarks.common import ProcessTree, machine
from benchmarks.search import wait_for
from groove.cli.processes import start_coordinator
from groove.client import GrooveClient
from groove.swarm.coding import groove_argv
from groove.swarm.fleet import stop_process

_MIX = "learn=40,outcome=30,search=20,inject=10"


_DATA = ("rocksdb", "vectors", "keywords")  # the parts that hold the learnings themselves


def _workers_mb(tree: ProcessTree) -> float:
    workers = [p for p in tree.root.children(recursive=True) if "embedworker" in " ".join(p.cmdline())]
    return sum(p.memory_info().rss for p in workers) / 1e6


def _sample(client: GrooveClient, began: float, tree: ProcessTree) -> dict[str, Any]:
    stats = client.stats()
    return {
        "t_s": round(time.monotonic() - began, 1),
        "rss_mb": round(stats.rss_mb, 1),
        "tree_mb": round(tree.rss_mb(), 1),
        "workers_mb": round(_workers_mb(tree), 1),
        "memory_mb": stats.memory_mb,
        "search_p99_ms": round(stats.op_ms["search"].p99, 1) if "search" in stats.op_ms else None,
        "inject_p99_ms": round(stats.op_ms["inject.prepare"].p99, 1) if "inject.prepare" in stats.op_ms else None,
        "learnings": sum(t.learnings for t in stats.tiers),
        "queue": stats.embedding_queue_depth,
        "oldest_s": round(stats.embedding_oldest_ms / 1000, 1),
        "lag_p99_s": round(stats.visibility_lag_ms.p99 / 1000, 2),
        "duty": stats.embedding_duty,
        "over_capacity": stats.embedding_over_capacity,
        "query_embedding_p99_ms": round(stats.query_embedding_ms.p99, 1),
    }


@click.command()
@click.option("--agents", type=click.IntRange(1, 64), default=4, show_default=True)
@click.option("--rate", type=click.FloatRange(min=0.1), default=40.0, show_default=True, help="Requests/s each.")
@click.option("--duration", type=click.FloatRange(min=1), default=1200.0, show_default=True)
@click.option(
    "--every", type=click.FloatRange(min=0.5), default=10.0, show_default=True, help="Seconds between samples."
)
def main(agents: int, rate: float, duration: float, every: float) -> None:
    result: dict[str, Any] = {"benchmark": "soak", "machine": machine(), "agents": agents, "rate": rate}
    with tempfile.TemporaryDirectory(prefix="groove-soak-") as tmp:
        work = Path(tmp)
        (work / "data").mkdir()
        proc, endpoint = start_coordinator(work / "data", [])
        try:
            with GrooveClient(endpoint, timeout=60) as client:
                wait_for(lambda: client.stats().embedder not in ("loading", "none"))
                argv = ["--endpoint", endpoint, "--mix", _MIX, "--rate", str(rate), "--in-flight", "4"]
                argv += ["--duration", str(duration), "--no-verify"]
                procs = [
                    subprocess.Popen(groove_argv("agent", *argv, "--agent-id", f"s{i}", "--seed", str(i)),
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
                    for i in range(agents)
                ]  # fmt: skip
                began, tree = time.monotonic(), ProcessTree(proc.pid)
                samples = []
                while any(p.poll() is None for p in procs):
                    samples.append(_sample(client, began, tree))
                    click.echo(json.dumps(samples[-1]), err=True)
                    time.sleep(max(0.0, began + len(samples) * every - time.monotonic()))
                loaded = time.monotonic()
                reports = [json.loads(p.communicate()[0].decode().strip().splitlines()[-1]) for p in procs]
                wait_for(lambda: client.stats().embedding_queue_depth == 0, timeout=3600)
                drained = time.monotonic() - loaded
                samples.append(_sample(client, began, tree))
        finally:
            stop_process(proc)
    result["samples"] = samples
    result["requests"] = sum(sum(r["ops"].values()) for r in reports)
    result["errors"] = sum(r["errors"] for r in reports)
    result["drained_after_load_s"] = round(drained, 1)
    load = [s for s in samples[:-1] if s["t_s"] <= duration]
    last = load[len(load) * 2 // 3 :]
    if len(last) >= 2 and last[-1]["learnings"] > last[0]["learnings"]:
        grown = (last[-1]["rss_mb"] - last[0]["rss_mb"]) * 1024 / (last[-1]["learnings"] - last[0]["learnings"])
        result["rss_kb_per_learning_last_third"] = round(grown, 2)
    result["end_of_load"] = load[-1] if load else None
    result["max_oldest_s_last_third"] = max((s["oldest_s"] for s in last), default=0.0)
    result["max_oldest_s_last_half"] = max((s["oldest_s"] for s in load[len(load) // 2 :]), default=0.0)
    result |= _memory_figures(last)
    result |= _p99_figures(load)
    click.echo(json.dumps(result))


def _memory_figures(last: list[dict[str, Any]]) -> dict[str, Any]:
    """Over the last third: the RSS's growth against what the memory report puts down to the data added (its
    ratio), the report's cost of a stored learning, and how far its parts are from the RSS (`unaccounted`)."""
    if len(last) < 2 or last[-1]["learnings"] <= last[0]["learnings"]:
        return {}
    first, end = last[0], last[-1]
    data = sum(end["memory_mb"].get(p, 0.0) - first["memory_mb"].get(p, 0.0) for p in _DATA)
    added = end["learnings"] - first["learnings"]
    grown = end["rss_mb"] - first["rss_mb"]
    return {
        "rss_growth_mb_last_third": round(grown, 1),
        "data_growth_mb_last_third": round(data, 1),
        "rss_growth_x_data": round(grown / data, 2) if data > 0 else None,
        "report_kb_per_learning": round(data * 1000 / added, 2),
        "unaccounted_share_end": round(end["memory_mb"].get("unaccounted", 0.0) / end["rss_mb"], 3),
        "tree_mb_end": end["tree_mb"],
        "workers_mb_end": end["workers_mb"],
    }


def _p99_figures(load: list[dict[str, Any]]) -> dict[str, Any]:
    """Each op's recent p99 (stats' window), the last third's mean over the first's."""
    third = len(load) // 3
    out: dict[str, Any] = {}
    for key in ("search_p99_ms", "inject_p99_ms"):
        early = [s[key] for s in load[:third] if s[key]]
        late = [s[key] for s in load[-third:] if s[key]] if third else []
        if early and late:
            out[key.replace("_ms", "_last_x_first")] = round((sum(late) / len(late)) / (sum(early) / len(early)), 2)
    return out


if __name__ == "__main__":
    main()
