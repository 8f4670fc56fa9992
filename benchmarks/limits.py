"""groove's write path against its limits, all measured in one run on one machine.

    python -m benchmarks.limits [--agents 32] [--in-flight 16] [--duration 10]

1. the storage limit: the rows learning writes store, committed raw (benchmarks.storage), batch 1/16/256;
2. the writer's in-process ceiling: group commits spread over seven tiers, batch 256 (benchmarks.writer);
3. groove end-to-end: agent processes writing through a coordinator (benchmarks.load), every acked write
   read back;
4. its peers with the same agents and payloads: a bare ZeroMQ echo, SQLite in WAL mode writing one row a write
   (the floor), and the fair SQLite peer doing per write what groove does (benchmarks/fairpeer.py).

Prints the figures, the ratios `groove ÷ storage` (script, batch 256), `groove ÷ writer`, `groove ÷ echo`,
`groove ÷ sqlite` and `groove ÷ sqlite-fair`, and a JSON line. These machines are shared and noisy: compare
ratios, not rates, across runs.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import click

from benchmarks import load, storage, writer
from benchmarks.common import machine, ratio
from groove.cli.output import table
from groove.coordinator.net.config import Settings


def load_args(agents: int, in_flight: int, duration: float) -> dict[str, Any]:
    """`benchmarks.load`'s arguments: its own defaults (an option it gains is never missing here), then ours."""
    defaults = {param.name: param.default for param in load.main.params if param.name is not None}
    ours = {"agents": agents, "in_flight": in_flight, "duration": duration, "mix": "learn=1", "preload": 0}
    return defaults | ours | {"embedder": "none", "serve_arg": (), "rest_rss": False}


def ratios(figures: dict[str, float]) -> dict[str, float]:
    """groove's writes/s over each limit and peer measured beside it."""
    groove = figures["groove"]
    return {f"groove/{name}": ratio(groove, rate) for name, rate in figures.items() if name != "groove" and rate}


@click.command()
@click.option("--agents", type=click.IntRange(1, 512), default=32, show_default=True, help="Agent processes.")
@click.option("--in-flight", type=click.IntRange(1, 1024), default=16, show_default=True, help="Per agent.")
@click.option("--duration", type=click.FloatRange(1), default=10.0, show_default=True, help="Seconds of load.")
@click.option("--writes", type=click.IntRange(256), default=20_000, show_default=True, help="Raw writes per figure.")
def main(agents: int, in_flight: int, duration: float, writes: int) -> None:
    """Measure the storage limit, the writer, groove end-to-end and the peers; print the ratios."""
    click.echo("storage ...", err=True)
    raw = storage.measure(writes)
    click.echo("writer ...", err=True)
    threads = Settings.model_fields["commit_threads"].default  # as the coordinator measured beside it commits
    ceiling = writer.measure(spread=True, batch=256, batches=max(20, writes // 256), threads=threads)
    args = load_args(agents, in_flight, duration)
    with tempfile.TemporaryDirectory(prefix="groove-limits-") as tmp:
        work = Path(tmp)
        click.echo(f"groove: {agents} agents x {in_flight} in flight ...", err=True)
        groove = load.run_groove(args, work / "groove")
        peers = {}
        for peer in ("echo", "sqlite", load.FAIR):
            click.echo(f"peer {peer} ...", err=True)
            (work / peer).mkdir()
            peers[peer] = load.run_peer(peer, args, work / peer)
    learn = groove["kinds"]["learn"]
    at_256 = next(r for r in raw if r["batch"] == 256)
    figures = {
        "groove": learn["per_s"],
        "storage": at_256["script_per_s"],
        "storage_import": at_256["import_per_s"],
        "writer": ceiling["writes_per_s"],
        "echo": peers["echo"]["per_s"],
        "sqlite": peers["sqlite"]["per_s"],
        load.FAIR: peers[load.FAIR]["learn_per_s"],
    }
    columns = ("batch", "script_per_s", "import_per_s")
    click.echo(table(columns, [tuple(r[c] for c in columns) for r in raw]))
    click.echo(table(("writes/s", "rate"), list(figures.items())))
    found = ratios(figures)
    click.echo(" · ".join(f"{k} {v}" for k, v in found.items()))
    rb, c = groove["readback"], groove["coordinator"]
    cpu, batch = c["cpu_percent_under_load"], c["batch_size"]["mean"]
    click.echo(f"readback: {rb} · coordinator CPU {cpu:.0f}% under load · batch mean {batch:.1f}")
    line = {
        "bench": "limits",
        "agents": agents,
        "in_flight": in_flight,
        "duration_s": duration,
        "figures": figures,
        "ratios": found,
        "storage": raw,
        "writer": ceiling,
        "groove": {k: learn[k] for k in ("per_s", "p50_ms", "p99_ms", "p999_ms", "over_1s")},
        "readback": rb,
        "errors": groove["errors"],
        "coordinator_cpu_percent": c["cpu_percent_under_load"],
        "batch_mean": c["batch_size"]["mean"],
        "machine": machine(),
    }
    click.echo(json.dumps(line))


if __name__ == "__main__":
    main()
