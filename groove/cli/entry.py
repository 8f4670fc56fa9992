"""The `groove` console script: runs a verb and turns every failure into one line on stderr.

Every verb loads only its own module (the table in `cli/main.py`). `groove hook ...`, `groove mcp ...` and
`groove serve ...` are run without even the group of verbs: an agent runs the hook before every session and
after every tool call, and waits for the MCP server's tools; and `serve` keeps the cyclic collector off until
the coordinator has frozen what its start-up made.
"""

from __future__ import annotations

import gc
import os
import sys
from typing import NoReturn

import click

from groove.cli.output import fail


def run(command: click.Command, args: list[str], prog_name: str, *, collect: bool = True) -> NoReturn:
    """Run `command` as a program. A usage error is one line naming the help to read, like every other
    error (click's own form is four lines: usage, hint, blank, error). `collect=False` leaves the cyclic
    collector off (see `main`): the command turns it on itself."""
    if collect:
        gc.enable()
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
    # Starting up makes some 50,000 objects that live as long as the process (modules, classes, pydantic's
    # schemas): the cyclic collector's passes over them meanwhile free nothing, and took about a tenth of a
    # start. It is on again before a verb runs, and for `serve` once start-up has frozen them (Coordinator.start).
    gc.disable()
    # groove's processes use no pydantic plugins, and looking for them scans every installed distribution's
    # entry points at the first model built. PYDANTIC_DISABLE_PLUGINS set (empty: look) is left as it is.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    args = sys.argv[1:]
    if args[:1] == ["hook"]:
        from groove.cli.hook import hook_command

        run(hook_command, args[1:], "groove hook")
    if args[:1] == ["serve"]:  # a coordinator (re)starting: the client verbs' imports would only delay it
        from groove.cli.serve import serve_command

        run(serve_command, args[1:], "groove serve", collect=False)
    if args[:1] == ["mcp"]:  # an agent waits for its tools: the other verbs' imports would delay them
        from groove.cli.mcp import mcp_command

        run(mcp_command, args[1:], "groove mcp")
    from groove.cli.main import cli

    run(cli, args, "groove")
