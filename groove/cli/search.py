"""Semantic-memory verbs: `search`, `reindex` and `reembed` (the last two with progress bars)."""

from __future__ import annotations

import sys
import time

import click

from groove.cli.commands import with_client, with_routed_client
from groove.cli.options import json_option, project_root, tier_option
from groove.cli.output import emit_json, table
from groove.client import GrooveClient
from groove.client.cluster import GrooveCluster
from groove.protocol import constants as C


@click.command()
@click.argument("text")
@click.option(
    "--project",
    callback=project_root,
    help="Also read this project's tier: its root, as in project:<root> (a relative one is made absolute).",
)
@click.option("--enterprise", help="Also read this organisation's enterprise tier.")
@click.option(
    "--limit",
    type=click.IntRange(1, C.MAX_SEARCH_LIMIT),
    default=C.DEFAULT_SEARCH_LIMIT,
    show_default=True,
    help="At most this many results.",
)
@click.option("--category", type=click.Choice(C.CATEGORIES), help="Only this category.")
@click.option(
    "--mode",
    type=click.Choice(C.SEARCH_MODES),
    default="hybrid",
    show_default=True,
    help="semantic (by meaning), keyword (by words) or hybrid (both).",
)
@click.option(
    "--depth",
    type=click.IntRange(0, C.MAX_SEARCH_DEPTH),
    default=0,
    show_default=True,
    help="Also follow related_to, derived_from and specializes relations this many hops.",
)
@click.option("--min-confidence", type=click.FloatRange(0.0, 1.0), help="Leave out learnings below this confidence.")
@json_option
@with_routed_client
def search(
    client: GrooveClient | GrooveCluster,
    text: str,
    project: str | None,
    enterprise: str | None,
    limit: int,
    category: str | None,
    mode: str,
    depth: int,
    min_confidence: float | None,
    as_json: bool,
) -> None:
    """Find learnings by meaning and by words."""
    hits = client.search(
        text,
        limit=limit,
        project=project,
        enterprise=enterprise,
        mode=mode,
        depth=depth,
        category=category,
        min_confidence=min_confidence,
    )
    if as_json:
        emit_json([h.model_dump() for h in hits])
        return
    if not hits:
        click.echo("no learnings found")
        return
    rows = [
        (f"{h.score:.3f}", h.tier, h.learning.category, h.learning.insight, h.reasoning, h.learning.id) for h in hits
    ]
    click.echo(table(("score", "tier", "category", "insight", "why", "id"), rows, max_width=48))


@click.command()
@click.option(
    "--tier", "tiers", multiple=True, callback=tier_option, help="Only this tier (repeatable; default every tier)."
)
@json_option
@with_client
def reindex(client: GrooveClient, tiers: tuple[str, ...], as_json: bool) -> None:
    """Rebuild the keyword and vector indexes from stored data, tier by tier."""
    names = list(tiers) or client.stats().disk_tiers
    total = 0
    with click.progressbar(
        names,
        label="rebuilding indexes",
        show_pos=True,
        file=sys.stderr,
        item_show_func=lambda name: name,
    ) as bar:
        for name in bar:
            total += client.reindex([name]).count
    if as_json:
        emit_json({"tiers": names, "vectors": total})
    else:
        click.echo(f"rebuilt {len(names)} tier(s): {total} vectors indexed")


@click.command()
@click.option(
    "--tier", "tiers", multiple=True, callback=tier_option, help="Only this tier (repeatable; default every tier)."
)
@click.option("--no-wait", is_flag=True, help="Queue the work and return instead of showing progress.")
@json_option
@with_client
def reembed(client: GrooveClient, tiers: tuple[str, ...], no_wait: bool, as_json: bool) -> None:
    """Recompute every embedding (e.g. after a model change); shows progress until the queue drains."""
    reply = client.reembed(list(tiers) or None)
    if not no_wait and reply.count:
        with click.progressbar(length=reply.count, label="embedding", show_pos=True, file=sys.stderr) as bar:
            done = 0
            while done < reply.count:
                time.sleep(0.5)
                left = client.stats().embedding_queue_depth
                now_done = max(done, reply.count - left)
                bar.update(now_done - done)
                done = now_done
    if as_json:
        emit_json(reply.model_dump())
    else:
        click.echo(f"queued {reply.count} learning(s) from {len(reply.tiers)} tier(s) for embedding")
