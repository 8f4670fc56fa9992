"""docker-compose.yml on a real Docker engine, with Operations' commands run as written (`make compose-test`).

The stack is built (its base and wheels made locally where no registry answers: buildtools/image.py), brought
up, loaded by agents in containers and on the host (through the published port), stopped with SIGTERM and
brought up again: every learning acknowledged is read back. Then a backup is taken, the volume deleted and
restored from it, the image rebuilt and the stack taken down, leaving nothing. Figures (image size, build time,
`up` to healthy) go to test-artifacts/compose.json.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from buildtools.image import ImageError, compose, prepare
from groove.client import GrooveClient
from groove.protocol import constants as C
from groove.swarm.coding import groove_argv
from groove.swarm.worker import EXIT_UNVERIFIED
from tests.helpers import ROOT, agent_report, example, wait_for

# each test's stack is a compose project of its own, so nothing an earlier run left (a volume, a network, a
# container that an engine killed with its session restarted) can stand in for this run's
PROJECT_PREFIX = "groove-compose-test"  # the runs before this change used it alone
IMAGE = "groove:latest"
HEALTHY_WITHIN_S = 20.0  # the target, with the image built
ARTIFACT = ROOT / "test-artifacts" / "compose.json"

# one project, one image tag: the tests here run one after the other, on one worker
pytestmark = [pytest.mark.timeout(1200), pytest.mark.xdist_group("compose")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Stack:
    """Operations' compose commands, run as written in a shell, against this test's project and ports."""

    def __init__(self, compose_file: str) -> None:
        self.project = f"{PROJECT_PREFIX}{uuid.uuid4().hex[:8]}"
        self.port, self.ui_port = _free_port(), _free_port()
        self.env = os.environ | {
            "COMPOSE_FILE": compose_file,
            "COMPOSE_PROJECT_NAME": self.project,
            "GROOVE_PORT": str(self.port),
            "GROOVE_UI_PORT": str(self.ui_port),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",  # the host's `groove`
        }
        argv = compose()
        # Compose v1 where v2 is missing: `docker compose` in the documented lines goes to docker-compose
        self.prelude = "" if argv == ["docker", "compose"] else (
            'docker() { if [ "$1" = compose ]; then shift; docker-compose "$@"; else command docker "$@"; fi; }\n'
        )  # fmt: skip
        self.endpoint = f"tcp://127.0.0.1:{self.port}"
        self.steps: dict[str, float] = {}  # seconds each documented block took

    def run(self, name: str, timeout: float = 600) -> tuple[str, float]:
        """The `<!-- example: NAME -->` block, as a script (set -e); the documented ports become this test's."""
        script = example(name, "sh").replace("127.0.0.1:5555", f"127.0.0.1:{self.port}")
        started = time.monotonic()
        done = subprocess.run(
            ["bash", "-c", f"set -euo pipefail\n{self.prelude}{script}"],
            cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
        took = time.monotonic() - started
        self.steps[name] = round(self.steps.get(name, 0.0) + took, 1)
        assert done.returncode == 0, (
            f"{name}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}\n{self.diagnosis()}"
        )
        return done.stdout + done.stderr, took

    def diagnosis(self) -> str:
        """What the coordinator said and its healthchecks' last results: why a step failed, in the failure."""
        lines = []
        for cid in self.container("coordinator"):
            state = json.loads(self.docker("inspect", cid))[0]["State"]
            checks = state.get("Health", {}).get("Log", [])[-3:]
            lines.append(f"coordinator {cid}: {state['Status']} exit {state['ExitCode']}, healthchecks: {checks}")
            logs = subprocess.run(["docker", "logs", "--tail", "30", cid], capture_output=True, text=True, check=False)
            lines.append((logs.stdout + logs.stderr)[-3000:])
        return "\n".join(lines)

    def docker(self, *args: str) -> str:
        return subprocess.run(["docker", *args], capture_output=True, text=True, check=True, timeout=60).stdout

    def container(self, service: str) -> list[str]:
        return self.docker(
            "ps", "-aq", "--filter", f"label=com.docker.compose.project={self.project}",
            "--filter", f"label=com.docker.compose.service={service}",
        ).split()  # fmt: skip

    def healthy(self) -> bool:
        ids = self.container("coordinator")
        return bool(ids) and self.docker("inspect", "-f", "{{.State.Health.Status}}", ids[0]).strip() == "healthy"

    def wait_healthy(self, what: str) -> None:
        """Until the coordinator's healthcheck passes; failing, says what it and its healthchecks said."""
        try:
            wait_for(self.healthy, what, timeout=120, every=0.2)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.diagnosis()}") from None

    def wait_dashboard(self) -> None:
        """Until the dashboard has printed its login URL (it serves from then on)."""
        ui = self.container("ui")[0]
        wait_for(lambda: "groove ui: http://" in self.docker("logs", ui), "the dashboard's login URL", timeout=60)

    def left(self, prefix: str | None = None) -> list[str]:
        """The containers, volumes and networks of this stack (or of every project named with `prefix`)."""
        found = []
        for kind, listing, field in (
            ("container", ["ps", "-a"], "{{.ID}}"),
            ("volume", ["volume", "ls"], "{{.Name}}"),
            ("network", ["network", "ls"], "{{.ID}}"),
        ):
            listed = self.docker(*listing, "--format", field + ' {{.Label "com.docker.compose.project"}}')
            for line in listed.splitlines():
                ident, _, project = line.partition(" ")
                if project == self.project or (prefix is not None and project.startswith(prefix)):
                    found.append(f"{kind} {ident}")
        return found

    def sweep(self, prefix: str | None = None) -> None:
        """Removes what `left` finds, by force: what `down` could not (an interrupted run's, a killed engine's)."""
        for thing in self.left(prefix):
            kind, ident = thing.split()
            argv = {"container": ["rm", "-f", "-v"], "volume": ["volume", "rm", "-f"], "network": ["network", "rm"]}
            subprocess.run(["docker", *argv[kind], ident], capture_output=True, timeout=120, check=False)

    def down(self) -> None:
        subprocess.run(
            [*compose(), "--profile", "load", "down", "-v", "--remove-orphans"],
            cwd=ROOT, env=self.env, capture_output=True, timeout=300, check=False,
        )  # fmt: skip
        self.sweep()


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    try:
        compose_file = prepare()
    except ImageError as exc:
        pytest.fail(str(exc), pytrace=False)  # one line: how to get an engine; it does not skip
    stack = Stack(compose_file)
    stack.sweep(PROJECT_PREFIX)  # what earlier runs left
    left = stack.left(PROJECT_PREFIX)
    if left:
        pytest.fail(f"earlier compose tests left {', '.join(left)}; `docker rm -f` failed on them", pytrace=False)
    made = [ROOT / "groove-backup", ROOT / "keys", ROOT / "server.key"]  # what Operations' commands leave here
    _remove(made)
    yield stack
    stack.down()
    _remove(made)
    assert stack.left() == [], "the stack's `down` and a forced removal left these"


