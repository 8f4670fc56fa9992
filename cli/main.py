"""The `groove` command: `serve` runs a coordinator; the other verbs talk to one."""

from __future__ import annotations

from typing import Any

import click

from cli.agent import agent_command
from cli.backup import backup_commands
from cli.board import board_commands
from cli.cluster import cluster_group
from cli.commands import client_commands
from cli.curation import curation_commands
from cli.hook import hook_command
from cli.hooks import hooks_group
from cli.keys import keys_group
from cli.loop import loop_commands
from cli.mcp import mcp_command
from cli.memory import memory_commands
from cli.options import group_connection_options
from cli.records import record_commands
from cli.serve import serve_command
from cli.swarm import swarm_command
from cli.ui import ui_command


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@group_connection_options
@click.pass_context
def cli(ctx: click.Context, /, **connection: Any) -> None:
    """groove: shared learning memory for swarms of AI coding agents.

    The connection options may also be given after the verb (`groove ping --endpoint tcp://host:5555`)."""
    ctx.obj = connection


for command in [
    *client_commands,
    *memory_commands,
    *loop_commands,
    *curation_commands,
    *backup_commands,
    *board_commands,
    *record_commands,
]:
    cli.add_command(command)
cli.add_command(serve_command)
cli.add_command(agent_command)
cli.add_command(keys_group)
cli.add_command(swarm_command)
cli.add_command(mcp_command)
cli.add_command(hook_command)
cli.add_command(hooks_group)
cli.add_command(cluster_group)
cli.add_command(ui_command)
