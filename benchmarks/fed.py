"""The writer fed by a thread that holds the GIL: a stand-in, on any machine, for the coordinator's socket thread on
a machine with cores to spare.

    python -m benchmarks.fed [--producer-us 0,10,20,30] [--writes 20000] [--commit-threads 1] [--writers 1 --writers 2]

A producer thread queues corpus learnings for the running writer and acker threads (the batcher, as the coordinator
runs it), keeping 512 in flight as 32 agents x 16 would. Before it queues each one it holds the GIL for the given
microseconds, as the socket thread does for its per-request work. No sockets, clients or agents take a core, so
what each microsecond of the producer's costs the writer is the GIL's share alone: which is what the front checks
(`--front-checks`) take off the socket thread. Each setting runs on a fresh data dir; prints a table, then one
JSON line.
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import click

from benchmarks.common import machine
from benchmarks.writer import Writer
from groove.cli.output import table
from groove.coordinator import runtime
from groove.coordinator.write.batcher import MOST_WRITERS, Outcome
from groove.coordinator.write.tiercommit import MOST_THREADS

IN_FLIGHT = 512
_BATCH = 256  # the writer's warm-up batches, and how the writes are made
_STEADY = 2_000  # writes queued before the clock starts
_DONE_S = 300.0


def _hold(seconds: float) -> None:
    """Hold the GIL for `seconds`: a busy loop of bytecode, as per-request Python would be."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def fed(producer_us: float, writes: int, threads: int, writers: int = 1) -> dict[str, Any]:
    """Writes per second the writers commit while the producer holds the GIL `producer_us` µs a write."""
    runtime.tune()  # as the coordinator runs
    acked, wanted = 0, 0
    everything = threading.Event()
    room = threading.Semaphore(IN_FLIGHT)  # the producer waits on it as a socket thread waits on its sockets

    def done(outcomes: list[Outcome]) -> None:  # the warm-up's batches on this thread, then the acker thread
        nonlocal acked
        acked += len(outcomes)
        room.release(len(outcomes))
        if acked >= wanted:
            everything.set()

    with tempfile.TemporaryDirectory(prefix="groove-fed-") as tmp:
        writer = Writer(Path(tmp), 1, True, _BATCH, threads, done, writers)  # warm: every tier opened
        items = [item for _ in range(-(-(_STEADY + writes) // _BATCH)) for item in writer.items()]
        wanted = acked + len(items)  # what the warm-up acked does not count
        room = threading.Semaphore(IN_FLIGHT)  # the warm-up released it
        everything.clear()
        writer.batcher.start()
        started, at_start = 0.0, 0
        for sent, item in enumerate(items):
            room.acquire()
            if sent == _STEADY:  # the clock starts with writes flowing
                started, at_start = time.perf_counter(), acked
            _hold(producer_us / 1e6)
            while not writer.batcher.submit(item):
                time.sleep(0.001)  # the queue is sized above IN_FLIGHT: only a bug gets here
        if not everything.wait(_DONE_S):
            raise RuntimeError(f"the writer did not ack {len(items)} writes within {_DONE_S:.0f} s")
        elapsed = time.perf_counter() - started
        writer.batcher.request_stop()
        while writer.batcher.is_alive():
            time.sleep(0.01)
        writer.close()
    per_s = round((acked - at_start) / elapsed)
    return {"producer_us": producer_us, "commit_threads": threads, "writers": writers, "writes_per_s": per_s}


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
@click.option(
    "--writers",
    type=click.IntRange(1, MOST_WRITERS),
    multiple=True,
    default=[1],
    show_default=True,
    help="Writer threads, as serve's (repeatable: each count is timed at each --producer-us).",
)
def main(micros: str, writes: int, threads: int, writers: tuple[int, ...]) -> None:
    """Time the writer fed by a producer thread that holds the GIL a while per write."""
    results = [fed(us, writes, threads, n) for us in _micros(micros) for n in writers]
    base = results[0]["writes_per_s"]
    for row in results:
        row["x_first"] = round(row["writes_per_s"] / base, 3)
    columns = ("producer_us", "commit_threads", "writers", "writes_per_s", "x_first")
    click.echo(table(columns, [tuple(r[c] for c in columns) for r in results]))
    click.echo(json.dumps({"bench": "fed", "results": results, "machine": machine()}))


if __name__ == "__main__":
    main()
