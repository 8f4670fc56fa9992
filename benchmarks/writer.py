"""The writer's ceiling: group commits of corpus learnings run in-process, without sockets or clients.

    python -m benchmarks.writer [--batch 16] [--batches 300] [--commit-threads 1 --commit-threads 2]

A batch of learnings spread over the corpus's six project tiers and the user tier (as the synthetic
workload writes them) costs one transaction per tier it touches; the same batch in one tier costs one.
The difference is the per-tier fixed cost of a commit. Each is timed with the writer alone (1 commit thread)
and with each tier's transaction running behind it while it prepares the next tier's (2), one after the
other in the same run. Prints a table, then one JSON line.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from agents.corpus import load
from benchmarks.common import machine
from cli.output import table
from coordinator import runtime
from coordinator.metrics import Metrics
from coordinator.search.derived import Derived
from coordinator.store.tiers import TierSet
from coordinator.write.batcher import Batcher
from coordinator.write.ops import PUT, WriteItem
from coordinator.write.tiercommit import MOST_THREADS
from protocol import constants as C
from protocol.ids import now_ms, uuid7
from protocol.models import LearningPutRequest


def measure(spread: bool, batch: int, batches: int, threads: int) -> dict[str, Any]:
    """Writes per second through `Batcher.process` with the keyword index on and no embedder."""
    runtime.tune()  # as the coordinator runs
    corpus, rng = load(), random.Random(1)
    with tempfile.TemporaryDirectory(prefix="groove-writer-") as tmp:
        derived = Derived(10_000, embeddings=False, row_cache=100_000)
        tiers = TierSet(Path(tmp), on_open=derived.load_tier)
        tiers.open_user()
        batcher = Batcher(
            tiers, Metrics(), lambda _: None, 256, 0.0, 20_000, committed=derived.after_batch, commit_threads=threads
        )

        def items() -> list[WriteItem]:
            out = []
            for _ in range(batch):
                learning = corpus.learning(rng, noted_by="bench")
                if not spread:
                    learning["scope"] = C.SCOPE_GLOBAL
                body = LearningPutRequest.model_validate({"learnings": [learning]})
                out.append(WriteItem(uuid7(), PUT, body))
            return out

        for _ in range(20):  # every tier opened and warm before timing
            batcher.process(items(), now_ms())
        runtime.settle()
        prepared = [items() for _ in range(batches)]
        started = time.perf_counter()
        for chunk in prepared:
            batcher.process(chunk, now_ms())
        elapsed = time.perf_counter() - started
        tiers_touched = len(tiers.opened())
        batcher.committer.close()
        tiers.close()
    writes = batch * batches
    return {
        "commit_threads": threads,
        "tiers": tiers_touched,
        "batch": batch,
        "writes_per_s": round(writes / elapsed, 1),
        "ms_per_write": round(elapsed / writes * 1000, 3),
        "ms_per_batch": round(elapsed / batches * 1000, 3),
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
def main(batch: int, batches: int, threads: tuple[str, ...]) -> None:
    """Time group commits into one tier and spread over seven, by commit threads."""
    results = [measure(spread, batch, batches, int(n)) for spread in (False, True) for n in threads]
    columns = ("tiers", "commit_threads", "batch", "writes_per_s", "ms_per_write", "ms_per_batch")
    click.echo(table(columns, [tuple(r[c] for c in columns) for r in results]))
    click.echo(json.dumps({"bench": "writer", "results": results, "machine": machine()}))


if __name__ == "__main__":
    main()
