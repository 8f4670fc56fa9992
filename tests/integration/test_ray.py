"""The Ray backend of fleets: agent workers as Ray actors on a Ray started by the test, and on a two-node
cluster on this machine (`ray.cluster_utils.Cluster`), against a real coordinator."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import ray
from ray.cluster_utils import Cluster

from agents import GrooveClient, NotFound
from agents.fleet import FleetBase, FleetError
from agents.orchestrator import Orchestrator
from agents.rayfleet import RayFleet
from protocol.keys import CurveClient, generate_key_pair
from tests.helpers import RunningCoordinator, run_groove, wait_for


def read_back(client: GrooveClient, fleet: FleetBase) -> tuple[int, list[str]]:
    """Every learning the fleet's runs were acked, read back from the coordinator: (acked, missing)."""
    acked = {lid for path in fleet.workdir.glob("*.acked.json") for lid in json.loads(path.read_text())["learned"]}
    missing = []
    for lid in sorted(acked):
        try:
            client.get(lid)
        except NotFound:
            missing.append(lid)
    return len(acked), missing


@pytest.fixture
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=4, logging_level=logging.ERROR, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.mark.slow
@pytest.mark.usefixtures("local_ray")
def test_ray_actors_run_the_workers_and_a_killed_actor_is_restarted(
    coordinator: RunningCoordinator, client: GrooveClient, tmp_path: Path
) -> None:
    fleet = RayFleet(coordinator.endpoint, tmp_path / "fleet", agents=3)
    for i in range(3):  # the acked ids come back through Ray and land here, not in a directory the nodes share
        fleet.spawn(f"w{i}", mix="learn=1", seed=i, duration=15, acked_file=fleet.workdir / f"w{i}.{{run}}.acked.json")
    wait_for(lambda: len([a for a in client.agents() if a.requests > 0]) == 3, "every actor wrote", 60)
    fleet.kill("w1")
    events = wait_for(fleet.check, "the fleet saw the actor die", 30)
    assert "agent w1 lost its Ray actor; restarting it" in events[0]
    assert fleet.wait(timeout=60)
    fleet.stop()
    assert {m.agent_id: m.runs for m in fleet.members.values()} == {"w0": 1, "w1": 2, "w2": 1}
    reports = fleet.reports()
    assert [r["agent_id"] for r in reports] == ["w0", "w1", "w2"]
    assert all(r["errors"] == r["mismatches"] == 0 and r["ops"]["learn"] > 0 for r in reports), reports
    assert set(fleet.latencies()) == {"learn"}
    # the killed run never returned: only the finished runs' evidence is there
    assert sorted(p.name for p in fleet.workdir.glob("*.acked.json")) == [
        "w0.1.acked.json",
        "w1.2.acked.json",
        "w2.1.acked.json",
    ]
    acked, missing = read_back(client, fleet)
    assert acked > 0
    assert missing == []


@pytest.mark.usefixtures("local_ray")
def test_the_orchestrator_spawns_workers_on_ray(coordinator: RunningCoordinator, tmp_path: Path) -> None:
    with Orchestrator(coordinator.endpoint, workdir=tmp_path) as orchestrator:
        fleet = orchestrator.spawn_workers(2, count=20, mix="learn=1", backend="ray", cpus_per_agent=0.5)
        assert isinstance(fleet, RayFleet)
        assert fleet.wait(timeout=60)
        assert [(r["agent_id"], r["ops"]) for r in fleet.reports()] == [
            ("worker-0-0", {"learn": 20}),
            ("worker-0-1", {"learn": 20}),
        ]
        with pytest.raises(ValueError, match="only for the ray backend"):
            orchestrator.spawn_workers(1, count=1, cpus_per_agent=0.5)


@pytest.mark.slow
def test_a_two_node_cluster_gets_agents_on_both_nodes_and_every_acked_write_reads_back(
    coordinator_factory: Callable[..., RunningCoordinator], client_factory: Callable[..., GrooveClient], tmp_path: Path
) -> None:
    keys = tmp_path / "keys"
    generate_key_pair(keys, "fleet", {"role": "agent"})
    authorized = tmp_path / "authorized"
    authorized.mkdir()
    (authorized / "fleet.key").write_bytes((keys / "fleet.key").read_bytes())
    secured = coordinator_factory("--curve", "--authorized-keys", str(authorized))
    curve = CurveClient.load(str(secured.data_dir / "server.key"), keys / "fleet.key_secret")
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2})
    cluster.add_node(num_cpus=2)
    cluster.wait_for_nodes()
    try:
        ray.init(address=cluster.address, logging_level=logging.ERROR, log_to_driver=False)
        fleet = RayFleet(secured.endpoint, tmp_path / "fleet", agents=4, curve=curve)
        assert len(set(fleet.bundle_nodes.values())) == 2  # SPREAD: the four bundles over both nodes
        for i in range(4):
            fleet.spawn(
                f"spread-{i}", mix="learn=3,search=1", seed=i, duration=4, acked_file=tmp_path / f"{i}.{{run}}.json"
            )
        assert fleet.wait(timeout=90)
        fleet.stop()
        assert len({m.node for m in fleet.members.values()}) == 2  # as each run reported where it ran
        assert all(r["errors"] == r["mismatches"] == 0 for r in fleet.reports()), fleet.reports()
    finally:
        ray.shutdown()
        cluster.shutdown()  # type: ignore[no-untyped-call]
    client = client_factory(secured.endpoint, curve=curve)
    acked = {lid for i in range(4) for lid in json.loads((tmp_path / f"{i}.1.json").read_text())["learned"]}
    assert acked
    assert all(client.get(lid).id == lid for lid in acked)


def test_a_cluster_without_room_for_the_fleet_is_a_clear_error(coordinator: RunningCoordinator, tmp_path: Path) -> None:
    ray.init(num_cpus=1, logging_level=logging.ERROR, log_to_driver=False)
    try:
        with pytest.raises(FleetError, match=r"has 1 CPUs; 2 agents x 1 CPUs did not fit"):
            RayFleet(coordinator.endpoint, tmp_path, agents=2, place_timeout=2)
    finally:
        ray.shutdown()


@pytest.mark.slow
def test_groove_swarm_on_ray_reports_each_agents_node(tmp_path: Path) -> None:
    args = ("swarm", "--agents", "2", "--board-agents", "1", "--duration", "5", "--embedder", "none", "--json")
    run = run_groove(*args, "--backend", "ray", "--data-dir", str(tmp_path), timeout=180)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert (report["backend"], report["nodes"], report["restarts"]) == ("ray", 1, 0)
    assert report["backend_startup_s"] > 0
    assert report["errors"] == report["mismatches"] == report["agents_without_report"] == 0
    assert report["verified_after"] >= report["learnings_created"] > 0
    assert report["board"]["tasks"].get("completed", 0) > 0
    assert len({a["node"] for a in report["per_agent"]}) == 1
    assert all(len(a["node"]) == 12 for a in report["per_agent"])
    assert "Ray ready, with room for every agent" in run.stderr
