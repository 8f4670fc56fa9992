"""The `groove` console script: runs a verb and turns every failure into one line on stderr.

`groove hook ...` is run without importing the other verbs: an agent runs it before every session, and
loading the whole CLI (the client's pydantic models, the coordinator's settings) would take most of its
300 ms budget on a small machine.
"""

from __future__ import annotations

import sys
from typing import NoReturn

import click

from cli.output import fail


def run(command: click.Command, args: list[str], prog_name: str) -> NoReturn:
    """Run `command` as a program. A usage error is one line naming the help to read, like every other
    error (click's own form is four lines: usage, hint, blank, error)."""
    try:
        status = command.main(args=args, prog_name=prog_name, standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:  # `groove` or `groove keys` alone: the help is the answer
        click.echo(exc.format_message(), err=True)
        sys.exit(exc.exit_code)
    except click.UsageError as exc:
        where = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
        fail(exc.format_message() + where, exc.exit_code)
    except click.ClickException as exc:
        fail(exc.format_message(), exc.exit_code)
    except click.Abort:
        fail("aborted", 130)
    sys.exit(status if isinstance(status, int) else 0)


def main() -> None:
    """Console-script entry point."""
    args = sys.argv[1:]
    if args[:1] == ["hook"]:
        from cli.hook import hook_command

        run(hook_command, args[1:], "groove hook")
    from cli.main import cli

    run(cli, args, "groove")
