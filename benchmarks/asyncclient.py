"""Many concurrent calls on one `AsyncGrooveClient` against as many threads, each with its own `GrooveClient`, in
one run against one coordinator (`--embedder none`: the figure is the client's, not the model's).

Each way makes `--calls` calls in rounds of `--concurrency` at once (a `learning.get` of a stored learning,
then a keyword `search`, alternately), after a warm-up round; latency is from each call's start to its
result. The ratio is async over threads at p50, p99 and the slowest: the issue's target is p50 within 1.2 x.

    python -m benchmarks.asyncclient [--concurrency 32] [--calls 3200]
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import threading
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import click

from benchmarks.common import latency_summary, machine, ratio
from groove.cli.processes import start_coordinator
from groove.client import AsyncGrooveClient, GrooveClient
from groove.swarm.fleet import stop_process


def _threads(endpoint: str, ids: list[str], concurrency: int, rounds: int) -> list[float]:
    """Latencies (ms) of `concurrency` threads, each with its own client, `rounds` calls each."""
    latencies: list[float] = []
    lock = threading.Lock()
    start = threading.Barrier(concurrency)

    def work(n: int) -> None:
        with GrooveClient(endpoint, timeout=60) as client:
            client.ping()  # connected and warm before the barrier
            start.wait()
            mine = []
            for r in range(rounds):
                began = time.perf_counter()
                if (n + r) % 2:
                    client.get(ids[(n + r) % len(ids)])
                else:
                    client.search("flaky socket", mode="keyword", limit=5)
                mine.append((time.perf_counter() - began) * 1000)
            with lock:
                latencies.extend(mine)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies


async def _async(endpoint: str, ids: list[str], concurrency: int, rounds: int) -> list[float]:
    """Latencies (ms) of `concurrency` tasks sharing one client, `rounds` calls each."""
    latencies: list[float] = []
    async with AsyncGrooveClient(endpoint, timeout=60) as client:
        await asyncio.gather(*(client.ping() for _ in range(concurrency)))  # warm

        async def timed(call: Awaitable[Any]) -> None:
            began = time.perf_counter()
            await call
            latencies.append((time.perf_counter() - began) * 1000)

        async def work(n: int) -> None:
            for r in range(rounds):
                if (n + r) % 2:
                    await timed(client.get(ids[(n + r) % len(ids)]))
                else:
                    await timed(client.search("flaky socket", mode="keyword", limit=5))

        await asyncio.gather(*(work(n) for n in range(concurrency)))
    return latencies


@click.command()
@click.option("--concurrency", type=click.IntRange(1, 512), default=32, show_default=True)
@click.option("--calls", type=click.IntRange(1), default=3200, show_default=True, help="Calls per way.")
def main(concurrency: int, calls: int) -> None:
    """Time concurrent calls on one async client against threads with a sync client each."""
    rounds = max(1, calls // concurrency)
    with tempfile.TemporaryDirectory(prefix="groove-async-") as tmp:
        (Path(tmp) / "data").mkdir()
        proc, endpoint = start_coordinator(Path(tmp) / "data", ["--embedder", "none"])
        try:
            with GrooveClient(endpoint, timeout=60) as client:
                learnings = [
                    {"scope": "global", "category": "solution", "description": f"flaky socket test {n}",
                     "insight": f"bind port 0, wait on a deadline ({n})"}
                    for n in range(200)
                ]  # fmt: skip
                ids = client.put_learnings(learnings).ids
            results = {
                "threads": latency_summary(_threads(endpoint, ids, concurrency, rounds)),
                "async": latency_summary(asyncio.run(_async(endpoint, ids, concurrency, rounds))),
            }
        finally:
            stop_process(proc)
    out: dict[str, Any] = {
        "benchmark": "asyncclient",
        "machine": machine(),
        "concurrency": concurrency,
        "calls": rounds * concurrency,
        **results,
        "async_vs_threads": {
            key: ratio(results["async"][key], results["threads"][key]) for key in ("p50_ms", "p99_ms", "max_ms")
        },
    }
    click.echo(json.dumps(out))


if __name__ == "__main__":
    main()
