"""`inject.prepare` latency with 10k learnings in the tiers a project context reads, and a full loop.

One coordinator with the real model on a fresh data dir. Half the learnings go to the user tier, half to
one project's tier, each with a random unit vector (so nothing waits for the embedding worker) and text
drawn from a few topics. Then, sequentially: injections without a task (the most confident learnings),
injections with a task text (embedded by the coordinator, then searched), and whole sessions (inject with
a task, then `outcome.record` closing it). Latency is measured at the client.

    python -m benchmarks.inject [--learnings 10000] [--sessions 300]
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from benchmarks.common import machine
from benchmarks.search import settle, unit, wait_for
from groove.cli.output import table
from groove.cli.processes import start_coordinator
from groove.client import GrooveClient
from groove.coordinator.metrics import percentile
from groove.protocol import constants as C
from groove.swarm.fleet import stop_process

PROJECT = "/srv/bench"
TOPICS = ["retries", "caching", "logging", "migrations", "fixtures", "timeouts", "packaging", "profiling"]


def preload(client: GrooveClient, rng: random.Random, count: int) -> None:
    calls = []
    for start in range(0, count, 100):
        scope = "global" if start < count // 2 else f"project:{PROJECT}"
        items = [
            {
                "scope": scope,
                "category": rng.choice(C.CATEGORIES),
                "description": f"{rng.choice(TOPICS)} lesson {start + i}: {rng.choice(TOPICS)} needs care",
                "insight": f"observed in session {start + i}",
                "confidence": round(rng.uniform(0.2, 0.95), 3),
                "embedding": unit(rng),
            }
            for i in range(min(100, count - start))
        ]
        calls.append((C.OP_LEARNING_PUT, {"learnings": items}))
    for result in client.call_many(calls, window=4, timeout=300):
        if result.error is not None:
            raise RuntimeError(f"preload failed: {result.error}")


def figures(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50_ms": round(percentile(ordered, 50), 2), "p99_ms": round(percentile(ordered, 99), 2)}


def timed(call: Any) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


@click.command()
@click.option("--learnings", type=int, default=10_000, show_default=True)
@click.option("--sessions", type=int, default=300, show_default=True, help="Sequential calls per figure.")
def main(learnings: int, sessions: int) -> None:
    """Preload, measure each kind of call, print a table and one JSON line."""
    rng = random.Random(11)
    result: dict[str, Any] = {"bench": "inject", "machine": machine(), "learnings": learnings}
    with tempfile.TemporaryDirectory(prefix="groove-inject-") as tmp:
        proc, endpoint = start_coordinator(Path(tmp), ["--bind", "tcp://127.0.0.1:0"])
        try:
            client = GrooveClient(endpoint, timeout=120)
            wait_for(lambda: client.stats().embedder != "loading")
            click.echo(f"preloading {learnings} learnings ...", err=True)
            preload(client, rng, learnings)
            settle(client)
            no_task = [timed(lambda: client.inject("bench", project=PROJECT)) for _ in range(sessions)]
            with_task = [
                timed(lambda: client.inject("bench", project=PROJECT, task=f"how do we handle {rng.choice(TOPICS)}"))
                for _ in range(sessions)
            ]

            def session() -> None:
                reply = client.inject("bench", project=PROJECT, task=f"trouble with {rng.choice(TOPICS)}")
                said = [(item.learning.id, C.OUTCOME_HELPFUL) for item in reply.learnings[:1]]
                client.close_session(said, injection_id=reply.injection_id, success=bool(said))

            loops = [timed(session) for _ in range(sessions)]
            result["no_task"] = figures(no_task)
            result["with_task"] = figures(with_task)
            result["session"] = figures(loops)
            result["coordinator_inject_ms"] = client.stats().op_ms[C.OP_INJECT_PREPARE].model_dump()
            client.close()
        finally:
            stop_process(proc)
    click.echo(
        table(
            ("call", "p50 ms", "p99 ms"),
            [
                ("inject.prepare, no task", result["no_task"]["p50_ms"], result["no_task"]["p99_ms"]),
                ("inject.prepare, task text", result["with_task"]["p50_ms"], result["with_task"]["p99_ms"]),
                ("inject + outcome (one session)", result["session"]["p50_ms"], result["session"]["p99_ms"]),
            ],
        )
    )
    click.echo(json.dumps(result))


if __name__ == "__main__":
    main()
