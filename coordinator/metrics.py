"""Counters and recent samples the coordinator reports in `stats`."""

from __future__ import annotations

import math
import threading
from collections import deque

import psutil

_WINDOW = 2048


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
        self.batches_committed = 0
        self.writes_committed = 0
        self.writes_rejected = 0
        self.requests_served = 0
        self.unauthorized = 0
        self.write_ms = 1.0  # recent milliseconds of commit per write: how fast the write queue drains
        self.process = psutil.Process()
        self.process.cpu_percent(None)  # the first call only starts the measurement

    def record_batch(self, size: int, committed: int, commit_ms: float) -> None:
        """One batch finished: `size` requests, `committed` of them answered with success."""
        with self._lock:
            self._batch_sizes.append(float(size))
            self._commit_ms.append(commit_ms)
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

    def record_op(self, op: str, ms: float) -> None:
        """One request of `op` answered, `ms` after the socket loop received it."""
        with self._lock:
            window = self._op_ms.get(op)
            if window is None:
                window = self._op_ms[op] = deque(maxlen=_WINDOW)
            window.append(ms)
            self.op_counts[op] = self.op_counts.get(op, 0) + 1

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
