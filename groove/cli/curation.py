"""Promotion and curation verbs: `promote`, `propose`, `reviews`, `review`, `archive`."""

from __future__ import annotations

import click

from groove.cli.commands import with_client
from groove.cli.options import json_option
from groove.cli.output import emit_json, table
from groove.client import GrooveClient
from groove.protocol import constants as C


@click.command()
@click.argument("learning_id")
@json_option
@with_client
def promote(client: GrooveClient, learning_id: str, as_json: bool) -> None:
    """Copy a project-tier learning into your user tier (with a derived_from relation to it)."""
    reply = client.promote(learning_id)
    if as_json:
        emit_json(reply.model_dump())
        return
    click.echo(f"{'promoted as' if reply.created else 'already in the user tier as'} {reply.id}")


@click.command()
@click.argument("learning_id")
@click.option("--org", required=True, help="The organisation whose curators review it.")
@click.option("--note", help="A word to the curators.")
@json_option
@with_client
def propose(client: GrooveClient, learning_id: str, org: str, note: str | None, as_json: bool) -> None:
    """Propose a learning for an organisation's enterprise tier; prints what the pre-filter flagged."""
    reply = client.propose(learning_id, org, note)
    if as_json:
        emit_json(reply.model_dump())
        return
    click.echo(f"queued for review {reply.review_id} in {org}")
    for flag in reply.flags:
        click.echo(f"  flagged {flag.kind} in {flag.field}: {flag.excerpt}")


@click.command()
@click.option("--org", required=True, help="The organisation whose review queue to list.")
@click.option(
    "--status",
    type=click.Choice([*C.REVIEW_STATUSES, "all"]),
    default="pending",
    show_default=True,
    help="Only proposals in this state.",
)
@click.option(
    "--limit", type=click.IntRange(1, C.MAX_REVIEW_LIST), default=100, show_default=True, help="At most this many."
)
@json_option
@with_client
def reviews(client: GrooveClient, org: str, status: str, limit: int, as_json: bool) -> None:
    """List an organisation's proposals, oldest first."""
    found = client.reviews(org, None if status == "all" else status, limit)
    if as_json:
        emit_json([r.model_dump() for r in found])
        return
    if not found:
        click.echo(f"no {'' if status == 'all' else status + ' '}reviews for {org}")
        return
    rows = [
        (
            r.review_id,
            r.status,
            r.from_tier,
            ", ".join(sorted({f.kind for f in r.flags})) or "-",
            str(r.learning.get("description", ""))[:60],
        )
        for r in found
    ]
    click.echo(table(("review", "status", "from", "flags", "description"), rows))


@click.command()
@click.argument("review_id")
@click.argument("decision", type=click.Choice(C.REVIEW_DECISIONS))
@click.option("--org", required=True, help="The organisation the proposal was made to.")
@click.option("--curator", required=True, help="Who decides.")
@click.option("--reason", help="Why (required to reject).")
@json_option
@with_client
def review(
    client: GrooveClient, review_id: str, decision: str, org: str, curator: str, reason: str | None, as_json: bool
) -> None:
    """Approve or reject a proposal."""
    reply = client.decide(org, review_id, decision, curator, reason)
    if as_json:
        emit_json(reply.model_dump())
        return
    made = f"; enterprise learning {reply.learning_id}" if reply.learning_id else ""
    click.echo(f"review {reply.review_id} {reply.status}{made}")


@click.command()
@click.argument("learning_id")
@click.option("--reason", help="Why (kept with it; default: archived by a curator).")
@with_client
def archive(client: GrooveClient, learning_id: str, reason: str | None) -> None:
    """Take a learning out of search and injection now (`groove restore ID` brings it back)."""
    client.archive(learning_id, reason)
    click.echo("archived")
