"""A spawnable agent worker: says hello, runs a workload against the coordinator, reports what happened.

Workloads:
- `basic`: a seeded mix of writing learnings (50 %), recording outcomes on learnings it wrote (30 %) and
  reading them back to check their content (20 %); at the end it reads back every learning it was told
  was stored.
- `writes`: single-learning `learning.put` requests only, `in_flight` at a time or paced at `rate` per
  second (the write benchmarks).
- `search`: vector searches with random query vectors, `in_flight` at a time (the search benchmark).

The report is one JSON object; `latencies_file` receives every acked write's latency in milliseconds and
`acked_file` the ids of the learnings acked and the outcomes acked per learning (for loss checks).
"""

from __future__ import annotations

import itertools
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
    searches: int = 0
    errors: int = 0
    mismatches: int = 0
    verified: int = 0
    elapsed_s: float = 0.0  # the workload itself
    verify_s: float = 0.0  # reading back everything acked, after the workload
    error_samples: list[str] = field(default_factory=list)

    def error(self, exc: Exception) -> None:
        """Count an error, keeping the first few messages."""
        self.errors += 1
        if len(self.error_samples) < 5:
            self.error_samples.append(str(exc))


@dataclass
class WorkerSpec:
    """How one worker runs: its workload, limits, scopes and where to put its evidence."""

    endpoint: str
    agent_id: str
    workload: str = "basic"
    duration: float | None = None
    count: int | None = None
    in_flight: int = 1
    seed: int = 0
    scopes: list[str] = field(default_factory=lambda: ["global"])
    timeout: float = 30.0
    latencies_file: Path | None = None
    acked_file: Path | None = None
    start_at: float | None = None  # wall-clock time to begin at, so many workers share one window
    rate: float | None = None  # operations per second to pace the writes workload at (default: flat out)


class _Run:
    """One workload's state while it runs."""

    def __init__(self, spec: WorkerSpec, client: GrooveClient) -> None:
        self.spec = spec
        self.client = client
        self.rng = random.Random(spec.seed)
        self.report = Report(spec.agent_id, spec.workload)
        self.latencies: list[float] = []
        self.acked: dict[str, int] = {}  # acked learning id -> acked attributions to it
        self.stop_at = time.monotonic() + spec.duration if spec.duration else float("inf")
        self.limit = spec.count if spec.count is not None else 1 << 62
        self.began = time.monotonic()

    def more(self, done: int) -> bool:
        return done < self.limit and time.monotonic() < self.stop_at

    def writes(self) -> None:
        r = self.report
        chunk = 1 if self.spec.rate else self.spec.in_flight * 8
        while self.more(r.writes + r.errors):
            if self.spec.rate:
                time.sleep(max(0.0, self.began + (r.writes + r.errors) / self.spec.rate - time.monotonic()))
            n = min(chunk, self.limit - r.writes - r.errors)
            calls = [
                (C.OP_LEARNING_PUT, {"learnings": [learning_text(self.rng, self.rng.choice(self.spec.scopes))]})
                for _ in range(n)
            ]
            for result in self.client.call_many(calls, window=self.spec.in_flight):
                if result.error is not None:
                    r.error(result.error)
                    continue
                assert result.body is not None
                r.writes += 1
                self.latencies.append(result.latency_s)
                self.acked[result.body["ids"][0]] = 0

    def searches(self) -> None:
        """Vector searches with random unit query vectors, `in_flight` at a time."""
        r = self.report
        # drawn up front: making 384 Gaussians per query in Python would cost this process more than the search
        queries = itertools.cycle([self._random_unit() for _ in range(256)])
        while self.more(r.searches + r.errors):
            calls = [(C.OP_SEARCH, {"vector": next(queries), "limit": 10}) for _ in range(self.spec.in_flight * 8)]
            for result in self.client.call_many(calls, window=self.spec.in_flight):
                if result.error is not None:
                    r.error(result.error)
                else:
                    r.searches += 1
                    self.latencies.append(result.latency_s)

    def _random_unit(self) -> list[float]:
        v = [self.rng.gauss(0.0, 1.0) for _ in range(C.EMBEDDING_DIM)]
        norm = sum(x * x for x in v) ** 0.5
        return [x / norm for x in v]

    def basic(self) -> None:
        r, rng, client = self.report, self.rng, self.client
        written: dict[str, dict[str, Any]] = {}
        done = 0
        while self.more(done):
            done += 1
            roll = rng.random()
            try:
                if roll < 0.5 or not written:
                    learning = learning_text(rng, rng.choice(self.spec.scopes))
                    t0 = time.monotonic()
                    lid = client.put_learnings([learning]).ids[0]
                    self.latencies.append(time.monotonic() - t0)
                    written[lid] = learning
                    self.acked[lid] = 0
                    r.writes += 1
                elif roll < 0.8:
                    picked = rng.sample(list(written), k=min(3, len(written)))
                    r.outcomes += client.record_outcome([(lid, rng.choice(C.OUTCOMES)) for lid in picked])
                    for lid in picked:
                        self.acked[lid] += 1
                else:
                    lid = rng.choice(list(written))
                    r.reads += 1
                    if client.get(lid).description != written[lid]["description"]:
                        r.mismatches += 1
            except GrooveError as exc:
                r.error(exc)
        self.verify(written)

    def verify(self, written: dict[str, dict[str, Any]]) -> None:
        """Read back every learning acked, checking its content."""
        r, started = self.report, time.monotonic()
        r.elapsed_s = started - self.began
        calls = [(C.OP_LEARNING_GET, {"id": lid}) for lid in written]
        for lid, result in zip(written, self.client.call_many(calls, window=16), strict=True):
            if result.error is not None:
                r.error(result.error)
            elif result.body is None or result.body["learning"]["description"] != written[lid]["description"]:
                r.mismatches += 1
            else:
                r.verified += 1
        r.verify_s = time.monotonic() - started


def run_worker(spec: WorkerSpec) -> Report:
    """Run one workload until its duration or count runs out, whichever comes first."""
    with GrooveClient(spec.endpoint, timeout=spec.timeout) as client:
        client.hello(spec.agent_id, role="worker", pid=os.getpid(), host=socket.gethostname())
        if spec.start_at is not None:
            time.sleep(max(0.0, spec.start_at - time.time()))
        run = _Run(spec, client)
        if spec.workload in ("writes", "search"):
            run.writes() if spec.workload == "writes" else run.searches()
            run.report.elapsed_s = time.monotonic() - run.began
        else:
            run.basic()
    if spec.latencies_file is not None:
        spec.latencies_file.write_text(json.dumps([round(x * 1000, 4) for x in run.latencies]))
    if spec.acked_file is not None:
        spec.acked_file.write_text(json.dumps(run.acked))
    return run.report


def report_json(report: Report) -> str:
    """The report as one JSON line."""
    return json.dumps(asdict(report))
