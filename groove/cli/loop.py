"""Learning-loop verbs: `params`, `inject` (prints the block for a CLAUDE.md), `session` (what one was given),
`sessions` (the newest injections), `history` (a learning's outcomes), `session-end` and `maintain`
(`restore ID`, which brings an archived learning back, shares `restore` with backups in cli/backup.py)."""

from __future__ import annotations

from collections import Counter

import click

from groove.cli.commands import when, with_client, with_routed_client
from groove.cli.options import json_option, project_root, tier_option
from groove.cli.output import emit_json, table
from groove.client import GrooveClient
from groove.client.cluster import GrooveCluster
from groove.protocol import constants as C


@click.command()
@json_option
@with_client
def params(client: GrooveClient, as_json: bool) -> None:
    """Show the system's adaptive parameters: posterior, value in their own units, evidence."""
    found = client.params()
    if as_json:
        emit_json([p.model_dump() for p in found])
        return
    click.echo(
        table(
            ("name", "value", "in units", "range", "alpha", "beta", "observations", "controls"),
            [
                (
                    p.name,
                    f"{p.value:.3f}",
                    f"{p.mapped:.2f}",
                    f"{p.low:g}..{p.high:g}",
                    f"{p.alpha:.2f}",
                    f"{p.beta:.2f}",
                    p.observations,
                    p.description,
                )
                for p in found
            ],
        )
    )


@click.command()
@click.option("--session-id", default=C.CLI_SESSION_ID, show_default=True, help="The session the learnings are for.")
@click.option(
    "--project",
    callback=project_root,
    help="Also read this project's tier: its root, as in project:<root> (a relative one is made absolute).",
)
@click.option("--enterprise", help="Also read this organisation's enterprise tier.")
@click.option("--task", help="What the session is about; learnings are matched to it.")
@click.option("--budget", type=click.IntRange(1, C.MAX_INJECTION_BUDGET), help="At most this many learnings.")
@click.option("--seed", type=click.IntRange(0), help="Make the sampled thresholds reproducible.")
@json_option
@with_routed_client
def inject(
    client: GrooveClient | GrooveCluster,
    session_id: str,
    project: str | None,
    enterprise: str | None,
    task: str | None,
    budget: int | None,
    seed: int | None,
    as_json: bool,
) -> None:
    """Choose the learnings for a new session and print their block for a CLAUDE.md file.

    The injection is recorded; report how the session went with `groove session-end INJECTION_ID`.
    """
    reply = client.inject(session_id, task=task, project=project, enterprise=enterprise, budget=budget, seed=seed)
    if as_json:
        emit_json(reply.model_dump())
        return
    click.echo(reply.markdown, nl=False)
    drawn = ", ".join(f"{name} {value:.2f}" for name, value in reply.params.items())
    click.echo(f"injection {reply.injection_id}: {len(reply.learnings)} learning(s); drew {drawn}", err=True)


@click.command("session-end")
@click.argument("injection_id")
@click.option("--success/--failure", default=None, help="How the session went; updates the adaptive parameters.")
@click.option("--helpful", "helpful", multiple=True, metavar="ID", help="A learning that helped (repeatable).")
@click.option("--contradicted", "contradicted", multiple=True, metavar="ID", help="A learning that was wrong.")
@click.option("--ignored", "ignored", multiple=True, metavar="ID", help="A learning that did not matter.")
@json_option
@with_routed_client
def session_end(
    client: GrooveClient | GrooveCluster,
    injection_id: str,
    success: bool | None,
    helpful: tuple[str, ...],
    contradicted: tuple[str, ...],
    ignored: tuple[str, ...],
    as_json: bool,
) -> None:
    """Record a session's outcome for its injection; unnamed injected learnings count as ignored."""
    attributions = (
        [(lid, C.OUTCOME_HELPFUL) for lid in helpful]
        + [(lid, C.OUTCOME_CONTRADICTED) for lid in contradicted]
        + [(lid, C.OUTCOME_IGNORED) for lid in ignored]
    )
    reply = client.close_session(attributions, injection_id=injection_id, success=success)
    if as_json:
        emit_json(reply.model_dump())
        return
    rated = f"; {reply.rated_before} rated during the session already" if reply.rated_before else ""
    click.echo(f"applied {reply.applied} attribution(s), {reply.ignored} of them implied ignored{rated}")


