"""What a working memory's agents leave beside its tasks, from the command line: `groove memory note|notes`,
`groove memory artifacts|checkpoints|nudges`, and `groove reverse-decision`."""

from __future__ import annotations

import click

from groove.cli.board import memory_group, nudge_table
from groove.cli.commands import when, with_client
from groove.cli.options import json_option
from groove.cli.output import emit_json, table
from groove.client import GrooveClient
from groove.protocol import constants as C
from groove.protocol.ids import now_ms


@memory_group.command(name="note")
@click.argument("memory_id")
@click.argument("content")
@click.option("--kind", type=click.Choice(C.NOTE_KINDS), default="context", show_default=True,
              help="context: what everyone should know; discovery: something found out; artifact_ref: where "
              "something is.")  # fmt: skip
@click.option("--task", "task_id", help="The task it is about.")
@click.option("--by", "created_by", default="cli", show_default=True, help="Who writes it.")
@click.option("--expires-in", type=click.FloatRange(min=0.001), help="Seconds until it drops out of searches.")
@with_client
def memory_note(
    client: GrooveClient, memory_id: str, content: str, kind: str, task_id: str | None, created_by: str,
    expires_in: float | None,
) -> None:  # fmt: skip
    """Share a note with the agents working a memory; prints its id."""
    expires_at = None if expires_in is None else now_ms() + int(expires_in * 1000)
    click.echo(client.note(memory_id, content, kind, task_id, created_by, expires_at))


@memory_group.command(name="notes")
@click.argument("memory_id")
@click.option("--search", "query", help="Rank the notes by meaning and words against this text.")
@click.option("--kind", type=click.Choice(C.NOTE_KINDS), help="Only notes of this kind.")
@click.option("--task", "task_id", help="Only notes about this task.")
@click.option("--expired", is_flag=True, help="Include notes past their expiry.")
@click.option("--limit", type=click.IntRange(1, C.MAX_NOTE_LIST), default=50, show_default=True,
              help="At most this many notes.")  # fmt: skip
@json_option
@with_client
def memory_notes(
    client: GrooveClient, memory_id: str, query: str | None, kind: str | None, task_id: str | None, expired: bool,
    limit: int, as_json: bool,
) -> None:  # fmt: skip
    """List a memory's notes, newest first, or the best matches for `--search`."""
    if query is not None:
        if kind is not None or task_id is not None or expired:
            raise click.UsageError("--search ranks every live note: leave out --kind, --task and --expired")
        hits = client.search_notes(memory_id, query, limit=min(limit, C.MAX_SEARCH_LIMIT))
        if as_json:
            emit_json([h.model_dump() for h in hits])
            return
        rows = [(f"{h.score:.3f}", h.note.kind, h.note.content, h.reasoning, h.note.id) for h in hits]
        click.echo(table(("score", "kind", "note", "why", "id"), rows) if rows else "no notes found")
        return
    notes = client.notes(memory_id, kind, task_id, expired, limit)
    if as_json:
        emit_json([n.model_dump() for n in notes])
        return
    listed = [(when(n.created_at), n.kind, n.created_by or "-", n.task_id or "-", n.content, n.id) for n in notes]
    click.echo(table(("at", "kind", "by", "task", "note", "id"), listed) if listed else "no notes")


@memory_group.command(name="artifacts")
@click.argument("memory_id")
@click.option("--task", "task_id", help="Only those of this task.")
@click.option("--path", help="Every version of this path.")
@json_option
@with_client
def memory_artifacts(
    client: GrooveClient, memory_id: str, task_id: str | None, path: str | None, as_json: bool
) -> None:
    """List the files a memory's tasks produced, by path and version."""
    found = client.artifacts(memory_id, task_id, path)
    if as_json:
        emit_json([a.model_dump() for a in found])
        return
    rows = [(a.path, a.version, a.type, a.task_id, a.checksum, a.created_by, a.git_commit or "-") for a in found]
    header = ("path", "version", "type", "task", "checksum", "by", "commit")
    click.echo(table(header, rows) if rows else "no artifacts")


@memory_group.command(name="checkpoints")
@click.argument("memory_id")
@click.option("--agent", "agent_id", help="Only this agent's.")
@click.option("--task", "task_id", help="Only those of this task.")
@json_option
@with_client
def memory_checkpoints(
    client: GrooveClient, memory_id: str, agent_id: str | None, task_id: str | None, as_json: bool
) -> None:
    """List where a memory's agents' work stood in git, newest first."""
    found = client.checkpoints(memory_id, agent_id, task_id)
    if as_json:
        emit_json([c.model_dump() for c in found])
        return
    rows = [(when(c.created_at), c.agent_id, c.task_id or "-", c.branch, c.commit, c.trigger) for c in found]
    click.echo(table(("at", "agent", "task", "branch", "commit", "trigger"), rows) if rows else "no checkpoints")


@memory_group.command(name="nudges")
@click.argument("memory_id")
@click.option("--target", help="Only those sent to this target (an agent id, role:NAME or all).")
@click.option("--limit", type=click.IntRange(1, C.MAX_NUDGE_LIST), default=50, show_default=True,
              help="At most this many nudges.")  # fmt: skip
@json_option
@with_client
def memory_nudges(client: GrooveClient, memory_id: str, target: str | None, limit: int, as_json: bool) -> None:
    """List a memory's nudges, newest first, with who acknowledged each."""
    found = client.nudges(memory_id, target, limit)
    if as_json:
        emit_json([n.model_dump() for n in found])
        return
    click.echo(nudge_table(found) if found else "no nudges")


@click.command(name="reverse-decision")
@click.argument("decision_id")
@click.option("--by", "reversed_by", default="cli", show_default=True, help="Who reverses it.")
@with_client
def reverse_decision(client: GrooveClient, decision_id: str, reversed_by: str) -> None:
    """Mark a reversible decision as no longer holding."""
    client.reverse_decision(decision_id, reversed_by)
    click.echo("reversed")
