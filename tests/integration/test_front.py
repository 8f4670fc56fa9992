"""The front process that owns the public socket: it dies with its coordinator, and a coordinator whose front
died starts it again on the same endpoint (under load: tests/integration/test_processes.py)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import psutil

from groove.client import GrooveClient
from tests.helpers import RunningCoordinator, learning


def front_of(coordinator: RunningCoordinator) -> psutil.Process:
    """The coordinator's one child process: its front, forked at the start (named for it), started afresh after."""
    (front,) = psutil.Process(coordinator.proc.pid).children()
    assert front.name() == "groove-front" or "groove.coordinator.net.front" in " ".join(front.cmdline())
    return front


def link_dir(coordinator: RunningCoordinator) -> Path:
    """The private directory of the links to a coordinator's children: named for its pid, in its temp dir."""
    base = Path((coordinator.env or {}).get("TMPDIR", tempfile.gettempdir()))
    (found,) = base.glob(f"groove-link-{coordinator.proc.pid}-*")
    return found


def test_the_front_dies_with_a_killed_coordinator_and_a_restart_gets_the_port_and_sweeps_the_link(
    coordinator_factory: Callable[..., RunningCoordinator], short_tmpdir: Path
) -> None:
    running = coordinator_factory(env={"TMPDIR": str(short_tmpdir)})
    with GrooveClient(running.endpoint, timeout=30) as client:
        (lid,) = client.put_learnings([learning()]).ids
    front = front_of(running)
    assert front.name() == "groove-front"  # forked from the coordinator, its modules imported already
    link = link_dir(running)
    running.kill()
    gone, _ = psutil.wait_procs([front], timeout=5)
    assert gone, "the front outlived its coordinator"
    assert link.exists()  # nobody could remove it...
    running.restart()  # the same endpoint: it must be free
    assert not link.exists()  # ...until the next start swept it
    with GrooveClient(running.endpoint, timeout=30) as client:
        assert client.get(lid).id == lid
        assert client.stats().last_stop == "crash"


def test_a_front_that_died_is_started_again_on_the_port_it_had_and_the_coordinator_still_stops_cleanly(
    coordinator_factory: Callable[..., RunningCoordinator],
) -> None:
    running = coordinator_factory()  # port 0: the new front must bind the port the first one got, not another
    with GrooveClient(running.endpoint, timeout=30) as client:
        (lid,) = client.put_learnings([learning()]).ids
        front = front_of(running)
        link = link_dir(running)
        front.kill()
        assert client.get(lid).id == lid  # through the new front, on the same endpoint
        (again,) = [p for p in client.stats().processes if p.name == "front"]
    assert (again.restarts, again.last_exit, again.alive) == (1, -9, True)
    new = front_of(running)
    assert new.pid == again.pid != front.pid
    # started afresh (the coordinator has threads now), on a fresh link endpoint in the same private directory
    assert Path(next(arg for arg in new.cmdline() if arg.startswith("ipc://")).removeprefix("ipc://")).parent == link
    assert "front exited (status -9)" in running.log()
    assert running.stop() == 0
    assert not link.exists()
    running.restart()
    with GrooveClient(running.endpoint, timeout=30) as client:
        assert client.stats().last_stop == "clean"


def test_a_stopped_coordinator_leaves_no_front_and_no_link_directory(
    coordinator_factory: Callable[..., RunningCoordinator],
) -> None:
    running = coordinator_factory()
    front = front_of(running)
    link = link_dir(running)
    assert running.stop() == 0
    gone, _ = psutil.wait_procs([front], timeout=10)
    assert gone, "the front outlived a stopped coordinator"
    assert not link.exists()
