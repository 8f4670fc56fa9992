"""Stopping a coordinator: under a write load it commits and acks what it queued, on SIGTERM and on SIGINT; with
embeddings queued it exits 0 the way `docker compose stop` stops it, and the next start finishes them."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from groove.client import GrooveClient
from tests.helpers import RunningCoordinator, agent_report, compose, learning, spawn_agent, wait_for


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_under_load_commits_and_acks_every_queued_write(
    how: signal.Signals, coordinator: RunningCoordinator, client_factory: Callable[..., GrooveClient], tmp_path: Path
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
    coordinator.proc.send_signal(how)
    assert coordinator.proc.wait(30) == 0
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


def compose_service() -> tuple[list[str], dict[str, str], float]:
    """The coordinator service of docker-compose.yml: its command, environment and stop grace period."""
    service = compose()["services"]["coordinator"]
    return service["command"], service["environment"], float(service["stop_grace_period"].rstrip("s"))


# Once, the way `docker compose stop` stops the service (SIGTERM, then its grace period): SIGTERM and SIGINT reach
# the same handler, which the test above checks for each, and the model makes this test the costlier by far.
@pytest.mark.slow
def test_a_compose_stop_while_embeddings_are_queued_exits_cleanly_and_loses_no_embedding(
    coordinator_factory: Callable[..., RunningCoordinator],
    client_factory: Callable[..., GrooveClient],
    tmp_path: Path,
) -> None:
    # as `docker compose stop` does it (no Docker engine here): the service's own command and environment,
    # with the data dir and port made local, then SIGTERM and up to its stop_grace_period before a SIGKILL
    command, environment, grace = compose_service()
    assert command == ["groove", "serve"]
    env = {**environment, "GROOVE_DATA_DIR": str(tmp_path / "data"), "GROOVE_BIND": "tcp://127.0.0.1:0"}
    running = coordinator_factory(model=True, data_dir=tmp_path / "data", env=env)
    client = client_factory(running.endpoint, timeout=60)
    texts = [f"marker{n:04d} keep the cache warm before timing request {n}" for n in range(600)]
    ids = []
    for start in range(0, 600, 100):
        batch = [learning("global", n, description=texts[n]) for n in range(start, start + 100)]
        ids += client.put_learnings(batch).ids
    # the worker is embedding (some vectors landed) with more waiting: the moment a stop used to abort in
    stats = wait_for(
        lambda: (s := client.stats()).vectors > 0 and s.embedding_queue_depth > 0 and s,
        "the worker embedding with a backlog",
        timeout=120,
        every=0.02,
    )
    assert stats
    running.proc.send_signal(signal.SIGTERM)
    assert running.proc.wait(grace) == 0
    assert "terminate called" not in running.log()
    running.restart()
    client = client_factory(running.endpoint, timeout=60)
    assert client.stats().last_stop == "clean"
    # the backlog is picked up again: every learning gets its vector and is found
    wait_for(lambda: client.stats().vectors == 600, "every learning embedded after the restart", timeout=180)
    for n in range(0, 600, 60):
        hits = client.search(texts[n], mode="semantic", limit=10)
        assert ids[n] in [h.learning.id for h in hits], n
    for n, lid in enumerate(ids):
        assert [h.learning.id for h in client.search(f"marker{n:04d}", mode="keyword", limit=1)] == [lid]
