"""Counters and recent samples the coordinator reports in `stats`."""

from __future__ import annotations

import bisect
import math
import threading
from collections import deque
from typing import Any

import psutil

from groove.coordinator.heap import heap_used_bytes

_WINDOW = 2048
# Upper bounds of the cumulative histograms (`stats` sends them; the dashboard's /metrics turns them into
# Prometheus histograms): milliseconds for times, requests for batch sizes.
MS_BOUNDS = (0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 10000.0)
SIZE_BOUNDS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 4096.0)
OK = "ok"  # the outcome of an answered request that succeeded; otherwise its error code


class Histogram:
    """Counts by bucket since the start (not a window): what a scraper needs to compute rates and quantiles."""

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last bucket: above every bound
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value

    def out(self) -> dict[str, Any]:
        return {"bounds": list(self.bounds), "counts": list(self.counts), "sum": self.sum}


def percentile(ordered: list[float], q: float) -> float:
    """The nearest-rank `q`th percentile (q in 0-100) of an ascending list; 0 for an empty one."""
    if not ordered:
        return 0.0
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def summarize(samples: list[float]) -> dict[str, float]:
    """Mean and nearest-rank 50th and 99th percentiles; zeros for no samples."""
    if not samples:
        return {"mean": 0.0, "p50": 0.0, "p99": 0.0, "samples": 0}
    ordered = sorted(samples)
    p50, p99 = percentile(ordered, 50), percentile(ordered, 99)
    return {"mean": sum(ordered) / len(ordered), "p50": p50, "p99": p99, "samples": len(ordered)}


class Metrics:
    """Written by the batcher and the socket loop, read by `stats`; the lock guards the sample windows."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._batch_sizes: deque[float] = deque(maxlen=_WINDOW)
        self._commit_ms: deque[float] = deque(maxlen=_WINDOW)
        self._op_ms: dict[str, deque[float]] = {}
        self.op_counts: dict[str, int] = {}
        self._outcomes: dict[tuple[str, str], int] = {}  # (op, "ok" or error code) -> requests answered
        self._op_hist: dict[str, Histogram] = {}
        self._batch_hist = Histogram(SIZE_BOUNDS)
        self._commit_hist = Histogram(MS_BOUNDS)
        self._events: dict[str, int] = {}
        self.batches_committed = 0
        self.writes_committed = 0
        self.writes_rejected = 0
        self.requests_served = 0
        self.front_checked = 0  # writes the front decoded and validated (`--front-checks`)
        self.unauthorized = 0
        self.write_ms = 1.0  # recent milliseconds of commit per write: how fast the write queue drains
        self.process = psutil.Process()
        # what the process holds before any tier opens (the interpreter, groove's code, its libraries)
        self.base_rss_mb = self.process.memory_info().rss / 1e6
        self.base_heap_bytes = heap_used_bytes()  # the C heap's share of it
        self.process.cpu_percent(None)  # the first call only starts the measurement

    def record_batch(self, size: int, committed: int, commit_ms: float) -> None:
        """One batch finished: `size` requests, `committed` of them answered with success."""
        with self._lock:
            self._batch_sizes.append(float(size))
            self._commit_ms.append(commit_ms)
            self._batch_hist.observe(size)
            self._commit_hist.observe(commit_ms)
            self.batches_committed += 1
            self.writes_committed += committed
            self.writes_rejected += size - committed
            self.write_ms = 0.8 * self.write_ms + 0.2 * commit_ms / max(1, size)

    def drain_ms(self, depth: int) -> float:
        """About how long the writer needs to commit `depth` queued writes at its recent pace."""
        return depth * self.write_ms

    def batch_summaries(self) -> tuple[dict[str, float], dict[str, float]]:
        """(batch size, commit milliseconds) over the recent window."""
        with self._lock:
            sizes, times = list(self._batch_sizes), list(self._commit_ms)
        return summarize(sizes), summarize(times)

    def record_op(self, op: str, ms: float, outcome: str = OK) -> None:
        """One request of `op` answered, `ms` after the socket loop received it; `outcome` is "ok" or the
        error code it was answered with."""
        self.record_ops([(op, ms, outcome)])

    def record_ops(self, answered: list[tuple[str, float, str]]) -> None:
        """`record_op` for each (op, ms, outcome) of a batch of writes answered, under one take of the lock."""
        with self._lock:
            for op, ms, outcome in answered:
                window = self._op_ms.get(op)
                if window is None:
                    window = self._op_ms[op] = deque(maxlen=_WINDOW)
                    self._op_hist[op] = Histogram(MS_BOUNDS)
                window.append(ms)
                self._op_hist[op].observe(ms)
                self.op_counts[op] = self.op_counts.get(op, 0) + 1
                self._outcomes[op, outcome] = self._outcomes.get((op, outcome), 0) + 1

    def refused(self, op: str, code: str) -> None:
        """A request of `op` ("" if it could not be read) answered with error `code` before any handler ran."""
        with self._lock:
            self._outcomes[op, code] = self._outcomes.get((op, code), 0) + 1

    def count(self, event: str, n: int = 1) -> None:
        """`n` more of a counted event (leases expired, outcomes by kind, nudges acknowledged)."""
        if n:
            with self._lock:
                self._events[event] = self._events.get(event, 0) + n

    def totals(self) -> dict[str, Any]:
        """Counts since start: requests by operation and outcome, events, and the cumulative histograms."""
        with self._lock:
            by_op: dict[str, dict[str, int]] = {}
            for (op, outcome), n in sorted(self._outcomes.items()):
                by_op.setdefault(op, {})[outcome] = n
            return {
                "op_outcomes": by_op,
                "events": dict(sorted(self._events.items())),
                "histograms": {"batch_size": self._batch_hist.out(), "commit_ms": self._commit_hist.out()},
                "op_histograms": {op: h.out() for op, h in sorted(self._op_hist.items())},
            }

    def op_summaries(self) -> dict[str, dict[str, float]]:
        """Service time by operation (received -> reply handed to the socket loop), over recent requests."""
        with self._lock:
            windows = {op: list(window) for op, window in self._op_ms.items()}
        return {op: summarize(samples) for op, samples in sorted(windows.items())}

    def op_totals(self) -> dict[str, int]:
        """Requests answered by operation since start (the ones timed in `op_summaries`)."""
        with self._lock:
            return dict(sorted(self.op_counts.items()))

    def resources(self) -> tuple[float, float]:
        """(RSS in MB, CPU percent since the previous call)."""
        return self.process.memory_info().rss / 1e6, self.process.cpu_percent(None)
