"""What a load run's agents were acked, summarised (throughput, latency, errors) and read back from the
coordinator (lost, duplicated, stored without an ack, usage miscounted): shared by the single-coordinator and
the cluster runs of benchmarks.load."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from agents import GrooveClient
from agents.workloads import KINDS
from benchmarks.common import latency_summary


def summarize(reports: list[dict[str, Any]], latencies: dict[str, list[float]], duration: float) -> dict[str, Any]:
    """Acked requests by kind: per second, latency percentiles, errors."""
    kinds = {}
    for kind in KINDS:
        acked = sum(r["ops"].get(kind, 0) for r in reports)
        if acked or kind in latencies:
            elapsed = max((r["elapsed_s"] for r in reports), default=duration)
            kinds[kind] = {"acked": acked, "per_s": round(acked / elapsed, 1)} | latency_summary(latencies[kind])
    return {
        "kinds": kinds,
        "errors": sum(r["errors"] for r in reports),
        "error_samples": [s for r in reports for s in r["error_samples"]][:5],
    }


def readback(client: GrooveClient, workdir: Path, preloaded: int) -> dict[str, int]:
    """Every acked id read back: lost, duplicated, stored without an ack, usage miscounted."""
    learned: set[str] = set()
    injected: Counter[str] = Counter()
    for path in workdir.glob("*.acked.json"):
        acked = json.loads(path.read_text())
        learned.update(acked["learned"])
        injected.update(acked["injected"])
    stored = {x.id: x for x in client.iter_learnings()}
    contents = Counter((x.tier, x.scope, x.description.lower(), x.insight.lower()) for x in stored.values())
    return {
        "acked": len(learned),
        "stored": len(stored) - preloaded,
        "lost": len(learned - set(stored)),
        "duplicates": sum(n - 1 for n in contents.values() if n > 1),
        "unacked_stored": len(set(stored) - learned) - preloaded,
        "miscounted": sum(1 for lid, x in stored.items() if x.usage.times_injected != injected.get(lid, 0)),
    }
