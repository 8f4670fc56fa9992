"""The `groove` command: `serve` runs a coordinator; the other verbs talk to one."""

from __future__ import annotations

import importlib
from typing import Any

import click

from cli.options import group_connection_options

# Every verb, as MODULE:ATTRIBUTE of its command. `groove VERB` imports that module alone, not every verb's:
# a client verb or a worker starts without the dashboard's, the swarm's or the backups' imports.
VERBS: dict[str, str] = {
    "ping": "cli.commands:ping",
    "learn": "cli.commands:learn",
    "get": "cli.commands:get",
    "list": "cli.commands:list_",
    "outcome": "cli.commands:outcome",
    "delete": "cli.commands:delete",
    "relate": "cli.commands:relate",
    "relations": "cli.commands:relations",
    "stats": "cli.commands:stats",
    "agents": "cli.commands:agents",
    "search": "cli.memory:search",
    "reindex": "cli.memory:reindex",
    "reembed": "cli.memory:reembed",
    "params": "cli.loop:params",
    "inject": "cli.loop:inject",
    "session": "cli.loop:session",
    "sessions": "cli.loop:sessions",
    "history": "cli.loop:history",
    "session-end": "cli.loop:session_end",
    "maintain": "cli.loop:maintain",
    "promote": "cli.curation:promote",
    "propose": "cli.curation:propose",
    "reviews": "cli.curation:reviews",
    "review": "cli.curation:review",
    "archive": "cli.curation:archive",
    "backup": "cli.backup:backup",
    "restore": "cli.backup:restore",
    "export": "cli.backup:export_command",
    "import": "cli.backup:import_command",
    "memory": "cli.records:memory_group",  # cli.board's group, with the subcommands cli.records adds to it
    "tasks": "cli.board:tasks_group",
    "nudge": "cli.board:nudge",
    "decisions": "cli.board:decisions",
    "board": "cli.board:board",
    "reverse-decision": "cli.records:reverse_decision",
    "serve": "cli.serve:serve_command",
    "agent": "cli.agent:agent_command",
    "keys": "cli.keys:keys_group",
    "swarm": "cli.swarm:swarm_command",
    "mcp": "cli.mcp:mcp_command",
    "hook": "cli.hook:hook_command",
    "hooks": "cli.hooks:hooks_group",
    "cluster": "cli.cluster:cluster_group",
    "ui": "cli.ui:ui_command",
}


class Verbs(click.Group):
    """The verbs, each loaded when it is asked for (help loads them all)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(VERBS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = VERBS.get(cmd_name)
        if where is None:
            return None
        module, _, attribute = where.partition(":")
        command: click.Command = getattr(importlib.import_module(module), attribute)
        return command


@click.group(cls=Verbs, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@group_connection_options
@click.pass_context
def cli(ctx: click.Context, /, **connection: Any) -> None:
    """groove: shared learning memory for swarms of AI coding agents.

    The connection options may also be given after the verb (`groove ping --endpoint tcp://host:5555`)."""
    ctx.obj = connection
