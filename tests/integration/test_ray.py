"""The Ray backend of fleets: agent workers as Ray actors on a Ray started for the test, and on a two-node
cluster on this machine (`ray.cluster_utils.Cluster`), against a real coordinator.

Ray is driven from a process of its own (tests/integration/ray_driver.py says why); these tests read what it
saw, and read every acked write back from the coordinator themselves."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks.scripted_model import Scene, Script, ScriptedModel
from groove.client import GrooveClient, NotFound
from groove.protocol.keys import CurveClient, generate_key_pair
from tests.helpers import RunningCoordinator, run_groove
from tests.realagents import FIELDS, agent_env, binary, complete, git_repo

# one local Ray at a time: under pytest-xdist these tests share a worker
pytestmark = pytest.mark.xdist_group("ray")


def drive(scenario: str, endpoint: str, workdir: Path, *keys: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a scenario of the Ray driver (`env` over this environment); what it printed."""
    argv = [sys.executable, "-m", "tests.integration.ray_driver", scenario, endpoint, str(workdir), *keys]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=240, check=False, env=os.environ | (env or {}))
    assert run.returncode == 0, run.stderr[-3000:]
    # Ray's raylets may print to the driver's stdout too (an actor restarting): the driver's own line is JSON
    mine = [line for line in run.stdout.splitlines() if line.startswith("{")]
    assert mine, run.stdout[-3000:]
    seen: dict[str, Any] = json.loads(mine[-1])
    return seen


def read_back(client: GrooveClient, workdir: Path) -> tuple[int, list[str]]:
    """Every learning the fleet's runs were acked, read back from the coordinator: (acked, missing)."""
    acked = {lid for path in workdir.glob("*.acked.json") for lid in json.loads(path.read_text())["learned"]}
    missing = []
    for lid in sorted(acked):
        try:
            client.get(lid)
        except NotFound:
            missing.append(lid)
    return len(acked), missing


@pytest.mark.slow
def test_ray_actors_run_the_workers_and_a_killed_actor_is_restarted(
    coordinator: RunningCoordinator, client: GrooveClient, tmp_path: Path
) -> None:
    seen = drive("restart", coordinator.endpoint, tmp_path)
    assert "agent w1 lost its Ray actor; restarting it" in seen["events"][0], f"{seen['left_at_kill']:.1f} s left"
    assert seen["runs"] == {"w0": 1, "w1": 2, "w2": 1}
    reports = seen["reports"]
    assert [r["agent_id"] for r in reports] == ["w0", "w1", "w2"]
    assert all(r["errors"] == r["mismatches"] == 0 and r["ops"]["learn"] > 0 for r in reports), reports
    assert seen["latency_kinds"] == ["learn"]
    # the killed run never returned: only the finished runs' evidence came back
    assert seen["acked_files"] == ["w0.1.acked.json", "w1.2.acked.json", "w2.1.acked.json"]
    acked, missing = read_back(client, tmp_path)
    assert acked > 0
    assert missing == []


def test_the_orchestrator_spawns_workers_on_ray(coordinator: RunningCoordinator, tmp_path: Path) -> None:
    seen = drive("orchestrator", coordinator.endpoint, tmp_path)
    assert seen["backend"] == "ray"
    assert [(r["agent_id"], r["ops"]) for r in seen["reports"]] == [
        ("worker-0-0", {"learn": 20}),
        ("worker-0-1", {"learn": 20}),
    ]
    assert seen["refused"] == "cpus_per_agent: only for the ray backend"


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
    server_key, secret = str(secured.data_dir / "server.key"), str(keys / "fleet.key_secret")
    fleet = tmp_path / "fleet"
    seen = drive("two_nodes", secured.endpoint, fleet, server_key, secret)
    assert len(seen["bundle_nodes"]) == 2  # SPREAD: the four bundles over both nodes
    assert len(set(seen["nodes"].values())) == 2  # as each run reported where it ran
    assert all(r["errors"] == r["mismatches"] == 0 for r in seen["reports"]), seen["reports"]
    client = client_factory(secured.endpoint, curve=CurveClient.load(server_key, secret))
    acked, missing = read_back(client, fleet)
    assert acked > 0
    assert missing == []


def test_a_cluster_without_room_for_the_fleet_is_a_clear_error(coordinator: RunningCoordinator, tmp_path: Path) -> None:
    seen = drive("no_room", coordinator.endpoint, tmp_path)
    assert seen["refused"].startswith("the Ray cluster has 1 CPUs; 2 agents x 1 CPUs did not fit within 2 s")


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


@pytest.mark.slow
def test_real_claude_code_workers_run_as_ray_actors(
    coordinator: RunningCoordinator, client: GrooveClient, tmp_path: Path
) -> None:
    binary("claude")
    repo = git_repo(tmp_path / "shop")
    memory = client.create_memory(str(repo), "m", "g")
    client.add_tasks(memory, [{"id": f"r{i}", "title": f"ray task {i}"} for i in range(4)])
    work = Scene([], [{"shell": "echo {task_id} > {task_id}.txt"}, complete(), {"text": "done"}])
    with ScriptedModel(Script(default=work, fields=FIELDS)) as model:
        seen = drive("real_agents", coordinator.endpoint, tmp_path / "fleet", memory, str(repo),
                     env=agent_env(tmp_path / "home", model))  # fmt: skip
    assert seen["backend"] == "ray"
    done = sorted(s["task_id"] for r in seen["reports"] for s in r["sessions"] if s["result"] == "completed")
    assert done == ["r0", "r1", "r2", "r3"], [s for r in seen["reports"] for s in r["sessions"]]
    assert {t.status for t in client.tasks(memory)} == {"completed"}
