"""`groove backup`, `restore`, `export`, `import`: copies of the memory, whole or as portable JSON.

`backup`, `export` and `import` ask the running coordinator (admin role with CURVE); the paths they name
are on the coordinator's host and are made absolute here. `restore` works offline on a data directory,
with no coordinator running on it.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from groove.cli.commands import connect, with_client
from groove.cli.options import connection_options, json_option, tier_option
from groove.cli.output import emit_json, fail, table
from groove.client import GrooveClient
from groove.coordinator.net.config import default_data_dir


@click.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@json_option
@with_client
def backup(client: GrooveClient, directory: Path, as_json: bool) -> None:
    """Snapshot every tier into DIRECTORY (new or empty), consistently, while the coordinator serves."""
    reply = client.backup(str(directory.resolve()))
    if as_json:
        emit_json(reply.model_dump())
        return
    click.echo(
        table(("tier", "learnings", "bytes", "file"), [(t.tier, t.learnings, t.bytes, t.file) for t in reply.tiers])
    )
    click.echo(f"backed up {len(reply.tiers)} tiers into {reply.directory} in {reply.took_ms:.0f} ms")


@click.command()
@click.argument("target")
@click.option(
    "--data-dir",
    envvar="GROOVE_DATA_DIR",
    type=click.Path(file_okay=False, path_type=Path),
    default=default_data_dir,
    show_default="$XDG_DATA_HOME/groove",
    help="The data directory to make; it must hold no tiers yet [env GROOVE_DATA_DIR].",
)
@json_option
@connection_options
@click.pass_context
def restore(ctx: click.Context, target: str, data_dir: Path, as_json: bool) -> None:
    """`restore DIR`: make a data directory from the backup in DIR, offline (no coordinator may be using it).
    `restore ID`: bring the archived learning ID back into search and injection (asks the coordinator; the
    connection options apply to this form only)."""
    from groove.coordinator.errors import StorageError
    from groove.coordinator.store.backup import restore_backup

    directory = Path(target)
    if not directory.is_dir():
        if directory.exists() or os.sep in target or target.startswith("."):
            fail(f"{target} is not a backup directory (nor a learning id)", 2)
        with connect(ctx) as client:
            client.restore(target)
        if as_json:
            emit_json({"restored": target})
        else:
            click.echo(f"restored {target}")
        return
    try:
        restored = restore_backup(directory, data_dir, lambda line: click.echo(line, err=as_json))
    except StorageError as exc:
        fail(str(exc), 2)
    if as_json:
        emit_json({"data_dir": str(data_dir), "tiers": restored})
        return
    click.echo(f"restored {len(restored)} tiers, {sum(t['learnings'] for t in restored)} learnings into {data_dir}")


@click.command("export")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--tier", "tiers", multiple=True, callback=tier_option, help="Only this tier (repeatable); default every tier."
)
@json_option
@with_client
def export_command(client: GrooveClient, file: Path, tiers: tuple[str, ...], as_json: bool) -> None:
    """Write every learning (with usage and archive state) and relation as JSON to FILE (no embeddings)."""
    reply = client.export(str(file.resolve()), list(tiers) or None)
    if as_json:
        emit_json(reply.model_dump())
        return
    click.echo(
        f"exported {reply.learnings} learnings and {reply.relations} relations of {reply.tiers} tiers to {reply.path}"
    )


@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@json_option
@with_client
def import_command(client: GrooveClient, file: Path, as_json: bool) -> None:
    """Add the learnings and relations of an export FILE; ids already stored are skipped."""
    reply = client.import_file(str(file.resolve()))
    if as_json:
        emit_json(reply.model_dump())
        return
    click.echo(
        f"imported {reply.learnings_imported} learnings ({reply.learnings_skipped} skipped: id exists) and "
        f"{reply.relations_imported} relations ({reply.relations_skipped} skipped) into {reply.tiers} tiers; "
        f"{reply.queued_for_embedding} queued for embedding"
    )
