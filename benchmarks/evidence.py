"""A load run's agents: started alike, then what they were acked, summarised (throughput, latency, errors)
and read back from the coordinator (lost, duplicated, stored without an ack, usage miscounted). Shared by the
single-coordinator and the cluster runs of benchmarks.load."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common import latency_summary
from groove.client import GrooveClient
from groove.swarm.fleet import Fleet
from groove.swarm.workloads import KINDS

SETTLE_S = 2.0  # workers start this long after being spawned, plus PER_AGENT_S each, so all start together
PER_AGENT_S = 0.25  # a worker process takes ~0.3 s of CPU to start: on 2 cores, 32 of them take ~5 s


def spawn_agent(fleet: Fleet, i: int, args: dict[str, Any], start_at: float, projects: str | None) -> None:
    """Load agent i of a run: the run's mix, no read-back of its own (`readback` does it), its acked ids in
    the fleet's workdir."""
    fleet.spawn(
        f"load-{i}",
        mix=args["mix"],
        in_flight=args["in_flight"],
        seed=i,
        verify=False,
        start_at=start_at,
        projects=projects,
        acked_file=fleet.workdir / f"load-{i}.acked.json",
        duration=args["duration"],
    )


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
