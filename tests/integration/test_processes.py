"""The processes a coordinator runs beside itself, killed under load: an embedding worker and the front are
started again, `stats` says so, and nothing written is lost, doubled or left without its vector. The coordinator
itself never loads the model (ONNX Runtime or torch)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from groove.client import GrooveClient
from groove.client.errors import GrooveError
from groove.protocol.stats import ProcessStats
from tests.helpers import RunningCoordinator, learning, wait_for


def _process(client: GrooveClient, name: str) -> ProcessStats:
    return next(p for p in client.stats().processes if p.name == name)


def _loaded(client: GrooveClient, restarts: int = 0) -> ProcessStats | None:
    """embed-0 once it has been restarted `restarts` times and has loaded the model since; None before."""
    worker = _process(client, "embed-0")
    return worker if worker.alive and worker.device and worker.restarts >= restarts else None


def _writing(
    client: GrooveClient, stop: threading.Event, acked: list[str], prefix: str, most: int = 100_000
) -> threading.Thread:
    """A thread putting learnings 8 at a time until stopped (or `most` are acked), keeping the acked ids (a write
    that times out is resent by the client under the same id, so it is acked once or not at all)."""

    def run() -> None:
        n = 0
        while not stop.is_set() and len(acked) < most:
            batch = [learning(n=n + i, description=f"{prefix} learning {n + i} about ports") for i in range(8)]
            try:
                acked.extend(client.put_learnings(batch).ids)
            except GrooveError:
                continue  # the id was never acked: not counted
            n += 8

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.slow
def test_a_killed_embedding_worker_is_restarted_and_every_learning_gets_its_vector(
    coordinator_factory: Callable[..., RunningCoordinator], client_factory: Callable[..., GrooveClient]
) -> None:
    running = coordinator_factory(model=True)
    client = client_factory(running.endpoint, timeout=60)
    worker = wait_for(lambda: _loaded(client), "the worker loaded the model", 120)
    stop, acked = threading.Event(), list[str]()
    writer = _writing(client_factory(running.endpoint, timeout=60), stop, acked, "embedded", most=320)
    wait_for(lambda: client.stats().vectors >= 16, "the first vectors stored", 60)
    if sys.platform.startswith("linux"):  # the model lives in the workers: the coordinator never loaded it
        maps = Path(f"/proc/{running.proc.pid}/maps").read_text()
        assert "libtorch" not in maps
        assert "onnxruntime" not in maps
    assert worker is not None
    assert worker.pid is not None
    os.kill(worker.pid, signal.SIGKILL)
    wait_for(lambda: len(acked) >= 320, "writes go on while the worker is down", 60)
    stop.set()
    writer.join(30)
    again = wait_for(lambda: _loaded(client, restarts=1), "restarted, the model loaded again", 120)
    assert again is not None
    assert again.restarts == 1
    assert again.last_exit == -signal.SIGKILL
    assert again.pid != worker.pid
    # what the dead worker held went back to the queue: every learning gets its vector, once
    wait_for(lambda: client.stats().vectors == len(acked), "every learning embedded", 180)
    stored = [x.id for x in client.iter_learnings()]
    assert sorted(stored) == sorted(acked)
    assert client.stats().embedding_queue_depth == 0
    assert "embed-0 exited (status -9)" in running.log()


@pytest.mark.parametrize("checks", [("--no-front-checks",), ()], ids=["checked-here", "checked-in-front"])
def test_a_killed_front_is_restarted_on_its_endpoint_and_writes_resume_with_nothing_lost(
    coordinator_factory: Callable[..., RunningCoordinator],
    client_factory: Callable[..., GrooveClient],
    checks: tuple[str],
) -> None:
    coordinator = coordinator_factory(*checks)  # a restarted checking front checks again
    client = client_factory(coordinator.endpoint, timeout=30, attempt_timeout=1.0)
    front = _process(client, "front")
    assert (front.alive, front.restarts, front.last_exit) == (True, 0, None)
    stop, acked = threading.Event(), list[str]()
    writer = _writing(client_factory(coordinator.endpoint, timeout=30, attempt_timeout=1.0), stop, acked, "fronted")
    wait_for(lambda: len(acked) >= 80, "writes flowing", 30)
    assert front.pid is not None
    os.kill(front.pid, signal.SIGKILL)
    before = len(acked)
    wait_for(lambda: len(acked) >= before + 80, "writes resume through the new front", 30)
    stop.set()
    writer.join(30)
    again = _process(client, "front")
    assert (again.restarts, again.last_exit, again.alive) == (1, -signal.SIGKILL, True)
    assert again.pid != front.pid
    stored = [x.id for x in client.iter_learnings()]
    assert sorted(stored) == sorted(acked)  # none lost, none stored twice, none stored unacked
    assert coordinator.proc.poll() is None
    checked = client.stats().requests_checked_in_front
    assert checked == 0 if checks else checked >= len(acked) // 8  # the writes after the restart too


def test_a_search_by_meaning_counts_the_results_words_alone_found(client: GrooveClient) -> None:
    client.put_learnings([learning(n=i, description=f"flaky socket test number {i}") for i in range(3)])
    # no embedder here (--embedder none): every result of a hybrid search was found by its words
    reply = client.call("search", {"text": "flaky socket", "mode": "hybrid"})
    assert len(reply["results"]) == 3
    assert reply["words_only"] == 3
    assert client.call("search", {"text": "flaky socket", "mode": "keyword"})["words_only"] == 0
