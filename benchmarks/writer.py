"""The writer's ceiling: group commits of corpus learnings run in-process, without sockets or clients.

    python -m benchmarks.writer [--batch 16] [--batches 300] [--commit-threads 1 --commit-threads 2] [--side-by-side 2]

A batch of learnings spread over the corpus's six project tiers and the user tier (as the synthetic
workload writes them) costs one transaction per tier it touches; the same batch in one tier costs one.
The difference is the per-tier fixed cost of a commit. Each is timed with the writer alone (1 commit thread)
and with each tier's transaction running behind it while it prepares the next tier's (2), one after the
other in the same run. `--side-by-side N` also times N independent writers (each its own data dir and batcher)
on threads of this one process: what committing tiers side by side could get at most, with one GIL. Prints a
table, then one JSON line.
"""

from __future__ import annotations

import json
import random
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from benchmarks.common import machine
from groove.cli.output import table
from groove.coordinator import runtime
from groove.coordinator.metrics import Metrics
from groove.coordinator.search.derived import Derived
from groove.coordinator.store.tierset import TierSet
from groove.coordinator.write.batcher import Batcher, Outcome
from groove.coordinator.write.ops import PUT, WriteItem
from groove.coordinator.write.tiercommit import MOST_THREADS
from groove.protocol import constants as C
from groove.protocol.ids import now_ms, uuid7
from groove.protocol.models import LearningPutRequest
from groove.swarm.corpus import load


class Writer:
    """One writer as the coordinator runs it (a batcher over its own data dir), its batches made ahead; `done` gets
    its acks (`benchmarks.fed` counts them)."""

    def __init__(
        self,
        root: Path,
        seed: int,
        spread: bool,
        batch: int,
        threads: int,
        done: Callable[[list[Outcome]], None],
        writers: int = 1,
    ) -> None:
        self.corpus, self.rng, self.spread, self.batch = load(), random.Random(seed), spread, batch
        self.derived = Derived(10_000, embeddings=False, row_cache=100_000)
        self.tiers = TierSet(root, on_open=self.derived.load_tier)
        self.tiers.open_user()
        self.batcher = Batcher(
            self.tiers, Metrics(), done, 256, 0.0, 20_000, committed=self.derived.after_batch,
            settle=self.derived.settle, commit_threads=threads, writers=writers,
        )  # fmt: skip
        for _ in range(20):  # every tier opened and warm before timing
            self.batcher.process(self.items(), now_ms())
        self.prepared: list[list[WriteItem]] = []

    def items(self) -> list[WriteItem]:
        out = []
        for _ in range(self.batch):
            learning = self.corpus.learning(self.rng, noted_by="bench")
            if not self.spread:
                learning["scope"] = C.SCOPE_GLOBAL
            out.append(WriteItem(uuid7(), PUT, LearningPutRequest.model_validate({"learnings": [learning]})))
        return out

    def run(self) -> None:
        for chunk in self.prepared:
            self.batcher.process(chunk, now_ms())

    def close(self) -> None:
        self.batcher.close()
        self.tiers.close()


def measure(spread: bool, batch: int, batches: int, threads: int, writers: int = 1) -> dict[str, Any]:
    """Writes per second through `Batcher.process` with the keyword index on and no embedder. With `writers` > 1,
    that many independent writers (each its own data dir and batcher) run side by side on threads of this process:
    the most any design committing tiers side by side under one GIL could get."""
    runtime.tune()  # as the coordinator runs
    with tempfile.TemporaryDirectory(prefix="groove-writer-") as tmp:
        each = [Writer(Path(tmp) / str(n), n + 1, spread, batch, threads, lambda _: None) for n in range(writers)]
        runtime.settle()
        for writer in each:
            writer.prepared = [writer.items() for _ in range(batches)]
        running = [threading.Thread(target=writer.run) for writer in each[1:]]
        started = time.perf_counter()
        for thread in running:
            thread.start()
        each[0].run()
        for thread in running:
            thread.join()
        elapsed = time.perf_counter() - started
        tiers_touched = len(each[0].tiers.opened())
        for writer in each:
            writer.close()
    writes = batch * batches * writers
    return {
        "writers": writers,
        "commit_threads": threads,
        "tiers": tiers_touched,
        "batch": batch,
        "writes_per_s": round(writes / elapsed, 1),
        "ms_per_write": round(elapsed / writes * 1000, 3),
        "ms_per_batch": round(elapsed / batches / writers * 1000, 3),
    }


@click.command()
@click.option("--batch", type=click.IntRange(1, 256), default=16, show_default=True, help="Writes per batch.")
@click.option("--batches", type=click.IntRange(1), default=300, show_default=True, help="Batches timed.")
@click.option(
    "--commit-threads",
    "threads",
    type=click.Choice([str(n) for n in range(1, MOST_THREADS + 1)]),
    multiple=True,
    default=[str(n) for n in range(1, MOST_THREADS + 1)],
    show_default=True,
    help="Commit threads to time (repeatable).",
)
@click.option(
    "--side-by-side",
    "writers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Also time this many independent writers on threads of one process (spread batches, 1 commit thread).",
)
def main(batch: int, batches: int, threads: tuple[str, ...], writers: int) -> None:
    """Time group commits into one tier and spread over seven, by commit threads; and, if asked, several writers
    side by side in one process."""
    results = [measure(spread, batch, batches, int(n)) for spread in (False, True) for n in threads]
    if writers > 1:
        results.append(measure(True, batch, batches, 1, writers))
    columns = ("writers", "tiers", "commit_threads", "batch", "writes_per_s", "ms_per_write", "ms_per_batch")
    click.echo(table(columns, [tuple(r[c] for c in columns) for r in results]))
    click.echo(json.dumps({"bench": "writer", "results": results, "machine": machine()}))


if __name__ == "__main__":
    main()
