"""What the benchmarks share: a coordinator per run, a fleet of agent processes, percentiles, machine facts."""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from cli.swarm import groove_argv, start_coordinator, stop_process


def percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (0 for an empty one)."""
    if not ordered:
        return 0.0
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


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


@dataclass
class FleetResult:
    """What a fleet of agents did in one shared window."""

    agents: int
    duration_s: float
    writes: int
    errors: int
    latencies_ms: list[float]
    coordinator_stats: dict[str, Any]

    @property
    def writes_per_s(self) -> float:
        return self.writes / self.duration_s

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.latencies_ms)
        return {
            "agents": self.agents,
            "writes_per_s": round(self.writes_per_s, 1),
            "p50_ms": round(percentile(lat, 50), 3),
            "p99_ms": round(percentile(lat, 99), 3),
            "p999_ms": round(percentile(lat, 99.9), 3),
            "max_ms": round(lat[-1], 3) if lat else 0.0,
            "over_1s": sum(1 for x in lat if x > 1000),
            "errors": self.errors,
            "mean_batch": round(self.coordinator_stats.get("batch_size", {}).get("mean", 0.0), 1),
            "rss_mb": round(self.coordinator_stats.get("rss_mb", 0.0), 1),
        }


def run_fleet(
    agents: int, duration: float, serve_args: list[str], in_flight: int = 1, workload: str = "writes"
) -> FleetResult:
    """A fresh coordinator, `agents` worker processes running `workload` over one shared window, then stop."""
    with tempfile.TemporaryDirectory(prefix="groove-bench-") as tmp:
        work = Path(tmp)
        data = work / "data"
        data.mkdir()
        coordinator, endpoint = start_coordinator(data, serve_args)
        try:
            start_at = time.time() + 2.0 + 0.08 * agents  # time for every worker to start and connect
            procs = []
            for i in range(agents):
                procs.append(
                    subprocess.Popen(
                        groove_argv(
                            "--endpoint",
                            endpoint,
                            "--timeout",
                            "120",
                            "agent",
                            "--agent-id",
                            f"bench-{i}",
                            "--workload",
                            workload,
                            "--duration",
                            str(duration),
                            "--in-flight",
                            str(in_flight),
                            "--seed",
                            str(i),
                            "--start-at",
                            str(start_at),
                            "--latencies-file",
                            str(work / f"lat-{i}.json"),
                        ),
                        stdout=subprocess.PIPE,
                    )
                )
            writes = errors = 0
            latencies: list[float] = []
            for i, proc in enumerate(procs):
                out, _ = proc.communicate(timeout=duration + 300)
                if proc.returncode != 0:
                    raise RuntimeError(f"agent {i} failed with status {proc.returncode}")
                report = json.loads(out.decode().strip().splitlines()[-1])
                writes += report["writes"]
                errors += report["errors"]
                latencies += json.loads((work / f"lat-{i}.json").read_text())
            from agents import GrooveClient

            with GrooveClient(endpoint, timeout=10) as client:
                stats = client.stats().model_dump()
        finally:
            stop_process(coordinator)
        return FleetResult(agents, duration, writes, errors, latencies, stats)
