"""`groove hook EVENT`: answer a coding agent's session hook (integrations/hook.py says what each event does).

The entry point (cli/entry.py) runs this verb without loading the others: it runs before every agent
session, and the other verbs' imports (pydantic models, the client) would cost more than the hook's budget.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import click

from groove.cli.options import cluster_of, connection_options, connection_settings, curve_of
from groove.cli.output import fail
from groove.integrations.hook import (
    EVENTS,
    Hook,
    HookError,
    HookInput,
    Link,
    Refused,
    Sessions,
    Unreachable,
    Wire,
    default_state_dir,
)
from groove.protocol.endpoints import EndpointError

HOOK_TIMEOUT_S = 3.0  # what installed commands wait for the coordinator, unless told otherwise

state_dir_option = click.option(
    "--state-dir",
    envvar="GROOVE_STATE_DIR",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where groove remembers each agent session's injection and what it installed; never inside a "
    "repository [env GROOVE_STATE_DIR; default $XDG_STATE_HOME/groove or ~/.local/state/groove].",
)


@click.command(name="hook")
@click.argument("event", type=click.Choice(EVENTS))
@state_dir_option
@connection_options
@click.pass_context
def hook_command(ctx: click.Context, event: str, state_dir: Path | None) -> None:
    """Answer a Claude Code or Codex hook: reads the event's JSON on stdin. SessionStart gives the session its
    project's learnings as additional context; UserPromptSubmit adds matches for the prompt; Stop marks the
    session active; SessionEnd closes its injection (unknown outcome); PostToolUse hands the agent named by
    GROOVE_AGENT_ID its nudges. An unreachable coordinator: no output, exit 0. `groove hooks install` writes
    these commands into the agent's settings."""
    settings: dict[str, Any] = connection_settings(ctx.obj)
    link: Link
    cluster = cluster_of(settings)
    if cluster is not None:
        from groove.integrations.hookcluster import ClusterLink  # the client and pydantic: only with a cluster map

        link = ClusterLink(cluster, curve_of(settings), settings["timeout"])
    else:
        try:
            link = Wire(settings["endpoint"], curve_of(settings), settings["timeout"])
        except EndpointError as exc:
            fail(str(exc), 2)
    try:
        given = HookInput.read(sys.stdin.buffer.read())
        hook = Hook(link, Sessions(state_dir or default_state_dir()), now=time.time(), env=os.environ)
        said = hook.handle(event, given)
    except Unreachable:
        return  # never block or break the user's session: the learnings sit this one out
    except (HookError, Refused) as exc:
        fail(f"groove hook {event}: {exc}", 1)
    except OSError as exc:  # the state directory cannot be written
        fail(f"groove hook {event}: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), 1)
    finally:
        link.close()
    if said is not None:
        click.echo(said)
