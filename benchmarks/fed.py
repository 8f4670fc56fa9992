"""The writer fed by a thread that holds the GIL: a stand-in, on any machine, for the coordinator's socket thread on
a machine with cores to spare.

    python -m benchmarks.fed [--producer-us 0,10,20,30] [--writes 20000] [--commit-threads 1]

A producer thread queues corpus learnings for the running writer and acker threads (the batcher, as the coordinator
runs it), keeping 512 in flight as 32 agents x 16 would. Before it queues each one it holds the GIL for the given
microseconds, as the socket thread does for its per-request work. No sockets, clients or agents take a core, so
what each microsecond of the producer's costs the writer is the GIL's share alone: which is what the front checks
(`--front-checks`) take off the socket thread. Each setting runs on a fresh data dir; prints a table, then one
JSON line.
"""

from __future__ import annotations

import json
import random
import tempfile
import threading
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
from coordinator.write.batcher import Batcher, Outcome
from coordinator.write.ops import PUT, WriteItem
from coordinator.write.tiercommit import MOST_THREADS
from protocol.ids import uuid7
from protocol.models import LearningPutRequest

IN_FLIGHT = 512
_WARM = 2_000  # writes before the clock starts: every tier opened, the caches warm
_DONE_S = 300.0


def _hold(seconds: float) -> None:
    """Hold the GIL for `seconds`: a busy loop of bytecode, as per-request Python would be."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def fed(producer_us: float, writes: int, threads: int) -> dict[str, Any]:
    """Writes per second the writer commits while the producer holds the GIL `producer_us` µs a write."""
    runtime.tune()  # as the coordinator runs
    corpus, rng = load(), random.Random(1)
    bodies = [
        LearningPutRequest.model_validate({"learnings": [corpus.learning(rng, noted_by="fed")]})
        for _ in range(_WARM + writes)
    ]
    acked = 0
    everything = threading.Event()

    def done(outcomes: list[Outcome]) -> None:  # the acker thread
        nonlocal acked
        acked += len(outcomes)
        if acked >= len(bodies):
            everything.set()

    with tempfile.TemporaryDirectory(prefix="groove-fed-") as tmp:
        derived = Derived(10_000, embeddings=False, row_cache=100_000)
        tiers = TierSet(Path(tmp), on_open=derived.load_tier)
        tiers.open_user()
        batcher = Batcher(
            tiers, Metrics(), done, 256, 0.0, 5_000, committed=derived.after_batch, commit_threads=threads
        )
        batcher.start()
        started, at_start, sent = 0.0, 0, 0
        while sent < len(bodies):
            if sent - acked >= IN_FLIGHT:
                time.sleep(0.0001)  # as a socket thread between batches: the GIL is let go
                continue
            if sent == _WARM:
                started, at_start = time.perf_counter(), acked
            _hold(producer_us / 1e6)
            if batcher.submit(WriteItem(uuid7(), PUT, bodies[sent])):
                sent += 1
        if not everything.wait(_DONE_S):
            raise RuntimeError(f"the writer did not ack {len(bodies)} writes within {_DONE_S:.0f} s")
        elapsed = time.perf_counter() - started
        batcher.request_stop()
        while batcher.is_alive():
            time.sleep(0.01)
        tiers.close()
    return {"producer_us": producer_us, "commit_threads": threads, "writes_per_s": round((acked - at_start) / elapsed)}


def _micros(text: str) -> list[float]:
    try:
        values = [float(part) for part in text.split(",") if part]
    except ValueError:
        raise click.BadParameter(f"{text!r}: give microseconds separated by commas") from None
    if not values or min(values) < 0 or max(values) > 1000:
        raise click.BadParameter(f"{text!r}: give at least one value, each 0 to 1000")
    return values


@click.command()
@click.option("--producer-us", "micros", default="0,10,20,30", show_default=True, help="GIL held per write, µs.")
@click.option("--writes", type=click.IntRange(256), default=20_000, show_default=True, help="Writes timed per run.")
@click.option("--commit-threads", "threads", type=click.IntRange(1, MOST_THREADS), default=1, help="As serve's.")
def main(micros: str, writes: int, threads: int) -> None:
    """Time the writer fed by a producer thread that holds the GIL a while per write."""
    results = [fed(us, writes, threads) for us in _micros(micros)]
    base = results[0]["writes_per_s"]
    for row in results:
        row["x_first"] = round(row["writes_per_s"] / base, 3)
    columns = ("producer_us", "commit_threads", "writes_per_s", "x_first")
    click.echo(table(columns, [tuple(r[c] for c in columns) for r in results]))
    click.echo(json.dumps({"bench": "fed", "results": results, "machine": machine()}))


if __name__ == "__main__":
    main()
