"""SIGTERM under load: the coordinator stops taking writes, commits and acks what it queued, and exits 0."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from agents import GrooveClient
from tests.helpers import RunningCoordinator, agent_report, learning, spawn_agent, wait_for


def test_sigterm_flushes_every_queued_write(
    coordinator: RunningCoordinator, client_factory: Callable[..., GrooveClient], tmp_path: Path
) -> None:
    acked_file = tmp_path / "acked.json"
    agent = spawn_agent(
        coordinator.endpoint,
        "--mix",
        "learn=1",
        "--no-verify",
        "--in-flight",
        "64",
        "--duration",
        "5",
        "--acked-file",
        str(acked_file),
        timeout=2,
    )
    client = client_factory(coordinator.endpoint)
    deadline = time.monotonic() + 30
    while client.stats().writes_committed < 500:
        assert time.monotonic() < deadline, "the load never got going"
        time.sleep(0.05)
    assert coordinator.stop() == 0
    report = agent_report(agent, timeout=60)
    acked = json.loads(acked_file.read_text())
    assert report["ops"]["learn"] >= report["created"] == len(acked["learned"]) >= 500
    log = coordinator.log()
    assert "stopping: committing" in log
    assert "coordinator stopped" in log
    coordinator.restart()
    client = client_factory(coordinator.endpoint)
    stored = {x.id for x in client.iter_learnings()}
    assert set(acked["learned"]) <= stored
    assert (client.stats().last_stop, client.stats().recovery_ms) == ("clean", 0.0)
    assert "did not stop cleanly" not in coordinator.log()


def test_a_stop_while_embeddings_are_queued_exits_cleanly(
    coordinator_factory: Callable[..., RunningCoordinator], client_factory: Callable[..., GrooveClient]
) -> None:
    running = coordinator_factory(model=True)
    client = client_factory(running.endpoint, timeout=60)
    for start in range(0, 600, 100):
        client.put_learnings([learning("global", n) for n in range(start, start + 100)])
    # the worker is embedding (some vectors landed) with more waiting: the moment a stop used to abort in
    stats = wait_for(
        lambda: (s := client.stats()).vectors > 0 and s.embedding_queue_depth > 0 and s,
        "the worker embedding with a backlog",
        timeout=120,
        every=0.02,
    )
    assert stats
    assert running.stop() == 0
    assert "terminate called" not in running.log()
    running.restart()
    assert client_factory(running.endpoint).stats().last_stop == "clean"