@click.command("session")
@click.argument("injection_id")
@json_option
@with_routed_client
def session(client: GrooveClient | GrooveCluster, injection_id: str, as_json: bool) -> None:
    """Show what a session was given (its injection): each learning as it is now, and whether it was closed."""
    given = client.get_injection(injection_id)
    if as_json:
        emit_json(given.model_dump())
        return
    state = "open" if given.closed_at is None else f"closed at {given.closed_at}"
    click.echo(f"injection {given.injection_id} for session {given.session_id!r}: {state}")
    rows = [
        (g.id, g.tier, "deleted", "", "")
        if g.learning is None
        else (g.id, g.tier, "archived" if g.learning.archived else "active", f"{g.learning.confidence:.2f}",
              g.learning.insight)
        for g in given.learnings
    ]  # fmt: skip
    click.echo(table(("id", "tier", "state", "confidence", "insight"), rows))


@click.command("sessions")
@click.option("--limit", type=click.IntRange(1, C.MAX_HISTORY_LIMIT), default=C.DEFAULT_HISTORY_LIMIT,
              show_default=True, help="Injections on one page.")  # fmt: skip
@click.option("--before", help="Only injections made before this one (its id; a page's last, for the next page).")
@json_option
@with_client
def sessions(client: GrooveClient, limit: int, before: str | None, as_json: bool) -> None:
    """List the newest injections: what each session was given, and how each learning turned out."""
    page = client.injections(limit=limit, before=before)
    if as_json:
        emit_json(page.model_dump())
        return
    kinds: tuple[C.OutcomeKind, ...] = (C.OUTCOME_HELPFUL, C.OUTCOME_IGNORED, C.OUTCOME_CONTRADICTED)
    rows = [
        (i.injection_id, i.session_id, when(i.created_at), len(i.learnings),
         " / ".join(str(Counter(i.outcomes.values())[k]) for k in kinds),
         when(i.closed_at) if i.closed_at else "open")
        for i in page.injections
    ]  # fmt: skip
    click.echo(table(("injection", "session", "made", "given", "helpful / ignored / contradicted", "closed"), rows))
    if page.before is not None:
        click.echo(f"more: --before {page.before}")


@click.command("history")
@click.argument("learning_id")
@click.option("--limit", type=click.IntRange(1, C.MAX_HISTORY_LIMIT), default=C.DEFAULT_HISTORY_LIMIT,
              show_default=True, help="Outcomes, and sessions, shown at most.")  # fmt: skip
@json_option
@with_client
def history(client: GrooveClient, learning_id: str, limit: int, as_json: bool) -> None:
    """Show a learning's outcomes with its confidence after each, and the sessions it was given to."""
    found = client.history(learning_id, limit)
    if as_json:
        emit_json(found.model_dump())
        return
    rows = [(when(o.at), o.outcome, o.injection_id or "", f"{o.confidence:.3f}") for o in found.outcomes]
    click.echo(table(("when", "outcome", "injection", "confidence after"), rows))
    click.echo()
    given = [(when(g.created_at), g.session_id, g.injection_id, when(g.closed_at) if g.closed_at else "open")
             for g in found.given_to]  # fmt: skip
    click.echo(table(("given", "session", "injection", "closed"), given))


@click.command()
@click.option(
    "--tier",
    "tiers",
    multiple=True,
    callback=tier_option,
    help="Only this tier (repeatable); default every tier on disk.",
)
@click.option("--now", type=click.IntRange(0), help="Apply the rules as if at this time (ms since the epoch).")
@json_option
@with_routed_client
def maintain(client: GrooveClient | GrooveCluster, tiers: tuple[str, ...], now: int | None, as_json: bool) -> None:
    """Decay idle learnings, archive cold ones, purge old archive entries; print what was done."""
    reply = client.maintain(now=now, tiers=list(tiers) or None)
    if as_json:
        emit_json(reply.model_dump())
        return
    click.echo(
        table(
            ("tier", "decayed", "archived", "purged"),
            [(t.tier, t.decayed, t.archived, t.purged) for t in reply.tiers],
        )
    )
    click.echo(f"decayed {reply.decayed}, archived {reply.archived}, purged {reply.purged}")
