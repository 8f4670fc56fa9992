"""Memory that follows the projects in use, not every project ever seen: a coordinator that has touched
`--projects` project tiers once each (`--learnings` learnings apiece), then serves `--busy` of them for `--busy-s`
seconds, against a coordinator that only ever saw those `--busy` (same learnings, same busy minute). Each
coordinator's process tree RSS is read at the end; the ratio is the figure (the lean issue's target: at most 1.2).

Then what a released tier costs a search: the first search of a project left idle (its RocksDB released, opened
again by the search) against the next search of it, the median over `--probes` projects.

    python -m benchmarks.projects [--projects 200] [--busy 10] [--learnings 100] [--busy-s 60]

Both coordinators run with `--embedder none`, as the issue's measurement did: the tiers are the subject. The last
line is JSON.
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from benchmarks.common import ProcessTree, machine
from groove.cli.processes import start_coordinator
from groove.client import GrooveClient
from groove.swarm.corpus import load as load_corpus
from groove.swarm.fleet import stop_process

_SERVE = ["--embedder", "none"]


def _fill(client: GrooveClient, project: str, learnings: int, rng: random.Random) -> None:
    corpus = load_corpus()
    batch = [corpus.learning(rng, noted_by="projects") | {"scope": f"project:{project}"} for _ in range(learnings)]
    client.put_learnings(batch)


def _busy(client: GrooveClient, projects: list[str], seconds: float, rng: random.Random) -> int:
    """Writes and searches over `projects`, round robin, for `seconds`; requests made."""
    corpus, made, deadline = load_corpus(), 0, time.monotonic() + seconds
    while time.monotonic() < deadline:
        for project in projects:
            client.put_learnings([corpus.learning(rng, noted_by="projects") | {"scope": f"project:{project}"}])
            client.search("flaky test under load", project=project, limit=5)
            made += 2
    return made


def _run(projects: list[str], busy: list[str], learnings: int, busy_s: float, probes: int) -> dict[str, Any]:
    rng = random.Random(11)
    with tempfile.TemporaryDirectory(prefix="groove-projects-") as tmp:
        proc, endpoint = start_coordinator(Path(tmp), _SERVE)
        try:
            with GrooveClient(endpoint, timeout=120) as client:
                for project in projects:
                    _fill(client, project, learnings, rng)
                requests = _busy(client, busy, busy_s, rng)
                tree_mb = ProcessTree(proc.pid).rss_mb()
                stats = client.stats()
                released = [t.tier for t in stats.tiers if t.released and t.tier.startswith("project:")]
                firsts: list[float] = []
                seconds: list[float] = []
                for tier in released[:probes]:
                    root = tier.split(":", 1)[1]
                    for into in (firsts, seconds):
                        began = time.perf_counter()
                        client.search("flaky test under load", project=root, limit=5)
                        into.append((time.perf_counter() - began) * 1000)
        finally:
            stop_process(proc)
    return {
        "projects": len(projects),
        "tree_mb": round(tree_mb, 1),
        "busy_requests": requests,
        "open_tiers": len(stats.tiers),
        "released_tiers": len(released),
        "memory_mb": stats.memory_mb,
        "search_after_release_ms": round(statistics.median(firsts), 2) if firsts else None,
        "search_again_ms": round(statistics.median(seconds), 2) if seconds else None,
    }


@click.command()
@click.option("--projects", type=click.IntRange(2), default=200, show_default=True)
@click.option("--busy", type=click.IntRange(1), default=10, show_default=True)
@click.option("--learnings", type=click.IntRange(1), default=100, show_default=True)
@click.option("--busy-s", type=click.FloatRange(min=1), default=60.0, show_default=True)
@click.option("--probes", type=click.IntRange(1), default=10, show_default=True, help="Released tiers searched.")
def main(projects: int, busy: int, learnings: int, busy_s: float, probes: int) -> None:
    """Many projects touched once against only the busy ones: the coordinator's memory."""
    names = [f"/bench/projects/p{i:03d}" for i in range(projects)]
    hot = names[:busy]
    many = _run(names, hot, learnings, busy_s, probes)
    click.echo(f"  {projects} projects: {many['tree_mb']} MB, {many['released_tiers']} tiers released", err=True)
    few = _run(hot, hot, learnings, busy_s, 0)
    click.echo(f"  {busy} projects: {few['tree_mb']} MB", err=True)
    ratio = round(many["tree_mb"] / few["tree_mb"], 2)
    click.echo(
        f"{projects} projects touched, {busy} busy: {ratio} x the memory of {busy} alone; a search of a released "
        f"tier {many['search_after_release_ms']} ms, again {many['search_again_ms']} ms",
        err=True,
    )
    click.echo(json.dumps({"bench": "projects", "ratio": ratio, "many": many, "few": few, "machine": machine()}))


if __name__ == "__main__":
    main()
