"""Acked single-learning writes: throughput and ack latency with 1, 8 and 32 agent processes, batching on/off.

Each configuration gets a fresh coordinator and data dir; the agents start together and each keeps one
`learning.put` in flight (unless --in-flight says otherwise) for --duration seconds.

    python -m benchmarks.write_path [--duration 10] [--agents 1,8,32] [--in-flight 1]
"""

from __future__ import annotations

import json

import click

from benchmarks.common import machine, run_fleet
from cli.output import table


@click.command()
@click.option("--duration", type=float, default=10.0, show_default=True, help="Seconds per configuration.")
@click.option("--agents", "agent_counts", default="1,8,32", show_default=True, help="Comma-separated counts.")
@click.option("--in-flight", type=int, default=1, show_default=True, help="Requests in flight per agent.")
@click.option("--modes", default="batched,unbatched", show_default=True)
@click.option(
    "--embedder",
    type=click.Choice(["none", "minilm"]),
    default="none",
    show_default=True,
    help="none measures the write path alone; minilm adds the embedding worker beside it.",
)
def main(duration: float, agent_counts: str, in_flight: int, modes: str, embedder: str) -> None:
    """Run every configuration and print a table, then one JSON line."""
    rows = []
    results = []
    for mode in modes.split(","):
        serve_args = ["--embedder", embedder] + (["--max-batch", "1"] if mode == "unbatched" else [])
        for n in (int(x) for x in agent_counts.split(",")):
            click.echo(f"running {mode} with {n} agents for {duration:g} s ...", err=True)
            summary = run_fleet(n, duration, serve_args, in_flight).summary() | {"mode": mode}
            results.append(summary)
            rows.append(
                (
                    mode,
                    n,
                    summary["writes_per_s"],
                    summary["p50_ms"],
                    summary["p99_ms"],
                    summary["p999_ms"],
                    summary["max_ms"],
                    summary["over_1s"],
                    summary["errors"],
                    summary["mean_batch"],
                    summary["rss_mb"],
                )
            )
    click.echo(
        table(
            (
                "mode",
                "agents",
                "writes/s",
                "p50 ms",
                "p99 ms",
                "p99.9 ms",
                "max ms",
                ">1s",
                "errors",
                "batch",
                "RSS MB",
            ),
            rows,
        )
    )
    click.echo(
        json.dumps(
            {
                "bench": "write_path",
                "in_flight": in_flight,
                "embedder": embedder,
                "duration_s": duration,
                "machine": machine(),
                "results": results,
            }
        )
    )


if __name__ == "__main__":
    main()
