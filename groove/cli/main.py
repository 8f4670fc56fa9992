"""The `groove` command: `serve` runs a coordinator; the other verbs talk to one."""

from __future__ import annotations

import importlib
from typing import Any

import click

from groove.cli.options import group_connection_options

# Every verb, as MODULE:ATTRIBUTE of its command. `groove VERB` imports that module alone, not every verb's:
# a client verb or a worker starts without the dashboard's, the swarm's or the backups' imports.
VERBS: dict[str, str] = {
    "ping": "groove.cli.commands:ping",
    "learn": "groove.cli.commands:learn",
    "get": "groove.cli.commands:get",
    "list": "groove.cli.commands:list_",
    "outcome": "groove.cli.commands:outcome",
    "delete": "groove.cli.commands:delete",
    "relate": "groove.cli.commands:relate",
    "relations": "groove.cli.commands:relations",
    "stats": "groove.cli.commands:stats",
    "agents": "groove.cli.commands:agents",
    "search": "groove.cli.search:search",
    "reindex": "groove.cli.search:reindex",
    "reembed": "groove.cli.search:reembed",
    "params": "groove.cli.loop:params",
    "inject": "groove.cli.loop:inject",
    "session": "groove.cli.loop:session",
    "sessions": "groove.cli.loop:sessions",
    "history": "groove.cli.loop:history",
    "session-end": "groove.cli.loop:session_end",
    "maintain": "groove.cli.loop:maintain",
    "promote": "groove.cli.curation:promote",
    "propose": "groove.cli.curation:propose",
    "reviews": "groove.cli.curation:reviews",
    "review": "groove.cli.curation:review",
    "archive": "groove.cli.curation:archive",
    "backup": "groove.cli.backup:backup",
    "restore": "groove.cli.backup:restore",
    "export": "groove.cli.backup:export_command",
    "import": "groove.cli.backup:import_command",
    "memory": "groove.cli.records:memory_group",  # cli.board's group, with the subcommands cli.records adds to it
    "tasks": "groove.cli.board:tasks_group",
    "nudge": "groove.cli.board:nudge",
    "decisions": "groove.cli.board:decisions",
    "board": "groove.cli.board:board",
    "reverse-decision": "groove.cli.records:reverse_decision",
    "serve": "groove.cli.serve:serve_command",
    "agent": "groove.cli.agent:agent_command",
    "keys": "groove.cli.keys:keys_group",
    "swarm": "groove.cli.swarm:swarm_command",
    "mcp": "groove.cli.mcp:mcp_command",
    "hook": "groove.cli.hook:hook_command",
    "hooks": "groove.cli.hooks:hooks_group",
    "cluster": "groove.cli.cluster:cluster_group",
    "ui": "groove.cli.ui:ui_command",
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
