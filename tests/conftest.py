"""Shared fixtures: real coordinator processes on real sockets over real RocksDB directories in temp dirs."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from groove.cli.processes import start_coordinator
from groove.client import GrooveClient
from groove.protocol.keys import CurveClient
from tests.helpers import RunningCoordinator

pytest_plugins = ["tests.diagnostics"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules holding `slow` tests run first, each kept whole (its module fixtures made once): pytest-xdist
    hands tests out in this order, and a minute-long test handed out last keeps one worker busy after the
    others have finished."""
    slow = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in slow)


@pytest.fixture
def short_tmpdir() -> Iterator[Path]:
    """A temp dir of its own, short, under /tmp: a coordinator's links in it are socket paths, at most 107 bytes,
    and pytest's tmp_path under xdist can be too long for them (then `procs.link_base` would use /tmp)."""
    path = Path(tempfile.mkdtemp(prefix="gt-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def coordinator_factory(tmp_path: Path) -> Iterator[Callable[..., RunningCoordinator]]:
    """Start coordinators: `factory(*serve_args, data_dir=None, model=False, env=None)`; all stopped at teardown.

    Each binds port 0 on loopback (unless its args bind elsewhere) and reports the endpoint it got; a restart
    binds that endpoint again, so clients ride it out."""
    started: list[RunningCoordinator] = []

    def factory(
        *args: str, data_dir: Path | None = None, model: bool = False, env: dict[str, str] | None = None
    ) -> RunningCoordinator:
        directory = data_dir or tmp_path / f"data{len(started)}"
        directory.mkdir(parents=True, exist_ok=True)
        # Loading the embedding model costs seconds and hundreds of MB: only tests about meaning ask for it.
        serve_args = [*args] if model else ["--embedder", "none", *args]
        proc, endpoint = start_coordinator(directory, serve_args, env)
        running = RunningCoordinator(directory, serve_args, proc, endpoint, env=env)
        started.append(running)
        return running

    yield factory
    for running in started:
        for proc in [*running.history, running.proc]:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


@pytest.fixture
def coordinator(coordinator_factory: Callable[..., RunningCoordinator]) -> RunningCoordinator:
    """One coordinator with default settings."""
    return coordinator_factory()


@pytest.fixture
def client_factory() -> Iterator[Callable[..., GrooveClient]]:
    """Clients: `factory(endpoint, **kwargs)`; all closed at teardown."""
    clients: list[GrooveClient] = []

    def factory(
        endpoint: str, timeout: float = 20.0, attempt_timeout: float = 2.0, curve: CurveClient | None = None
    ) -> GrooveClient:
        client = GrooveClient(endpoint, timeout=timeout, attempt_timeout=attempt_timeout, curve=curve)
        clients.append(client)
        return client

    yield factory
    for client in clients:
        client.close()


@pytest.fixture
def client(coordinator: RunningCoordinator, client_factory: Callable[..., GrooveClient]) -> GrooveClient:
    """A client of the default coordinator."""
    return client_factory(coordinator.endpoint)
