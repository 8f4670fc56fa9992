"""`groove ui`: the web dashboard over a coordinator, with Prometheus `/metrics`, until Ctrl-C."""

from __future__ import annotations

import re
import secrets
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import click

from groove.cli.options import DEFAULT_ENDPOINT, cluster_of, connection_options, curve_of, host_port
from groove.cli.output import fail
from groove.swarm.coding import groove_argv

DEFAULT_BIND = "127.0.0.1:5580"
PAGE_WAIT_S = 3.0  # a person waits this long for a page at most: then it says the coordinator is not answering
_START_S = 30.0
_PRINTED = re.compile(r"groove ui: (http://\S+)")


def parse_bind(value: str) -> tuple[str, int]:
    """`HOST:PORT` (port 0: any free one) as (host, port); ValueError if it is not one."""
    return host_port(value, DEFAULT_BIND, any_port=True)


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port); exits with one line if the address is taken or not ours."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        fail(f"cannot listen on {host}:{port}: {exc.strerror} (another `groove ui`? give --bind HOST:PORT)", 2)
    sock.listen(128)
    return sock


def url_of(sock: socket.socket, token: str) -> str:
    """The login URL of the dashboard listening on `sock`."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/login?token={token}"


@click.command(name="ui")
@click.option(
    "--bind",
    default=DEFAULT_BIND,
    show_default=True,
    envvar="GROOVE_UI_BIND",
    help="HOST:PORT to serve on (port 0: any free one) [env GROOVE_UI_BIND].",
)
@click.option(
    "--token",
    envvar="GROOVE_UI_TOKEN",
    help="The login token for actions (default: a new random one, printed with the URL) [env GROOVE_UI_TOKEN].",
)
@click.option("--as", "actor", default="dashboard", show_default=True, help="Who the dashboard's actions are made as.")
@connection_options
@click.pass_context
def ui_command(ctx: click.Context, /, bind: str, token: str | None, actor: str, **_: Any) -> None:
    """Serve the dashboard: overview, learnings, sessions, boards (live), curator actions and /metrics.

    Prints the URL with the login token; without it the pages are read-only. With --cluster, it reads the
    home coordinator. A page waits at most 3 s for the coordinator (less with a lower --timeout), then says it
    is not answering."""
    try:
        host, port = parse_bind(bind)
    except ValueError as exc:
        fail(f"--bind: {exc}", 2)
    token = token or None  # an empty GROOVE_UI_TOKEN (compose passes one when it is unset) asks for a random one
    if token is not None and len(token) < 16:
        fail("--token: give at least 16 characters (or leave it out for a random one)", 2)
    # imported here: the web stack is only loaded by the verb that serves it
    import uvicorn

    from groove.ui.app import build
    from groove.ui.source import Source

    cluster, curve = cluster_of(ctx.obj), curve_of(ctx.obj)
    endpoint = ctx.obj.get("endpoint") or DEFAULT_ENDPOINT
    if cluster is not None:
        endpoint = cluster.coordinators[cluster.home]
    token = token or secrets.token_urlsafe(24)
    sock = listen(host, port)
    app = build(Source(endpoint, curve=curve, timeout=min(PAGE_WAIT_S, ctx.obj["timeout"])), token, actor=actor)
    click.echo(f"groove ui: {url_of(sock, token)} (coordinator {endpoint}; Ctrl-C stops it)")
    # open pages hold their event streams forever: on Ctrl-C they get a second to go, then are cut
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    server.run(sockets=[sock])


def spawn_dashboard(endpoint: str, log: Path, bind: str = DEFAULT_BIND) -> tuple[subprocess.Popen[bytes], str] | None:
    """`groove ui` in the background over `endpoint` (on any free port if `bind`'s is taken), its output in
    `log`: (the process, its login URL), or None if it did not start (the reason is in `log`)."""
    for where in (bind, bind.rpartition(":")[0] + ":0"):
        with log.open("ab") as out:
            proc = subprocess.Popen(
                groove_argv("--endpoint", endpoint, "ui", "--bind", where), stdout=out, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + _START_S
        while time.monotonic() < deadline and proc.poll() is None:
            found = _PRINTED.findall(log.read_text(errors="replace"))
            if found:
                return proc, found[-1]
            time.sleep(0.1)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return None
