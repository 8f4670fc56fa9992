"""The `groove` command: `serve` runs a coordinator; the other verbs talk to one."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import click

from cli.commands import client_commands
from cli.output import fail
from cli.swarm import agent_command, swarm_command

DEFAULT_ENDPOINT = "tcp://127.0.0.1:5555"


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.option(
    "--endpoint",
    envvar="GROOVE_ENDPOINT",
    default=DEFAULT_ENDPOINT,
    show_default=True,
    help="Coordinator endpoint the client verbs talk to [env GROOVE_ENDPOINT].",
)
@click.option(
    "--timeout",
    envvar="GROOVE_TIMEOUT",
    type=click.FloatRange(0.1, 3600),
    default=10.0,
    show_default=True,
    help="Seconds a client verb waits for its reply, across retries [env GROOVE_TIMEOUT].",
)
@click.pass_context
def cli(ctx: click.Context, endpoint: str, timeout: float) -> None:
    """groove: shared learning memory for swarms of AI coding agents."""
    ctx.obj = {"endpoint": endpoint, "timeout": timeout}


@cli.command()
@click.option(
    "--config",
    "config_file",
    envvar="GROOVE_CONFIG",
    type=click.Path(path_type=Path),
    help="TOML file with any of the settings below [env GROOVE_CONFIG].",
)
@click.option(
    "--data-dir",
    envvar="GROOVE_DATA_DIR",
    type=click.Path(path_type=Path),
    help="Directory holding every tier [env GROOVE_DATA_DIR; default ~/.local/share/groove].",
)
@click.option(
    "--bind", envvar="GROOVE_BIND", help="ZeroMQ endpoint to listen on [env GROOVE_BIND; default tcp://127.0.0.1:5555]."
)
@click.option(
    "--max-batch",
    envvar="GROOVE_MAX_BATCH",
    type=int,
    help="Most writes per group commit; 1 turns batching off [env GROOVE_MAX_BATCH; default 256].",
)
@click.option(
    "--max-wait-ms",
    envvar="GROOVE_MAX_WAIT_MS",
    type=float,
    help="How long a batch waits to fill up [env GROOVE_MAX_WAIT_MS; default 1].",
)
@click.option(
    "--queue-size",
    envvar="GROOVE_QUEUE_SIZE",
    type=int,
    help="Writes queued before new ones get `busy` [env GROOVE_QUEUE_SIZE; default 20000].",
)
@click.option("--readers", envvar="GROOVE_READERS", type=int, help="Reader threads [env GROOVE_READERS; default 4].")
@click.option(
    "--log-level",
    envvar="GROOVE_LOG_LEVEL",
    type=click.Choice(["debug", "info", "warning", "error"]),
    help="Log verbosity [env GROOVE_LOG_LEVEL; default info].",
)
@click.option(
    "--endpoint-file",
    type=click.Path(path_type=Path),
    help="Write the bound endpoint here once serving (useful with port 0).",
)
def serve(config_file: Path | None, endpoint_file: Path | None, **options: Any) -> None:
    """Run the coordinator until SIGINT/SIGTERM, then commit and acknowledge every queued write."""
    from coordinator.config import build
    from coordinator.errors import CoordinatorError
    from coordinator.server import Coordinator

    try:
        settings = build(options, config_file)
    except CoordinatorError as exc:
        fail(str(exc), 2)
    logging.basicConfig(
        level=settings.log_level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    coordinator = Coordinator(settings)
    try:
        coordinator.start()
    except CoordinatorError as exc:
        message = str(exc)
        if "lock" in message.lower():
            message += " (is another coordinator already using this data directory?)"
        fail(message, 2)
    except Exception as exc:  # a bind failure from ZeroMQ: say which endpoint
        fail(f"cannot listen on {settings.bind}: {exc}", 2)
    coordinator.install_signal_handlers()
    if endpoint_file is not None:
        tmp = endpoint_file.with_suffix(".tmp")
        tmp.write_text(coordinator.endpoint + "\n")
        tmp.replace(endpoint_file)
    coordinator.serve()


for command in client_commands:
    cli.add_command(command)
cli.add_command(agent_command)
cli.add_command(swarm_command)


def main() -> None:
    """Console-script entry point."""
    cli()
