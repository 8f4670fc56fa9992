"""A spawnable agent worker: says hello, runs a workload against the coordinator, reports what happened.

Workloads:
- `basic`: a seeded mix of writing learnings (50 %), recording outcomes on learnings it wrote (30 %) and
  reading them back to check their content (20 %); at the end it reads back every learning it was told
  was stored.
- `writes`: single-learning `learning.put` requests only, `in_flight` at a time (the write benchmark).

The report is one JSON object; `latencies_file` receives every acked write's latency in milliseconds.
"""

from __future__ import annotations

import json
import os
import random
import socket
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agents.client import GrooveClient
from agents.errors import GrooveError
from protocol import constants as C

_TOPICS = (
    "error handling",
    "flaky tests",
    "database migrations",
    "logging",
    "retries",
    "config loading",
    "CLI parsing",
    "async code",
    "caching",
    "dependency pinning",
    "type hints",
    "packaging",
)
_ADVICE = (
    "prefer explicit Result types",
    "mark the test slow and give it a timeout",
    "run it inside one transaction",
    "log the request id with every line",
    "back off exponentially with jitter",
    "validate at start-up",
    "keep one module per concern",
    "pin the version in pyproject",
    "measure before optimising",
)


def learning_text(rng: random.Random, scope: str) -> dict[str, Any]:
    """A plausible learning for `scope`."""
    topic, advice = rng.choice(_TOPICS), rng.choice(_ADVICE)
    return {
        "scope": scope,
        "category": rng.choice(C.CATEGORIES),
        "description": f"While working on {topic} (case {rng.randrange(10**9)}), we found that we should {advice}.",
        "insight": f"For {topic}: {advice}.",
        "confidence": round(rng.uniform(0.3, 0.8), 3),
        "source": {"type": "transcript", "session_id": f"s-{rng.randrange(10**6)}"},
    }


@dataclass
class Report:
    """What one worker did."""

    agent_id: str
    workload: str
    writes: int = 0
    outcomes: int = 0
    reads: int = 0
    errors: int = 0
    mismatches: int = 0
    verified: int = 0
    elapsed_s: float = 0.0
    error_samples: list[str] = field(default_factory=list)

    def error(self, exc: Exception) -> None:
        """Count an error, keeping the first few messages."""
        self.errors += 1
        if len(self.error_samples) < 5:
            self.error_samples.append(str(exc))


def run_worker(
    endpoint: str,
    agent_id: str,
    workload: str,
    duration: float | None,
    count: int | None,
    in_flight: int,
    seed: int,
    scopes: list[str],
    latencies_file: Path | None = None,
    timeout: float = 30.0,
) -> Report:
    """Run one workload until `duration` seconds or `count` operations, whichever comes first."""
    rng = random.Random(seed)
    report = Report(agent_id, workload)
    latencies: list[float] = []
    stop_at = time.monotonic() + duration if duration else float("inf")
    limit = count if count is not None else 1 << 62
    started = time.monotonic()
    with GrooveClient(endpoint, timeout=timeout) as client:
        client.hello(agent_id, role="worker", pid=os.getpid(), host=socket.gethostname())
        if workload == "writes":
            _writes(client, rng, report, latencies, stop_at, limit, in_flight, scopes)
        else:
            _basic(client, rng, report, latencies, stop_at, limit, scopes)
    report.elapsed_s = time.monotonic() - started
    if latencies_file is not None:
        latencies_file.write_text(json.dumps([round(x * 1000, 4) for x in latencies]))
    return report


def _writes(
    client: GrooveClient,
    rng: random.Random,
    report: Report,
    latencies: list[float],
    stop_at: float,
    limit: int,
    in_flight: int,
    scopes: list[str],
) -> None:
    chunk = max(1, in_flight) * 8
    while report.writes + report.errors < limit and time.monotonic() < stop_at:
        n = min(chunk, limit - report.writes - report.errors)
        calls = [(C.OP_LEARNING_PUT, {"learnings": [learning_text(rng, rng.choice(scopes))]}) for _ in range(n)]
        for result in client.call_many(calls, window=in_flight):
            if result.error is not None:
                report.error(result.error)
            else:
                report.writes += 1
                latencies.append(result.latency_s)


def _basic(
    client: GrooveClient,
    rng: random.Random,
    report: Report,
    latencies: list[float],
    stop_at: float,
    limit: int,
    scopes: list[str],
) -> None:
    written: dict[str, dict[str, Any]] = {}
    done = 0
    while done < limit and time.monotonic() < stop_at:
        done += 1
        roll = rng.random()
        try:
            if roll < 0.5 or not written:
                learning = learning_text(rng, rng.choice(scopes))
                t0 = time.monotonic()
                lid = client.put_learnings([learning]).ids[0]
                latencies.append(time.monotonic() - t0)
                written[lid] = learning
                report.writes += 1
            elif roll < 0.8:
                picked = rng.sample(list(written), k=min(3, len(written)))
                report.outcomes += client.record_outcome([(lid, rng.choice(C.OUTCOMES)) for lid in picked])
            else:
                lid = rng.choice(list(written))
                report.reads += 1
                if client.get(lid).description != written[lid]["description"]:
                    report.mismatches += 1
        except GrooveError as exc:
            report.error(exc)
    calls = [(C.OP_LEARNING_GET, {"id": lid}) for lid in written]
    for lid, result in zip(written, client.call_many(calls, window=16), strict=True):
        if result.error is not None:
            report.error(result.error)
        elif result.body is None or result.body["learning"]["description"] != written[lid]["description"]:
            report.mismatches += 1
        else:
            report.verified += 1


def report_json(report: Report) -> str:
    """The report as one JSON line."""
    return json.dumps(asdict(report))