def _remove(paths: list[Path]) -> None:
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def _read_back(client: GrooveClient, ids: list[str]) -> list[str]:
    """The ids among `ids` that the coordinator does not return."""
    results = client.call_many([(C.OP_LEARNING_GET, {"id": lid}) for lid in ids], window=32)
    return [f"{lid}: {r.error}" for lid, r in zip(ids, results, strict=True) if r.error is not None]


def _host_agents(endpoint: str, tmp: Path, n: int = 2) -> list[tuple[subprocess.Popen[bytes], Path]]:
    agents = []
    for i in range(n):
        acked = tmp / f"acked-{i}.json"
        argv = groove_argv(
            "--endpoint", endpoint, "--timeout", "5", "agent", "--agent-id", f"host-{i}", "--duration", "600",
            "--in-flight", "8", "--mix", "learn=100", "--seed", str(i), "--acked-file", str(acked),
        )  # fmt: skip
        agents.append((subprocess.Popen(argv, stdout=subprocess.PIPE), acked))
    return agents


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as reply:
        return reply.status, reply.read().decode()


def test_the_stack_builds_comes_up_healthy_keeps_every_acked_write_across_a_stop_and_leaves_nothing(
    stack: Stack, tmp_path: Path
) -> None:
    figures: dict[str, Any] = {"compose": " ".join(compose())}
    _, took = stack.run("compose-build")
    figures["build_s"] = round(took, 1)
    started = time.monotonic()
    out, _ = stack.run("compose-up")
    stack.wait_healthy("the coordinator healthy")
    figures["up_to_healthy_s"] = round(time.monotonic() - started, 1)
    figures["image_mb"] = round(int(stack.docker("image", "inspect", "-f", "{{.Size}}", IMAGE)) / 1e6)
    stack.wait_dashboard()
    assert "tiers" in out or "learnings" in out  # `groove stats` from the host, through the published port
    status, page = _get(f"http://127.0.0.1:{stack.ui_port}/metrics")
    assert status == 200
    assert "groove_up 1.0" in page

    # load: the profile's agents in containers, and agents on the host keeping what was acked to them
    client = GrooveClient(stack.endpoint, timeout=30)
    host = _host_agents(stack.endpoint, tmp_path)
    stack.run("compose-load")
    replicas = len(stack.container("agents"))
    # every container agent said hello (its signal handlers are in place), then the load runs a while
    wait_for(lambda: len(client.agents("alive")) >= replicas + len(host), "the agents' hellos", timeout=120)
    written = client.stats().writes_committed
    wait_for(lambda: client.stats().writes_committed >= written + 1000, "the load's writes", timeout=120, every=0.5)
    out, _ = stack.run("compose-stop")  # SIGTERM, while the container agents and the host's write
    assert '"unverified": 0' in out  # `logs agents`: their reports
    coordinator = json.loads(stack.docker("inspect", *stack.container("coordinator")))[0]["State"]
    assert coordinator["ExitCode"] == 0  # SIGTERM, and it flushed within its grace: no SIGKILL
    acked = []
    for proc, path in host:  # their coordinator stopped under them: they say what they could not read back
        report = agent_report(proc, timeout=120, status=EXIT_UNVERIFIED)
        learned = json.loads(path.read_text())["learned"]
        assert report["unverified"] > 0, report
        assert report["verified"] + report["unverified"] == len(learned), report
        acked += learned
    for container in stack.container("agents"):
        state = json.loads(stack.docker("inspect", container))[0]["State"]
        log = subprocess.run(["docker", "logs", container], capture_output=True, text=True, check=True)
        assert state["ExitCode"] == 0, log.stderr[-3000:]  # each read back all it wrote before the coordinator stopped
        report = json.loads(log.stdout.strip().splitlines()[-1])
        assert report["mismatches"] == 0
        assert report["unverified"] == 0
        assert report["verified"] >= report["created"]  # each it wrote, and the duplicates it reinforced
        assert sum(report["ops"].values()) > 0

    stack.run("compose-restart")
    stack.wait_healthy("the coordinator healthy again")
    assert _read_back(client, acked) == []  # every acknowledged learning, after the stop and up
    figures["acked_read_back"] = len(acked)

    stack.run("compose-backup")
    stack.run("compose-restore")
    stack.wait_healthy("the restored coordinator healthy")
    assert _read_back(client, acked) == []  # the restored volume has them all

    _, took = stack.run("compose-upgrade")
    figures["rebuild_s"] = round(took, 1)  # the cached image: what an upgrade with no change costs
    stack.wait_healthy("the upgraded coordinator healthy")
    assert _read_back(client, acked[:200]) == []
    client.close()

    stack.run("compose-down")
    assert stack.left() == []
    figures["steps_s"] = stack.steps
    ARTIFACT.parent.mkdir(exist_ok=True)
    ARTIFACT.write_text(json.dumps(figures))
    print(json.dumps(figures))


def test_with_curve_the_stack_answers_the_keys_it_was_given_and_no_other(stack: Stack, tmp_path: Path) -> None:
    stack.run("compose-build")
    out, _ = stack.run("compose-curve")  # ends with `groove stats` from the host, over CURVE, with the laptop's key
    assert "learnings" in out
    stack.wait_healthy("the coordinator healthy (its healthcheck pings with the stack's key)")
    stack.wait_dashboard()
    status, page = _get(f"http://127.0.0.1:{stack.ui_port}/metrics")  # the dashboard: a client with that key too
    assert status == 200
    assert "groove_up 1.0" in page
    server_key = ROOT / "server.key"
    stranger = groove_argv("keys", "generate", "stranger", "--dir", str(tmp_path / "keys"), "--role", "admin")
    subprocess.run(stranger, check=True, capture_output=True)
    for key in (tmp_path / "keys" / "stranger.key_secret", None):  # a key it was not given; no CURVE at all
        curve = [] if key is None else ["--server-key", str(server_key), "--key", str(key)]
        argv = groove_argv("--endpoint", stack.endpoint, "--timeout", "3", *curve, "ping")
        refused = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        assert refused.returncode != 0
        assert len(refused.stderr.strip().splitlines()) == 1  # one line, no traceback
