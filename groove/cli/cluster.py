"""`groove cluster status`: every coordinator of a cluster map, the tiers it owns and holds, its queue, its ping."""

from __future__ import annotations

import sys
from dataclasses import asdict
from typing import Any

import click

from groove.cli.options import cluster_of, connection_options, curve_of, json_option
from groove.cli.output import emit_json, fail, table
from groove.client.cluster import CoordinatorStatus, GrooveCluster

EXIT_DOWN = 3  # as a verb whose coordinator did not answer
EXIT_MISCONFIGURED = 1  # every coordinator answered, but one was not started as the map says


@click.group(name="cluster")
def cluster_group() -> None:
    """Coordinators that partition the tiers among them (see --cluster)."""


@cluster_group.command()
@json_option
@connection_options
@click.pass_context
def status(ctx: click.Context, /, as_json: bool) -> None:
    """Show each coordinator of the --cluster map: what it owns, the tiers it holds, its write queue and how
    long a ping took. Exits 3 if one did not answer (it is shown as down), 1 if one answered but was not
    started with the map under its name (it would not refuse writes for other coordinators' tiers)."""
    cluster = cluster_of(ctx.obj)
    if cluster is None:
        fail("give the cluster map: --cluster FILE (or GROOVE_CLUSTER)", 2)
    with GrooveCluster(cluster, timeout=ctx.obj["timeout"], curve=curve_of(ctx.obj)) as clients:
        found = clients.status()
    if as_json:
        emit_json([_json(s) for s in found])
    else:
        click.echo(table(("coordinator", "endpoint", "owns", "tiers held", "queue", "ping ms", "state"), _rows(found)))
    if any(s.error is not None for s in found):
        for s in found:
            if s.error is not None:
                click.echo(f"groove: error: coordinator {s.name} at {s.endpoint}: {s.error}", err=True)
        sys.exit(EXIT_DOWN)
    misconfigured = [(s, problem) for s in found if (problem := _problem(s)) is not None]
    for s, problem in misconfigured:
        click.echo(f"groove: error: coordinator {s.name} at {s.endpoint}: {problem}", err=True)
    if misconfigured:
        sys.exit(EXIT_MISCONFIGURED)


def _owns(s: CoordinatorStatus) -> str:
    parts = ["user, enterprise:*"] if s.home else []
    parts += [f"project:{p}*" for p in s.prefixes]
    if s.hashed:
        parts.append("its share of the other projects")
    return "; ".join(parts) or "nothing"


def _rows(found: list[CoordinatorStatus]) -> list[tuple[Any, ...]]:
    rows = []
    for s in found:
        if s.stats is None:
            rows.append((s.name, s.endpoint, _owns(s), "", "", "", "down"))
            continue
        queue = f"{s.stats.write_queue_depth}/{s.stats.write_queue_capacity}"
        held = ", ".join(s.stats.disk_tiers) or "none yet"
        problem = _problem(s)
        state = "up" if problem is None else f"up, {problem}"
        rows.append((s.name, s.endpoint, _owns(s), held, queue, f"{s.ping_ms:.1f}", state))
    return rows


def _problem(s: CoordinatorStatus) -> str | None:
    """Why this coordinator (up) would not refuse a write for another's tier, or None."""
    assert s.stats is not None
    if s.stats.cluster_name is None:
        return "started without --cluster: it refuses no tier's writes"
    if s.stats.cluster_name != s.name:
        return f"but started as {s.stats.cluster_name!r}"
    return None


def _json(s: CoordinatorStatus) -> dict[str, Any]:
    fields = asdict(s)
    fields["stats"] = None if s.stats is None else s.stats.model_dump()
    return fields
