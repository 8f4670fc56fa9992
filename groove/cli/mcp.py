"""`groove mcp`: serve groove's tools to a coding agent over the Model Context Protocol (integrations/).

An agent starts it with each session and offers its tools only once it has listed them, so it must start
fast: the entry point (cli/entry.py) runs this verb without loading the others. An agent stops it with SIGINT
(Claude Code sends SIGTERM 100 ms later) or by closing its stdin; either ends the process at once, as every
tool call's write is acknowledged before its answer, and nothing else is held.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from typing import Any

import click

from groove.cli.options import cluster_of, connection_options, connection_settings, curve_of, host_port
from groove.cli.output import fail


def _exit_now(*_: object) -> None:
    """End the process without waiting for the SDK's tasks or worker threads (a tool call in flight is the
    agent's to retry: it is stopping the server)."""
    sys.stdout.flush()
    os._exit(0)


def _host_port(_: click.Context, __: click.Parameter, value: str | None) -> tuple[str, int] | None:
    if value is None:
        return None
    try:
        return host_port(value, "127.0.0.1:8765")
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.command(name="mcp")
@click.option("--http", "http", callback=_host_port, metavar="HOST:PORT",
              help="Serve streamable HTTP here instead of stdio.")  # fmt: skip
@connection_options
@click.pass_context
def mcp_command(ctx: click.Context, http: tuple[str, int] | None) -> None:
    """Serve groove to an MCP client (Claude Code, Codex, Cursor...): over stdio, as the client launches it,
    or over streamable HTTP with --http. Tools: search_learnings, record_learning, record_outcome,
    start_session, end_session and the board's; resource groove://learning/{id}."""
    from groove.integrations.mcp_server import Bridge, build  # the SDK loads only for this verb

    # stdout is the protocol's channel on stdio: everything else goes to stderr
    logging.basicConfig(level=logging.WARNING, format="groove mcp: %(levelname)s %(message)s")
    settings: dict[str, Any] = connection_settings(ctx.obj)
    cluster = cluster_of(settings)  # with a map: the learning tools route by tier, the board's go to the home
    bridge = Bridge(settings["endpoint"], curve_of(settings), timeout=settings["timeout"], cluster=cluster)
    server = build(bridge)
    if http is None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, _exit_now)
    try:
        if http is None:
            server.run()  # returns when the client closes stdin
            _exit_now()
        else:
            server.run("streamable-http", host=http[0], port=http[1])
    except KeyboardInterrupt:
        return
    except OSError as exc:
        fail(f"cannot serve MCP: {exc.strerror or exc}", 2)
    finally:
        bridge.close()
