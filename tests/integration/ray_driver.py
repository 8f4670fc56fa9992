"""The Ray tests' driver: each scenario runs in a process of its own and prints what it saw as one JSON line.

A process that has loaded usearch (as the test process has, from the coordinator's tests) aborts in
`ray.init` (`std::regex_error`: the two libraries' C++ runtimes clash). groove never loads both in one process:
the coordinator holds usearch, and a fleet's driver (`groove swarm`, an orchestrator) never imports it. So the
tests drive Ray from here, as an orchestrator would, and assert on what it printed. Each scenario starts a
Ray of its own (`address="local"`): without it Ray joins one still running on the machine, as the two-node
scenario's can be for a moment after it shut down.

    python -m tests.integration.ray_driver SCENARIO ENDPOINT WORKDIR [SERVER_KEY CLIENT_SECRET]
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ray
from ray.cluster_utils import Cluster

from groove.client import GrooveClient
from groove.protocol.keys import CurveClient
from groove.swarm.fleet import FleetBase, FleetError
from groove.swarm.orchestrator import Orchestrator
from groove.swarm.rayfleet import RayFleet


def _seen(fleet: FleetBase, events: list[str]) -> dict[str, Any]:
    return {
        "events": events,
        "runs": {m.agent_id: m.runs for m in fleet.members.values()},
        "nodes": {m.agent_id: m.node for m in fleet.members.values()},
        "reports": fleet.reports(),
        "latency_kinds": sorted(fleet.latencies()),
        "acked_files": sorted(p.name for p in fleet.workdir.glob("*.acked.json")),
    }


def restart(endpoint: str, workdir: Path) -> dict[str, Any]:
    """Three workers on a local Ray; one actor killed once every worker is writing."""
    ray.init(address="local", num_cpus=4, logging_level=logging.ERROR, log_to_driver=False)
    fleet = RayFleet(endpoint, workdir, agents=3)
    for i in range(3):  # the acked ids come back through Ray and land here, not in a directory the nodes share
        # 30 s: with the suite beside them the three actors took up to 19 s to start writing and Ray a second or
        # two to report the kill, and a worker that crashes with less than a second left is (rightly) not restarted.
        # Paced: flat out, the three workers and the coordinator took 35 CPU-seconds of the suite's two cores.
        acked = workdir / f"w{i}.{{run}}.acked.json"
        fleet.spawn(f"w{i}", mix="learn=1", seed=i, duration=30, rate=20, acked_file=acked)
    with GrooveClient(endpoint, timeout=10) as client:
        deadline = time.monotonic() + 60
        while len([a for a in client.agents() if a.requests > 0]) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
    left_at_kill = fleet.members["w1"].left()
    fleet.kill("w1")
    events: list[str] = []
    deadline = time.monotonic() + 30
    while not events and time.monotonic() < deadline:
        events += fleet.check()
        time.sleep(0.1)
    fleet.wait(timeout=60)
    fleet.stop()
    return _seen(fleet, events) | {"left_at_kill": left_at_kill}


def orchestrator(endpoint: str, workdir: Path) -> dict[str, Any]:
    """The orchestrator's workers on Ray, and its refusal of a Ray option for the local backend."""
    ray.init(address="local", num_cpus=2, logging_level=logging.ERROR, log_to_driver=False)
    with Orchestrator(endpoint, workdir=workdir) as orchestra:
        fleet = orchestra.spawn_workers(2, count=20, mix="learn=1", backend="ray", cpus_per_agent=0.5)
        fleet.wait(timeout=60)
        try:
            orchestra.spawn_workers(1, count=1, cpus_per_agent=0.5)
            refused = ""
        except ValueError as exc:
            refused = str(exc)
        return _seen(fleet, []) | {"backend": fleet.backend, "refused": refused}


def two_nodes(endpoint: str, workdir: Path, server_key: str, client_secret: str) -> dict[str, Any]:
    """Four workers spread over a two-node cluster on this machine, talking CURVE."""
    curve = CurveClient.load(server_key, client_secret)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2})
    cluster.add_node(num_cpus=2)
    cluster.wait_for_nodes()
    try:
        ray.init(address=cluster.address, logging_level=logging.ERROR, log_to_driver=False)
        fleet = RayFleet(endpoint, workdir, agents=4, curve=curve)
        bundles = sorted(set(fleet.bundle_nodes.values()))
        for i in range(4):
            acked = workdir / f"spread-{i}.{{run}}.acked.json"
            fleet.spawn(f"spread-{i}", mix="learn=3,search=1", seed=i, duration=4, acked_file=acked)
        fleet.wait(timeout=90)
        fleet.stop()
        return _seen(fleet, []) | {"bundle_nodes": bundles}
    finally:
        ray.shutdown()
        cluster.shutdown()  # type: ignore[no-untyped-call]


def no_room(endpoint: str, workdir: Path) -> dict[str, Any]:
    """Two agents of one CPU each on a Ray with one CPU."""
    ray.init(address="local", num_cpus=1, logging_level=logging.ERROR, log_to_driver=False)
    try:
        RayFleet(endpoint, workdir, agents=2, place_timeout=2)
    except FleetError as exc:
        return {"refused": str(exc)}
    return {"refused": ""}


def real_agents(endpoint: str, workdir: Path, memory: str, repo: str) -> dict[str, Any]:
    """Two Claude Code workers on a local Ray drain a plan (the scripted model's address is in the environment,
    which the actors inherit)."""
    ray.init(address="local", num_cpus=2, logging_level=logging.ERROR, log_to_driver=False)
    with Orchestrator(endpoint, workdir=workdir) as orchestra:
        fleet = orchestra.run(memory, 2, agent="claude", repo=Path(repo), backend="ray", cpus_per_agent=0.5)
        fleet.wait(timeout=180)
        return _seen(fleet, []) | {"backend": fleet.backend}


SCENARIOS: dict[str, Callable[..., dict[str, Any]]] = {
    "real_agents": real_agents,
    "restart": restart,
    "orchestrator": orchestrator,
    "two_nodes": two_nodes,
    "no_room": no_room,
}


if __name__ == "__main__":
    name, endpoint, workdir, *keys = sys.argv[1:]
    print(json.dumps(SCENARIOS[name](endpoint, Path(workdir), *keys)))
