"""The load harness's `--cluster N`: the same agents against N coordinators that partition the tiers.

The corpus's six projects are dealt round-robin to coordinators c0..cN-1 (by prefix in a cluster map, c0 the
home); agent i works against coordinator i mod N and writes only the projects that coordinator owns
(`groove agent --projects`, no global learnings), so every write lands on its owner. The single-coordinator
run of the same invocation gives each agent the same projects, so the two runs differ only in how many
coordinators serve them. Each coordinator's acked writes are read back from it.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.evidence import PER_AGENT_S, SETTLE_S, readback, spawn_agent, summarize
from groove.cli.processes import start_coordinator
from groove.client import GrooveClient
from groove.swarm.corpus import PROJECT_ROOT, load
from groove.swarm.fleet import Fleet, stop_process


def plan(n: int) -> tuple[list[str], dict[str, list[str]]]:
    """The coordinators' names and the corpus projects each owns."""
    names = [f"c{i}" for i in range(n)]
    projects = load().projects
    return names, {name: [p for j, p in enumerate(projects) if j % n == i] for i, name in enumerate(names)}


def agent_projects(n: int, agents: int) -> list[str]:
    """Agent i's `--projects`: those of coordinator i mod n."""
    names, owned = plan(n)
    return [",".join(owned[names[i % n]]) for i in range(agents)]


def map_text(sockets: Path, n: int) -> str:
    """The cluster map: ipc endpoints (known before the coordinators start, no port to guess)."""
    names, owned = plan(n)
    coordinators = "".join(f'{name} = "ipc://{sockets}/{name}.sock"\n' for name in names)
    projects = "".join(f'"{PROJECT_ROOT}/{p}" = "{name}"\n' for name in names for p in owned[name])
    return f'home = "{names[0]}"\n\n[coordinators]\n{coordinators}\n[projects]\n{projects}'


def run_cluster(args: dict[str, Any], work: Path, serve: list[str]) -> dict[str, Any]:
    """Start the N coordinators, run the agents against their owners, read every acked write back."""
    n = args["cluster"]
    names, _ = plan(n)
    sockets = Path(tempfile.mkdtemp(prefix="groove-lc-"))  # ipc paths must stay short
    work.mkdir(parents=True, exist_ok=True)
    cluster_map = work / "cluster.toml"
    cluster_map.write_text(map_text(sockets, n))
    started: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for name in names:
            data = work / name
            data.mkdir(parents=True)
            extra = ["--bind", f"ipc://{sockets}/{name}.sock", "--cluster", str(cluster_map), "--cluster-name", name]
            started[name], _ = start_coordinator(data, [*serve, *extra])
        fleets = {name: Fleet(f"ipc://{sockets}/{name}.sock", work / name / "agents", 120.0, False) for name in names}
        projects = agent_projects(n, args["agents"])
        start_at = time.time() + SETTLE_S + PER_AGENT_S * args["agents"]
        for i in range(args["agents"]):
            spawn_agent(fleets[names[i % n]], i, args, start_at, projects[i])
        for fleet in fleets.values():
            fleet.wait(timeout=args["duration"] + 600)
        result: dict[str, Any] = {"coordinators": {}}
        for name, fleet in fleets.items():
            failed = [m.agent_id for m in fleet.members.values() if not m.reports]
            if failed:
                raise RuntimeError(f"agents {failed} of {name} ended without a report")
            part = summarize(fleet.reports(), fleet.latencies(), args["duration"])
            with GrooveClient(fleet.endpoint, timeout=600) as client:
                part["readback"] = readback(client, fleet.workdir, preloaded=0)
            result["coordinators"][name] = part
        learn = [part["kinds"].get("learn", {}) for part in result["coordinators"].values()]
        result["writes_per_s"] = round(sum(k.get("per_s", 0.0) for k in learn), 1)
        result["p99_ms"] = max((k.get("p99_ms", 0.0) for k in learn), default=0.0)
        return result
    finally:
        for proc in started.values():
            stop_process(proc)
        shutil.rmtree(sockets, ignore_errors=True)
