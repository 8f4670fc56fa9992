"""The MCP round trip: `search_learnings` through `groove mcp` over stdio, against the same search made by the
bare Python client in the same run (the peer: what the MCP layer adds is the difference).

One coordinator with the real model on a fresh data dir holds `--learnings` learnings (random unit vectors, so
nothing waits for the embedding worker; texts from a few topics). `groove mcp` runs as a child process over
stdio, driven by the SDK's ClientSession as an agent would; each call's query text is embedded by the
coordinator. Latency is measured at the client, sequentially, after a warm-up.

    python -m benchmarks.mcp [--learnings 2000] [--calls 200]
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from pathlib import Path

import anyio
import click
from mcp import ClientSession, StdioServerParameters, stdio_client

from benchmarks.common import latency_summary, machine
from benchmarks.inject import TOPICS, preload
from benchmarks.search import wait_for
from groove.cli.output import table
from groove.cli.processes import start_coordinator
from groove.client import GrooveClient
from groove.swarm.fleet import stop_process

_WARM = 20


async def _through_mcp(endpoint: str, queries: list[str]) -> list[float]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "groove.cli", "mcp", "--endpoint", endpoint])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        times = []
        for i, query in enumerate(queries):
            started = time.perf_counter()
            result = await session.call_tool("search_learnings", {"query": query, "limit": 5})
            elapsed = (time.perf_counter() - started) * 1000
            if result.is_error:
                raise click.ClickException(f"search_learnings failed: {result.content}")
            if i >= _WARM:
                times.append(elapsed)
        return times


def _direct(client: GrooveClient, queries: list[str]) -> list[float]:
    times = []
    for i, query in enumerate(queries):
        started = time.perf_counter()
        client.search(query, limit=5)
        if i >= _WARM:
            times.append((time.perf_counter() - started) * 1000)
    return times


@click.command()
@click.option("--learnings", type=click.IntRange(10), default=2000, show_default=True)
@click.option("--calls", type=click.IntRange(10), default=200, show_default=True)
def main(learnings: int, calls: int) -> None:
    """Time `search_learnings` over MCP stdio against the bare client's search; print a table, then JSON."""
    rng = random.Random(7)
    queries = [f"{rng.choice(TOPICS)} {rng.choice(TOPICS)} advice {i}" for i in range(calls + _WARM)]
    with tempfile.TemporaryDirectory(prefix="groove-mcp-") as tmp:
        proc, endpoint = start_coordinator(Path(tmp), ["--bind", "tcp://127.0.0.1:0"])
        try:
            with GrooveClient(endpoint, timeout=60) as client:
                preload(client, rng, learnings)
                wait_for(lambda: client.stats().embedder not in ("loading", "none"), 300)
                direct = _direct(client, queries)
                mcp = anyio.run(_through_mcp, endpoint, queries)
        finally:
            stop_process(proc)
    results = {"mcp_stdio": latency_summary(mcp), "bare_client": latency_summary(direct)}
    rows = [(name, r["p50_ms"], r["p99_ms"], r["max_ms"]) for name, r in results.items()]
    click.echo(table(("search_learnings via", "p50 ms", "p99 ms", "max ms"), rows))
    ratio = results["mcp_stdio"]["p50_ms"] / max(results["bare_client"]["p50_ms"], 1e-9)
    click.echo(f"MCP p50 ÷ bare client p50: {ratio:.2f}")
    line = {"bench": "mcp", "learnings": learnings, "calls": calls, "results": results, "machine": machine()}
    click.echo(json.dumps(line))


if __name__ == "__main__":
    main()
