"""A search whose context spans two coordinators, merged by GrooveCluster, against one coordinator holding the
same learnings (same ids), in the same run, then an injection chosen across both against one coordinator's:

    python -m benchmarks.clustersearch [--learnings 2308] [--searches 300] [--injections 100]
                                       [--embedder none|minilm]

The corpus's learnings go half to the user tier (the cluster's home, `a`) and half to one project's tier
(owned by `b`); the single coordinator holds both. Each query (a corpus insight, the project as context) is
sent to both setups, alternately; the figures are the round trips at the client, and how many merged result
lists differed from the single coordinator's, and how many had a lower score at some rank. A merge takes
each owner's candidate pool (the best 50 per index of its own tiers), so it reads at least what one
coordinator reads: a list differs when the single coordinator's pool, cut over both tiers, left out a
better match. Each injection (a corpus query as the task, the same seed on both sides) is timed the same way,
and its choice compared: the learnings, their scores and the drawn parameters. The last line is JSON.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from benchmarks.common import latency_summary, machine
from groove.cli.output import table
from groove.cli.processes import start_coordinator
from groove.client import GrooveClient
from groove.client.cluster import GrooveCluster
from groove.coordinator.net.config import EMBEDDERS
from groove.protocol.search import SearchHit
from groove.swarm.corpus import Corpus, load
from groove.swarm.fleet import stop_process

PROJECT = "/srv/bench"


@click.command()
@click.option("--learnings", type=click.IntRange(10, 2308), default=2308, show_default=True)
@click.option("--searches", type=click.IntRange(10), default=300, show_default=True)
@click.option("--injections", type=click.IntRange(0), default=100, show_default=True)
@click.option("--embedder", type=click.Choice(EMBEDDERS), default="none", show_default=True)
def main(learnings: int, searches: int, injections: int, embedder: str) -> None:
    """Merged and single-coordinator search and injection latency on the same data; a table, then JSON."""
    sockets = Path(tempfile.mkdtemp(prefix="groove-cs-"))
    work = Path(tempfile.mkdtemp(prefix="groove-clustersearch-"))
    cluster_map = work / "cluster.toml"
    cluster_map.write_text(
        f'home = "a"\n[coordinators]\na = "ipc://{sockets}/a.sock"\nb = "ipc://{sockets}/b.sock"\n'
        f'[projects]\n"{PROJECT}" = "b"\n'
    )
    procs: list[subprocess.Popen[bytes]] = []
    try:
        serve = ["--embedder", embedder]
        for name in ("a", "b"):
            (work / name).mkdir()
            bind = ["--bind", f"ipc://{sockets}/{name}.sock", "--cluster", str(cluster_map), "--cluster-name", name]
            procs.append(start_coordinator(work / name, [*serve, *bind])[0])
        (work / "single").mkdir()
        proc, endpoint = start_coordinator(work / "single", serve)
        procs.append(proc)
        result = measure(cluster_map, endpoint, learnings, searches, injections)
    finally:
        for proc in procs:
            stop_process(proc)
        shutil.rmtree(sockets, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    timed = ("single", "merged", "inject_single", "inject_merged")
    rows = [(what, *(result[what][k] for k in ("p50_ms", "p99_ms", "max_ms"))) for what in timed if what in result]
    click.echo(table(("call", "p50 ms", "p99 ms", "max ms"), rows))
    click.echo(
        f"merged p99 / single p99: {result['p99_ratio']}; merged lists unlike the single's: {result['unlike']} "
        f"({result['unlike_beyond_1e-4']} beyond scores equal to 4 places; with a lower score at some rank: "
        f"{result['merged_worse']})"
    )
    if injections:
        click.echo(
            f"injections: merged p99 / single p99: {result['inject_p99_ratio']}; "
            f"choices unlike the single's: {result['inject_unlike']} of {injections}"
        )
    click.echo(json.dumps({"bench": "clustersearch", "embedder": embedder, **result, "machine": machine()}))


def measure(cluster_map: Path, endpoint: str, learnings: int, searches: int, injections: int) -> dict[str, Any]:
    """Load both setups alike, then time each query, and each injection, on each."""
    corpus, rng = load(), random.Random(7)
    entries = rng.sample(corpus.entries, learnings)
    batch = [
        {
            "scope": "global" if i % 2 else f"project:{PROJECT}",
            "category": e.category,
            "description": e.description,
            "insight": e.insight,
        }
        for i, e in enumerate(entries)
    ]
    with GrooveCluster(cluster_map, timeout=600) as cluster, GrooveClient(endpoint, timeout=600) as single:
        ids: list[str] = []
        for start in range(0, len(batch), 500):
            ids += cluster.put_learnings(batch[start : start + 500]).ids
        with_ids = [item | {"id": lid} for item, lid in zip(batch, ids, strict=True)]
        for start in range(0, len(with_ids), 500):
            single.put_learnings(with_ids[start : start + 500])
        _settle(cluster, single, len(batch))
        times: dict[str, list[float]] = {"single": [], "merged": []}
        unlike = beyond_noise = worse = 0
        for _ in range(searches):
            query = corpus.query(rng)
            began = time.perf_counter()
            alone = single.search(query, project=PROJECT, limit=10)
            times["single"].append((time.perf_counter() - began) * 1000)
            began = time.perf_counter()
            merged = cluster.search(query, project=PROJECT, limit=10)
            times["merged"].append((time.perf_counter() - began) * 1000)
            unlike += [h.learning.id for h in merged] != [h.learning.id for h in alone]
            beyond_noise += _rounded(merged) != _rounded(alone)
            # a merge reads each owner's own candidate pool (the best 50 per index), the union of which holds
            # the single coordinator's: where the lists differ, the merged one should be the better
            worse += any(m.score < a.score - 1e-4 for m, a in zip(merged, alone, strict=False))
        chosen = _inject(cluster, single, corpus, rng, injections)
    single_s, merged_s = latency_summary(times["single"]), latency_summary(times["merged"])
    return chosen | {
        "learnings": learnings,
        "searches": searches,
        "single": single_s,
        "merged": merged_s,
        "p99_ratio": round(merged_s["p99_ms"] / max(1e-9, single_s["p99_ms"]), 2),
        "unlike": unlike,
        "unlike_beyond_1e-4": beyond_noise,
        "merged_worse": worse,
    }


def _inject(
    cluster: GrooveCluster, single: GrooveClient, corpus: Corpus, rng: random.Random, count: int
) -> dict[str, Any]:
    """Time `count` injections on each side (each recorded on both alike, so the sides stay equal)."""
    if not count:
        return {}
    times: dict[str, list[float]] = {"single": [], "merged": []}
    unlike = 0
    for n in range(count):
        task = corpus.query(rng)
        began = time.perf_counter()
        alone = single.inject(f"bench-{n}", task=task, project=PROJECT, seed=n)
        times["single"].append((time.perf_counter() - began) * 1000)
        began = time.perf_counter()
        merged = cluster.inject(f"bench-{n}", task=task, project=PROJECT, seed=n)
        times["merged"].append((time.perf_counter() - began) * 1000)
        picked = [[(x.learning.id, round(x.score, 4)) for x in side.learnings] for side in (alone, merged)]
        unlike += picked[0] != picked[1] or alone.params != merged.params
    single_s, merged_s = latency_summary(times["single"]), latency_summary(times["merged"])
    return {
        "injections": count,
        "inject_single": single_s,
        "inject_merged": merged_s,
        "inject_p99_ratio": round(merged_s["p99_ms"] / max(1e-9, single_s["p99_ms"]), 2),
        "inject_unlike": unlike,
    }


def _rounded(hits: list[SearchHit]) -> list[tuple[float, str]]:
    """Hits with scores to 4 places, reordered by them: lists that differ only by float noise (the same text
    embedded by two processes) compare equal; the last place may fall either side of the cut."""
    return sorted((-round(h.score, 4), h.learning.id) for h in hits)[:-1]


def _settle(cluster: GrooveCluster, single: GrooveClient, count: int) -> None:
    """Wait until every learning is embedded everywhere (a no-op without a model)."""
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        queues = [s.stats.embedding_queue_depth for s in cluster.status() if s.stats is not None]
        if not any(queues) and single.stats().embedding_queue_depth == 0:
            return
        time.sleep(0.5)
    raise click.ClickException(f"{count} learnings were not embedded within 15 minutes")


if __name__ == "__main__":
    main()
