"""What the benchmarks share: latency summaries, waiting on a condition, and the machine facts every figure
needs next to it."""

from __future__ import annotations

import contextlib
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import psutil

from groove.coordinator.metrics import percentile

T = TypeVar("T")


def latency_summary(latencies_ms: list[float]) -> dict[str, float]:
    """p50, p99, p99.9 and max of acked latencies in ms, and how many took over a second."""
    ordered = sorted(latencies_ms)
    return {
        "p50_ms": round(percentile(ordered, 50), 3),
        "p99_ms": round(percentile(ordered, 99), 3),
        "p999_ms": round(percentile(ordered, 99.9), 3),
        "max_ms": round(ordered[-1], 3) if ordered else 0.0,
        "over_1s": sum(1 for x in ordered if x > 1000),
    }


def ratio(figure: float, against: float) -> float:
    """`figure / against` to three significant figures, never rounded to 0 when both are positive: a ratio
    rounded to a fixed number of places reads 0.0 when a short run on a busy machine gives groove a few writes
    beside a peer's tens of thousands, which says "groove did nothing" when it did something."""
    return float(f"{figure / against:.3g}")


def poll(condition: Callable[[], T | None], timeout: float) -> T | None:
    """The first value `condition()` gives that is not None, asked every 50 ms; None after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while (found := condition()) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def ms_between(start: float, end: float | None) -> float | None:
    """Milliseconds from `start` to `end` (monotonic seconds), to 0.1 ms; None when `end` never came."""
    return None if end is None else round((end - start) * 1000, 1)


def machine() -> dict[str, Any]:
    """The facts a figure needs next to it."""
    return {
        "cpus": os.cpu_count(),
        "ram_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(),
        "cpu_model": _cpu_model(),
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


class ProcessTree:
    """A process with its children (the coordinator and its front process): CPU and memory summed over them."""

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self._known: dict[int, psutil.Process] = {}
        self.cpu_percent()  # the first reading of each process only starts its clock

    def _members(self) -> list[psutil.Process]:
        members = [self.root, *self.root.children(recursive=True)]
        for proc in members:
            self._known.setdefault(proc.pid, proc)
        return [self._known[proc.pid] for proc in members]

    def cpu_percent(self) -> float:
        """CPU percent since the last call (100 = one core), over every member still running."""
        total = 0.0
        for proc in self._members():
            with contextlib.suppress(psutil.Error):
                total += proc.cpu_percent(None)
        return total

    def cpu_seconds(self) -> float:
        """CPU time (user and system) used so far by every member still running."""
        total = 0.0
        for proc in self._members():
            with contextlib.suppress(psutil.Error):
                times = proc.cpu_times()
                total += times.user + times.system
        return total

    def rss_mb(self) -> float:
        """Resident memory of every member, MB."""
        total = 0
        for proc in self._members():
            with contextlib.suppress(psutil.Error):
                total += proc.memory_info().rss
        return total / 1e6
