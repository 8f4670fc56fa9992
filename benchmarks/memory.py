"""What a stored learning costs in RAM: one client fills a fresh coordinator (`--embedder none`) with the bundled
corpus's learnings, 100 a request, and reads the coordinator's RSS (its front process included) at every mark;
then a coordinator restarted on the same data, every tier open, is measured at rest.

    python -m benchmarks.memory --learnings 600000 --every 100000
    python -m benchmarks.memory --preload 600000 --learnings 300000 --every 30000 --rate 500   # then 10 min paced

The corpus spreads learnings over six project tiers and the user tier, as a real data dir would. Between two
marks the RSS grows by what the learnings cost plus whatever fixed-size part was still filling (RocksDB's
memtables and block cache per tier, the row, reply and location caches): the last marks' slope is the
per-learning cost once those are full. The last line is JSON.
"""

from __future__ import annotations

import itertools
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from benchmarks.common import ProcessTree, machine
from benchmarks.load import rest_rss
from groove.cli.output import table
from groove.cli.processes import start_coordinator
from groove.client import GrooveClient
from groove.swarm.corpus import load as load_corpus
from groove.swarm.fleet import stop_process

_PER_REQUEST = 100
_SERVE = ["--embedder", "none"]


def fill(
    endpoint: str, pid: int, learnings: int, every: int, rate: float = 0.0, preload: int = 0
) -> list[dict[str, Any]]:
    """Put `preload` corpus learnings as fast as they are acked, then `learnings` more, `rate` a second (0: as
    fast too); (learnings stored, RSS MB, seconds since the preload) at the start, after the preload, every
    `every` learnings after it, and at the end."""
    corpus, rng = load_corpus(), random.Random(1)
    tree = ProcessTree(pid)
    started = time.monotonic()

    def mark(done: int) -> None:
        marks.append({"learnings": done, "rss_mb": round(tree.rss_mb(), 1), "s": round(time.monotonic() - started, 1)})
        click.echo(f"  {done:,} learnings: {marks[-1]['rss_mb']} MB", err=True)

    marks: list[dict[str, Any]] = []
    mark(0)
    total = preload + learnings
    with GrooveClient(endpoint, timeout=120) as client:
        done = 0
        while done < total:
            n = min(_PER_REQUEST, (preload if done < preload else total) - done)
            client.put_learnings([corpus.learning(rng, noted_by="memory") for _ in range(n)])
            done += n
            if done == preload:  # the caches are filled: the measured part begins
                mark(done)
                started = time.monotonic()
            elif done > preload:
                if rate:
                    time.sleep(max(0.0, started + (done - preload) / rate - time.monotonic()))
                if (done - preload) % every < n or done == total:
                    mark(done)
    return marks


def slopes(marks: list[dict[str, Any]]) -> list[float]:
    """KB of RSS per learning stored between each pair of consecutive marks."""
    return [
        round((b["rss_mb"] - a["rss_mb"]) * 1000 / (b["learnings"] - a["learnings"]), 3)
        for a, b in itertools.pairwise(marks)
        if b["learnings"] > a["learnings"]
    ]


@click.command()
@click.option("--learnings", type=click.IntRange(1), default=600_000, show_default=True, help="Learnings to store.")
@click.option("--every", type=click.IntRange(1), default=100_000, show_default=True, help="Learnings between marks.")
@click.option("--rate", type=click.FloatRange(0), default=0.0, show_default=True,
              help="Learnings a second, paced (0: as fast as they are acked).")  # fmt: skip
@click.option("--preload", type=click.IntRange(0), default=0, show_default=True,
              help="Learnings stored first, as fast as acked (filling the caches), before the marks.")  # fmt: skip
def main(learnings: int, every: int, rate: float, preload: int) -> None:
    """Fill a coordinator and report RSS per stored learning, under the writes and at rest."""
    with tempfile.TemporaryDirectory(prefix="groove-memory-") as tmp:
        data = Path(tmp)
        proc, endpoint = start_coordinator(data, _SERVE)
        try:
            marks = fill(endpoint, proc.pid, learnings, every, rate, preload)
        finally:
            stop_process(proc)
        rest = rest_rss(data, _SERVE)
    per = slopes(marks)
    rows = [(m["learnings"], m["rss_mb"], m["s"], kb) for m, kb in zip(marks[1:], per, strict=True)]
    click.echo(table(("learnings", "RSS MB", "s", "KB per learning since the mark before"), rows))
    click.echo(f"at rest on the same data: {rest} MB (empty: {marks[0]['rss_mb']} MB)")
    line = {"bench": "memory", "learnings": learnings, "preload": preload, "rate": rate, "marks": marks}
    line["kb_per_learning"] = per
    line["rss_mb_at_rest"] = rest
    click.echo(json.dumps({**line, "machine": machine()}))


if __name__ == "__main__":
    main()
