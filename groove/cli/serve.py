"""`groove serve`: run a coordinator. Kept apart from the other verbs so that starting one (a restart after a
crash, each of the tests' coordinators) loads only what the coordinator needs, not every verb's client code.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import zmq

from groove.cli.output import fail
from groove.coordinator.net.config import (
    DURABILITIES,
    EMBED_DEVICES,
    EMBEDDERS,
    ENV_PREFIX,
    LOG_LEVELS,
    Settings,
    build,
)

F = TypeVar("F", bound=Callable[..., Any])


def setting(name: str, help_text: str, negatable: bool = False, **kwargs: Any) -> Callable[[F], F]:
    """A `serve` option for the Settings field `name`: env GROOVE_<NAME>, default shown from Settings; a
    `negatable` flag also has its --no- form (for a setting on by default)."""
    field = Settings.model_fields[name]
    default = field.default_factory() if field.default_factory is not None else field.default  # type: ignore[call-arg]
    env = ENV_PREFIX + name.upper()
    flag = "--" + name.replace("_", "-")
    flag += f"/--no-{flag[2:]}" if negatable else ""
    return click.option(flag, name, envvar=env, help=f"{help_text} [env {env}; default {default}].", **kwargs)


@click.command(name="serve")
@click.option(
    "--config",
    "config_file",
    envvar="GROOVE_CONFIG",
    type=click.Path(path_type=Path),
    help="TOML file with any of the settings below (same names, underscores) [env GROOVE_CONFIG].",
)
@setting("data_dir", "Directory holding every tier", type=click.Path(path_type=Path))
@setting("bind", "ZeroMQ endpoint to listen on (port 0 picks one)")
@setting("max_batch", "Most writes per group commit; 1 turns batching off", type=int)
@setting("max_wait_ms", "How long a batch waits for more writes once it has one", type=float)
@setting("queue_size", "Writes queued before new ones are answered `busy`", type=int)
@setting("readers", "Reader threads", type=int)
@setting(
    "commit_threads",
    "1: the writer runs each tier's transaction; 2: a thread runs it while the writer prepares the next tier's",
    type=int,
)
@setting(
    "writers",
    "Writer threads; each commits the tiers it is given, and a write that may touch several waits for all of them",
    type=int,
)
@setting(
    "front_checks",
    "The front process decodes and validates write requests and builds the rows of plain puts, so the coordinator "
    "only routes them and the writer only commits them",
    negatable=True,
    default=None,
)
@setting(
    "reply_cache",
    "Recent write replies kept in memory for retries (about 450 B each); none = from --memory-mb",
    type=int,
)
@setting("peer_hwm", "ZeroMQ high-water mark per peer", type=int)
@setting("log_level", "Log verbosity", type=click.Choice(LOG_LEVELS))
@setting("embedder", "Embedding model for semantic search; none = keywords only", type=click.Choice(EMBEDDERS))
@setting(
    "embed_device",
    "Where the backlog of learnings is embedded: auto = a CUDA GPU when torch (groove[gpu]) sees one (fp16), "
    "else the CPU; "
    "queries are embedded on the CPU",
    type=click.Choice(EMBED_DEVICES),
)
@setting(
    "embed_workers",
    "Embedding processes on the CPU; 0 = one per 4 cores (with GPUs: one per GPU, whatever this says)",
    type=int,
)
@setting("embed_threads", "ONNX Runtime threads per CPU embedding process; 0 = 4, or every core if fewer", type=int)
@setting("exact_limit", "Vectors per tier searched exactly; past this an HNSW index answers", type=int)
@setting("maintain_every_s", "Seconds between lifecycle runs (decay, archive, purge); 0 turns them off", type=float)
@setting(
    "checkpoint_every_s",
    "Seconds between checkpoints of the derived indexes while few learnings change (a restart after a crash reads "
    "again only what came after the last); 0 = only at a clean stop",
    type=float,
)
@setting(
    "durability",
    "process: acked writes survive a coordinator crash; fsync: also an OS crash (WAL synced before each ack)",
    type=click.Choice(DURABILITIES),
)
@setting(
    "row_cache",
    "Learning rows kept in memory for search (about 1 KB each); 0 turns it off; none = from --memory-mb",
    type=int,
)
@setting(
    "memory_mb",
    "The coordinator's memory budget, MB: the caches are sized to it, and idle tiers are released past its share",
    type=int,
)
@setting("tier_idle_s", "A tier unused this long releases its RocksDB (opened again at its next use)", type=float)
@setting("curve", "Encrypt and authenticate every connection with CurveZMQ", is_flag=True, default=None)
@setting(
    "authorized_keys",
    "With --curve: directory of the client public keys (*.key) admitted, each naming its role",
    type=click.Path(path_type=Path),
)
@setting(
    "curve_key",
    "With --curve: the server's secret key file, made if missing (default DATA_DIR/server.key_secret)",
    type=click.Path(path_type=Path),
)
@setting(
    "insecure", "Allow a non-loopback --bind without CURVE (anyone who reaches it is admin)", is_flag=True, default=None
)
@setting(
    "cluster",
    "Cluster map (TOML): this coordinator writes only the tiers the map gives it, refusing the others",
    type=click.Path(path_type=Path),
)
@setting("cluster_name", "With --cluster: this coordinator's name in the map")
@click.option(
    "--endpoint-file",
    type=click.Path(path_type=Path),
    help="Write the bound endpoint here once serving (useful with port 0).",
)
def serve_command(config_file: Path | None, endpoint_file: Path | None, **options: Any) -> None:
    """Run the coordinator until SIGINT/SIGTERM, then commit and acknowledge every queued write."""
    from groove.coordinator.errors import CoordinatorError
    from groove.coordinator.net.link import FrontLink

    try:
        settings = build(options, config_file)
    except CoordinatorError as exc:
        fail(str(exc), 2)
    logging.basicConfig(
        level=settings.log_level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # The coordinator's modules first: they include every one the front needs, so the front is forked with them
    # (0.02 CPU-s) instead of starting afresh and importing them (0.43 CPU-s); it binds only once the coordinator
    # holds its data dir (`Coordinator.start`).
    from groove.coordinator.net.server import Coordinator

    link = FrontLink(zmq.Context())
    try:
        link.launch(settings)
    except CoordinatorError as exc:  # no directory for its ipc endpoints
        fail(str(exc), 2)
    try:
        coordinator = Coordinator(settings, link)
    except BaseException:
        link.stop()  # nothing left behind: no front process, no link directory
        raise
    try:
        coordinator.start()
    except CoordinatorError as exc:
        fail(str(exc), 2)
    except zmq.ZMQError as exc:
        fail(f"cannot listen on {settings.bind}: {exc}", 2)
    coordinator.install_signal_handlers()
    if endpoint_file is not None:
        tmp = endpoint_file.with_suffix(".tmp")
        tmp.write_text(coordinator.endpoint + "\n")
        tmp.replace(endpoint_file)
    coordinator.serve()
    if coordinator.failure is not None:  # a supervisor restarts what exits non-zero
        fail(coordinator.failure, 1)
