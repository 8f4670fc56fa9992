"""`groove keys`: make and inspect CurveZMQ key pairs for the coordinator and its clients."""

from __future__ import annotations

from pathlib import Path

import click

from groove.cli.options import json_option
from groove.cli.output import emit_json, fail, table
from groove.protocol import constants as C
from groove.protocol.keys import PUBLIC_SUFFIX, KeyFileError, generate_key_pair, read_key_file


@click.group("keys")
def keys_group() -> None:
    """Make and list CurveZMQ keys (`serve --curve`, clients' --server-key/--key)."""


@keys_group.command("generate")
@click.argument("name")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Where NAME.key (public) and NAME.key_secret (private, mode 0600) are written.",
)
@click.option("--role", type=click.Choice(C.ROLES), help="The role the coordinator grants this key (clients only).")
@click.option("--org", "orgs", multiple=True, help="An organisation a curator key curates (repeatable).")
@click.option("--user", help="The user id this key writes `user:<id>` learnings as (default: NAME).")
@click.option("--server", is_flag=True, help="A key pair for the coordinator itself (no role).")
@json_option
def generate(
    name: str, directory: Path, role: str | None, orgs: tuple[str, ...], user: str | None, server: bool, as_json: bool
) -> None:
    """Make the key pair NAME: copy NAME.key into the coordinator's --authorized-keys directory (clients) or
    hand it to every client (--server); NAME.key_secret stays with its owner."""
    if server == (role is not None):
        fail("give --role for a client key, or --server for the coordinator's own", 2)
    if orgs and role != "curator":
        fail("--org applies to curator keys", 2)
    if role == "curator" and not orgs:
        fail("a curator key needs at least one --org", 2)
    metadata = {"role": "server"} if server else {"role": str(role)}
    if orgs:
        metadata["orgs"] = ",".join(orgs)
    if user is not None:
        metadata["user"] = user
    try:
        public, secret = generate_key_pair(directory, name, metadata)
    except (KeyFileError, OSError) as exc:
        fail(str(exc), 2)
    key = read_key_file(public).public.decode()
    if as_json:
        emit_json({"public_key_file": str(public), "secret_key_file": str(secret), "public_key": key, **metadata})
        return
    click.echo(f"public key  {public}  ({key})")
    click.echo(f"secret key  {secret}  (keep it private)")


@keys_group.command("list")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@json_option
def list_keys(directory: Path, as_json: bool) -> None:
    """The public keys in DIRECTORY (an --authorized-keys directory) and the roles they name."""
    rows = []
    for path in sorted(directory.glob(f"*{PUBLIC_SUFFIX}")):
        try:
            key = read_key_file(path)
        except KeyFileError as exc:
            fail(str(exc), 2)
        rows.append(
            {
                "name": path.name[: -len(PUBLIC_SUFFIX)],
                "role": key.metadata.get("role", ""),
                "user": key.metadata.get("user", ""),
                "orgs": key.metadata.get("orgs", ""),
                "public_key": key.public.decode(),
            }
        )
    if as_json:
        emit_json(rows)
    else:
        click.echo(table(["name", "role", "user", "orgs", "public key"], [list(r.values()) for r in rows]))
