"""The same swarm on both fleet backends: local processes, then Ray actors (a local Ray started for it).

    python -m benchmarks.fleets --agents 8 --duration 20

Each run is `groove swarm --json` (its own coordinator, no board agents, no model); the figures are each
backend's acked requests by kind, read-back mismatches and errors, wall time, and the backend's start-up
(Ray: started, and room found for every agent). The last line is JSON with the Ray/local ratios.
"""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

import click

from benchmarks.common import machine
from groove.cli.output import table
from groove.swarm.coding import groove_argv
from groove.swarm.workloads import KINDS


def swarm(backend: str, agents: int, duration: float) -> dict[str, Any]:
    """One `groove swarm` run's report, with its wall time."""
    argv = groove_argv(
        "swarm", "--agents", str(agents), "--duration", str(duration), "--board-agents", "0", "--embedder", "none"
    )
    began = time.monotonic()
    run = subprocess.run([*argv, "--backend", backend, "--json"], capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise click.ClickException(f"the {backend} swarm failed ({run.returncode}): {run.stderr.strip()[-500:]}")
    report: dict[str, Any] = json.loads(run.stdout)
    report["wall_s"] = round(time.monotonic() - began, 2)
    return report


@click.command()
@click.option("--agents", type=click.IntRange(1, 256), default=8, show_default=True, help="Agents per swarm.")
@click.option("--duration", type=click.FloatRange(1), default=20.0, show_default=True, help="Seconds of load.")
def main(agents: int, duration: float) -> None:
    """Run the swarm locally, then on Ray; print a table, then one JSON line."""
    runs = {backend: swarm(backend, agents, duration) for backend in ("local", "ray")}
    rows = [
        (
            backend,
            *(r["ops"][kind]["acked"] for kind in KINDS),
            r["mismatches"],
            r["errors"],
            r["nodes"],
            r["backend_startup_s"],
            r["wall_s"],
        )
        for backend, r in runs.items()
    ]
    click.echo(table(("backend", *KINDS, "mismatches", "errors", "nodes", "start-up s", "wall s"), rows))
    local, ray = runs["local"], runs["ray"]
    acked = {b: sum(r["ops"][k]["acked"] for k in KINDS) for b, r in runs.items()}
    line = {
        "bench": "fleets",
        "agents": agents,
        "duration_s": duration,
        "acked": acked,
        "acked_ray_over_local": round(acked["ray"] / max(1, acked["local"]), 3),
        "by_kind": {b: {k: r["ops"][k]["acked"] for k in KINDS} for b, r in runs.items()},
        "mismatches": {"local": local["mismatches"], "ray": ray["mismatches"]},
        "errors": {"local": local["errors"], "ray": ray["errors"]},
        "verified_after": {"local": local["verified_after"], "ray": ray["verified_after"]},
        "ray_startup_s": ray["backend_startup_s"],
        "wall_s": {"local": local["wall_s"], "ray": ray["wall_s"]},
        "machine": machine(),
    }
    click.echo(json.dumps(line))


if __name__ == "__main__":
    main()
