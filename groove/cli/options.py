"""Options many verbs share: how to reach the coordinator, `--json`, and project roots.

The connection options are declared once and given twice: on the `groove` group, with their environment
variables and defaults, and on every verb that talks to a coordinator, where a value overrides the group's
(`groove ping --endpoint X` is how users type it).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from groove.cli.output import fail
from groove.protocol import constants as C
from groove.protocol.keys import CurveClient, KeyFileError
from groove.protocol.scopes import ScopeError, is_absolute_root, normalise_root, validate_scope, validate_tier

if TYPE_CHECKING:
    from groove.protocol.cluster import ClusterMap

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_ENDPOINT = "tcp://127.0.0.1:5555"

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")


@dataclass(frozen=True)
class _Connection:
    flag: str
    name: str
    help: str
    group_only: dict[str, Any] = field(default_factory=dict)  # the default and how it is shown
    kind: Any = None  # the click type, checked wherever the option is given

    @property
    def envvar(self) -> str:
        return "GROOVE_" + self.flag.removeprefix("--").replace("-", "_").upper()


_CONNECTION = (
    _Connection(
        "--endpoint",
        "endpoint",
        "Coordinator endpoint the client verbs talk to",
        {"default": DEFAULT_ENDPOINT, "show_default": True},
    ),
    _Connection(
        "--timeout",
        "timeout",
        "Seconds a client verb waits for its reply, across retries",
        {"default": 10.0, "show_default": True},
        click.FloatRange(0.1, 3600),
    ),
    _Connection(
        "--server-key",
        "server_key",
        "The coordinator's public key (its server.key file, or the 40 characters) when it runs with --curve",
    ),
    _Connection(
        "--key",
        "client_key",
        "This client's secret key file (NAME.key_secret from `groove keys generate`)",
        kind=click.Path(path_type=Path),
    ),
    _Connection(
        "--cluster",
        "cluster",
        "Cluster map (TOML) of coordinators that partition the tiers: learn, get, search and list go to the "
        "owners of their tiers, every other verb to the home coordinator (instead of --endpoint)",
        kind=click.Path(path_type=Path),
    ),
)


def group_connection_options(func: F) -> F:
    """The connection options of the `groove` group: environment variables, defaults."""
    for option in reversed(_CONNECTION):
        func = click.option(
            option.flag,
            option.name,
            envvar=option.envvar,
            type=option.kind,
            help=f"{option.help} [env {option.envvar}].",
            **option.group_only,
        )(func)
    return func


def _override(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    if value is not None:
        assert param.name is not None
        ctx.ensure_object(dict)[param.name] = value
    return value


def connection_options(func: F) -> F:
    """The connection options again on a verb: given after the verb, they override the group's."""
    for option in reversed(_CONNECTION):
        func = click.option(
            option.flag,
            option.name,
            type=option.kind,
            expose_value=False,
            callback=_override,
            help=f"{option.help} (also accepted before the verb) [env {option.envvar}].",
        )(func)
    return func


def connection_settings(obj: dict[str, Any] | None) -> dict[str, Any]:
    """Every connection setting of a verb: what was given (before or after the verb), else the environment
    variable, else the default. Under the `groove` group the group's options have filled them already; this
    is for a verb the entry point runs on its own (`groove hook`, which must start fast)."""
    settings = dict(obj or {})
    for option in _CONNECTION:
        if settings.get(option.name) is not None:
            continue
        raw = os.environ.get(option.envvar)
        if raw is None:
            settings[option.name] = option.group_only.get("default")
            continue
        try:
            settings[option.name] = option.kind.convert(raw, None, None) if option.kind is not None else raw
        except click.BadParameter as exc:
            fail(f"{option.envvar}: {exc.format_message()}", 2)
    return settings


def curve_of(obj: dict[str, Any]) -> CurveClient | None:
    """The CURVE keys the connection options name, or None; exits with a one-line error if they are unusable."""
    server_key, client_key = obj.get("server_key"), obj.get("client_key")
    if server_key is None and client_key is None:
        return None
    if server_key is None or client_key is None:
        fail("CURVE needs both --server-key and --key (or GROOVE_SERVER_KEY and GROOVE_KEY)", 2)
    try:
        return CurveClient.load(server_key, client_key)
    except KeyFileError as exc:
        fail(str(exc), 2)


def host_port(value: str, example: str, any_port: bool = False) -> tuple[str, int]:
    """`HOST:PORT` (an IPv6 host in brackets) as (host, port); ValueError naming `example` if it is not one.
    `any_port`: port 0 is allowed (the system picks a free one)."""
    host, sep, port = value.rpartition(":")
    least = 0 if any_port else 1
    if not sep or not host or not port.isdigit() or not least <= int(port) <= 65535:
        raise ValueError(f"{value!r} is not HOST:PORT (e.g. {example})")
    return host.strip("[]"), int(port)


def checked_by(check: Callable[[str], object]) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """A click callback: the value as given if `check` accepts it (or it is None), else a usage error saying
    what `check`'s ValueError said."""

    def callback(_ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        if value is not None:
            try:
                check(value)
            except ValueError as exc:
                raise click.BadParameter(str(exc)) from None
        return value

    return callback


def cluster_of(obj: dict[str, Any]) -> ClusterMap | None:
    """The cluster map --cluster names, or None; exits with a one-line error if it cannot be used."""
    path = obj.get("cluster")
    if path is None:
        return None
    # here, not at the top: the map is a pydantic model, and `groove hook` must start without pydantic
    from groove.protocol.cluster import ClusterMap, ClusterMapError

    try:
        return ClusterMap.load(Path(path))
    except ClusterMapError as exc:
        fail(str(exc), 2)


def absolute_root(root: str) -> str:
    """A project root as typed, made absolute against the current directory (`.` is the repository you are
    in); the coordinator normalises it further and refuses relative ones from clients that send them."""
    if not root or is_absolute_root(root):
        return root
    return os.path.abspath(root)


def _checked(value: str, check: Callable[[str], str]) -> str:
    prefix = C.SCOPE_PROJECT_PREFIX  # a project scope and a project tier are spelled alike
    if value.startswith(prefix):
        value = prefix + absolute_root(value[len(prefix) :])
    try:
        return check(value)
    except ScopeError as exc:
        raise click.BadParameter(str(exc)) from None


def scope_option(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """Click callback for `--scope`: checked here (a usage error, before connecting), a relative project root
    made absolute."""
    return None if value is None else _checked(value, validate_scope)


def tier_option(_ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
    """Click callback for `--tier` (one or repeated): checked here, a relative project root made absolute."""
    if value is None:
        return None
    if isinstance(value, tuple):
        return tuple(_checked(v, validate_tier) for v in value)
    return _checked(value, validate_tier)


def project_root(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """Click callback for a `--project ROOT` option: a relative root made absolute, then checked."""
    if value is None:
        return None
    if not value.strip():
        raise click.BadParameter("give the repository's root directory, e.g. --project /home/alex/repo or --project .")
    return _checked(absolute_root(value), lambda root: normalise_root(root, "--project"))
