"""Agents on other hosts: a coordinator in one network namespace, agents in two others, over veth links,
with CURVE on (the coordinator binds every interface, which it refuses to do without CURVE)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from groove.protocol.keys import generate_key_pair
from groove.swarm.coding import groove_argv
from groove.swarm.fleet import stop_process

pytestmark = pytest.mark.slow

PORT = 5555


def _netns_available() -> str | None:
    if shutil.which("ip") is None:
        return "needs the `ip` tool (iproute2)"
    if os.geteuid() != 0:
        return "needs root to make network namespaces"
    probe = f"groove-probe-{uuid.uuid4().hex[:6]}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, check=False)
    if made.returncode != 0:
        return f"cannot make network namespaces here: {made.stderr.decode().strip()}"
    try:  # a container may allow namespaces but not links between them
        veth = ["ip", "-n", probe, "link", "add", "p0", "type", "veth", "peer", "name", "p1"]
        linked = subprocess.run(veth, capture_output=True, check=False)
        if linked.returncode != 0:
            return f"cannot make veth links here: {linked.stderr.decode().strip()}"
    finally:
        subprocess.run(["ip", "netns", "del", probe], check=False)
    return None


def sh(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


class Hosts:
    """Network namespaces joined by veth pairs: `coord` reaches `agentN` at 10.77.N.1, agents sit at .2."""

    def __init__(self, agents: int) -> None:
        tag = uuid.uuid4().hex[:6]
        self.coord = f"groove-c-{tag}"
        self.agents = [f"groove-a{n}-{tag}" for n in range(1, agents + 1)]
        ip("netns", "add", self.coord)
        ip("-n", self.coord, "link", "set", "lo", "up")
        for n, ns in enumerate(self.agents, 1):
            ip("netns", "add", ns)
            ip("-n", ns, "link", "set", "lo", "up")
            near, far = f"gc{n}{tag}", f"ga{n}{tag}"
            ip("link", "add", near, "netns", self.coord, "type", "veth", "peer", "name", far, "netns", ns)
            ip("-n", self.coord, "addr", "add", f"10.77.{n}.1/24", "dev", near)
            ip("-n", ns, "addr", "add", f"10.77.{n}.2/24", "dev", far)
            ip("-n", self.coord, "link", "set", near, "up")
            ip("-n", ns, "link", "set", far, "up")

    def run(self, ns: str, *args: str) -> list[str]:
        return ["ip", "netns", "exec", ns, *groove_argv(*args)]

    def close(self) -> None:
        for ns in [self.coord, *self.agents]:  # deleting a namespace deletes its end of each veth pair
            subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)


@pytest.fixture
def hosts() -> Iterator[Hosts]:
    missing = _netns_available()
    if missing is not None:
        pytest.skip(missing)
    made = Hosts(agents=2)
    yield made
    made.close()


def test_agents_in_other_namespaces_work_over_curve(hosts: Hosts, tmp_path: Path) -> None:
    keys, authorized = tmp_path / "keys", tmp_path / "authorized"
    authorized.mkdir()
    for name, role in (("agent1", "agent"), ("agent2", "agent"), ("ops", "admin")):
        public, _ = generate_key_pair(keys, name, {"role": role})
        (authorized / public.name).write_bytes(public.read_bytes())
    generate_key_pair(keys, "stranger", {"role": "admin"})
    data = tmp_path / "data"
    data.mkdir()
    log = open(data / "coordinator.log", "wb")  # noqa: SIM115 - the child writes to it
    serve = hosts.run(
        hosts.coord, "serve", "--data-dir", str(data), "--bind", f"tcp://*:{PORT}", "--embedder", "none",
        "--curve", "--authorized-keys", str(authorized), "--endpoint-file", str(data / "endpoint"),
    )  # fmt: skip
    coordinator = subprocess.Popen(serve, stdout=log, stderr=log)
    log.close()
    try:
        deadline = time.monotonic() + 60
        while not (data / "endpoint").exists():  # written once it serves (its key pair is made before)
            assert coordinator.poll() is None, (data / "coordinator.log").read_text()
            assert time.monotonic() < deadline, "the coordinator did not start within 60 s"
            time.sleep(0.05)
        server_key = str(data / "server.key")

        def client(n: int, key: str, *args: str, timeout: float = 20) -> list[str]:
            endpoint = f"tcp://10.77.{n}.1:{PORT}"
            common = ["--endpoint", endpoint, "--server-key", server_key, "--key", str(keys / f"{key}.key_secret")]
            return hosts.run(hosts.agents[n - 1], *common, "--timeout", str(timeout), *args)

        up = sh(client(1, "ops", "ping", timeout=60), 90)
        assert up.returncode == 0, up.stderr + (data / "coordinator.log").read_text()
        workers = [
            subprocess.Popen(
                client(n, f"agent{n}", "agent", "--agent-id", f"remote-{n}", "--count", "120", "--seed", str(n)),
                stdout=subprocess.PIPE,
            )
            for n in (1, 2)
        ]
        reports = []
        for worker in workers:
            out, _ = worker.communicate(timeout=240)
            assert worker.returncode == 0
            reports.append(json.loads(out.decode().strip().splitlines()[-1]))
        assert all(r["errors"] == 0 and r["mismatches"] == 0 for r in reports), reports
        assert all(r["verified"] == r["created"] > 0 for r in reports), reports

        stats = sh(client(2, "ops", "stats", "--json"), 60)
        assert stats.returncode == 0, stats.stderr
        figures = json.loads(stats.stdout)
        assert figures["auth"] == "curve"
        assert figures["agents_known"] == 2
        assert sum(t["learnings"] for t in figures["tiers"]) >= sum(r["created"] for r in reports)

        stranger = sh(client(1, "stranger", "ping", timeout=2), 60)
        assert stranger.returncode == 3
        assert "authorized" in stranger.stderr
        # an agent key may not do admin work, from any host
        refused = sh(client(2, "agent2", "maintain"), 60)
        assert "unauthorized" in refused.stderr
    finally:
        assert stop_process(coordinator, grace=30) == 0
