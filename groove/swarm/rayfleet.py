"""The Ray backend of fleets: each agent worker runs inside a Ray actor, placed over a Ray cluster.

One actor per worker, with `cpus_per_agent` CPUs, in a placement group whose bundles are SPREAD over the
cluster's nodes, so a fleet larger than one host uses every host. The actor runs `run_worker` in a thread
(`max_concurrency=2` leaves the other for `halt`, the backend's SIGTERM), and returns its report, latencies
and acked evidence through Ray: the driver needs no filesystem shared with the nodes. Ray restarts an actor
whose process dies (up to `RAY_MAX_RESTARTS` times); the fleet then runs it again for the time left, as the
local backend restarts a crashed process.

The nodes need groove installed (`pip install 'groove[ray]'`), as any Ray application needs its code there,
and must reach the coordinator's endpoint; with CURVE, each worker is handed the client key pair.
Imported only when the Ray backend is chosen: Ray is an optional extra. A process that has loaded usearch
aborts in `ray.init` (`std::regex_error`: their C++ runtimes clash); the coordinator holds usearch, and a
fleet's driver never imports it, so keep it that way.
"""

from __future__ import annotations

import json
import logging
import math
import os
import socket
import tempfile
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError
from ray.util.placement_group import placement_group, placement_group_table, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from groove.protocol.keys import CurveClient
from groove.swarm.fleet import FleetBase, FleetError, Member, parse_ray_address
from groove.swarm.worker import WorkerSpec, run_worker

RAY_MAX_RESTARTS = 3  # times Ray restarts a worker's actor after its process died
PLACE_TIMEOUT_S = 60.0  # for the cluster to find room for every worker
_PROBE_TIMEOUT_S = 5.0


class AgentActor:
    """One agent worker in a Ray actor: `run` works a spec, `halt` asks it to stop as SIGTERM asks a process."""

    def __init__(self) -> None:
        self.stop, self.abort = threading.Event(), threading.Event()

    def run(self, fields: dict[str, Any], acked: bool) -> dict[str, Any]:
        """Run one worker (WorkerSpec fields) to its end; its report, latencies, acked evidence and node."""
        self.stop.clear()
        self.abort.clear()
        with tempfile.TemporaryDirectory(prefix="groove-agent-") as tmp:
            lat, ack = Path(tmp) / "lat.json", Path(tmp) / "acked.json"
            spec = WorkerSpec(**fields, latencies_file=lat, acked_file=ack if acked else None)
            report = run_worker(spec, self.stop, self.abort)
            return {
                "report": asdict(report),
                "latencies": json.loads(lat.read_text()),
                "acked": json.loads(ack.read_text()) if acked else None,
                "node": ray.get_runtime_context().get_node_id(),
            }

    def ready(self) -> None:
        """Answers once the actor is up (after a restart)."""

    def halt(self) -> None:
        """The first call stops the workload (requests in flight finish, acked writes are read back); a
        second skips the read-back."""
        (self.abort if self.stop.is_set() else self.stop).set()


RemoteAgent = ray.remote(AgentActor)


class RayFleet(FleetBase):
    """Agent workers as Ray actors over a cluster: `address` None starts a local Ray for the fleet (and stops
    it with the fleet), `auto` joins the cluster this host belongs to, `ray://HOST:PORT` a remote one."""

    backend = "ray"

    def __init__(
        self,
        endpoint: str,
        workdir: Path,
        *,
        agents: int,
        address: str | None = None,
        cpus_per_agent: float = 1.0,
        curve: CurveClient | None = None,
        timeout: float = 30.0,
        restart: bool = True,
        place_timeout: float = PLACE_TIMEOUT_S,
    ) -> None:
        super().__init__(endpoint, workdir, timeout, restart)
        began = time.monotonic()
        self.curve = curve
        self.cpus_per_agent = cpus_per_agent
        self.actors: dict[str, Any] = {}
        self.pending: dict[str, Any] = {}  # agent id -> the ObjectRef of its current run (or readiness probe)
        self.restarting: set[str] = set()  # agents whose actor Ray is restarting: the probe, then the run
        self.acked_paths: dict[str, str | None] = {}
        self.owns_ray = not ray.is_initialized()
        if self.owns_ray:
            _probe(address)
            cpus = None if address is not None else _local_cpus(agents * cpus_per_agent)
            try:
                # `local`: a Ray of the fleet's own, even if another runs on this machine (with no address, Ray
                # joins one started by `ray start` here, and refuses the CPU count given for a new one)
                ray.init(address=address or "local", num_cpus=cpus, logging_level=logging.ERROR, log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise FleetError(f"cannot reach the Ray cluster at {address}: {exc}") from None
        self.group = placement_group([{"CPU": cpus_per_agent}] * agents, strategy="SPREAD")
        try:
            ray.get(self.group.ready(), timeout=place_timeout)
        except GetTimeoutError:
            have = ray.cluster_resources().get("CPU", 0)  # type: ignore[no-untyped-call]
            self.close()
            raise FleetError(
                f"the Ray cluster has {have:g} CPUs; {agents} agents x {cpus_per_agent:g} CPUs did not fit "
                f"within {place_timeout:g} s (lower --cpus-per-agent, or add nodes)"
            ) from None
        self.bundle_nodes: dict[int, str] = placement_group_table(self.group)["bundles_to_node_id"]
        self.startup_s = time.monotonic() - began  # Ray started or joined, and room found for every worker

    def _start(self, member: Member) -> None:
        agent_id = member.agent_id
        if agent_id not in self.actors:
            index = len(self.actors)
            if index >= len(self.bundle_nodes):
                raise FleetError(f"this fleet was placed for {len(self.bundle_nodes)} agents; cannot add more")
            strategy = PlacementGroupSchedulingStrategy(self.group, placement_group_bundle_index=index)
            self.actors[agent_id] = RemoteAgent.options(
                num_cpus=self.cpus_per_agent,
                max_restarts=RAY_MAX_RESTARTS,
                max_concurrency=2,
                scheduling_strategy=strategy,
            ).remote()
            member.node = self.bundle_nodes[index]
        if agent_id in self.restarting:
            # a call made while Ray restarts the actor fails at once; this one is retried until it is back
            self.pending[agent_id] = self.actors[agent_id].ready.options(max_task_retries=-1).remote()
            return
        options = member.run_options()
        acked = self.acked_paths[agent_id] = options.pop("acked_file", None)
        left = member.left()
        fields = options | {
            "endpoint": self.endpoint,
            "agent_id": agent_id,
            "timeout": self.timeout,
            "curve": self.curve,
            "duration": None if left is None else max(0.1, left),
        }
        self.pending[agent_id] = self.actors[agent_id].run.remote(fields, acked=acked is not None)

    def check(self) -> list[str]:
        events: list[str] = []
        if not self.pending:
            return events
        done, _ = ray.wait(list(self.pending.values()), num_returns=len(self.pending), timeout=0)
        finished = {ref.hex() for ref in done}
        for agent_id, ref in list(self.pending.items()):
            if ref.hex() not in finished:
                continue
            member = self.members[agent_id]
            del self.pending[agent_id]
            try:
                result = ray.get(ref)
            except RayActorError as exc:
                if agent_id in self.restarting:  # Ray's restarts are used up
                    self.restarting.discard(agent_id)
                    member.runs -= 1  # the run it was to be restarted for never began
                    events.append(f"agent {agent_id}: Ray did not restart its actor ({type(exc).__name__})")
                    continue
                self.restarting.add(agent_id)  # its process died: Ray restarts the actor, then it runs again
                events.append(self.crashed(member, "lost its Ray actor", [f"the actor died ({type(exc).__name__})"]))
                if agent_id not in self.pending:  # too little time left to run again
                    self.restarting.discard(agent_id)
                continue
            except RayTaskError as exc:
                cause = exc.cause if exc.cause is not None else exc
                events.append(self.crashed(member, "failed", [f"{type(cause).__name__}: {cause}"]))
                continue
            if agent_id in self.restarting:  # back: the run it was restarted for, unless the fleet is stopping
                self.restarting.discard(agent_id)
                if self.restart:
                    self._start(member)
                else:
                    member.runs -= 1
                continue
            self._keep(member, result)
        return events

    def _keep(self, member: Member, result: dict[str, Any]) -> None:
        member.reports.append(result["report"])
        member.node = result["node"]
        self.file(member, "lat.json").write_text(json.dumps(result["latencies"]))
        path = self.acked_paths.get(member.agent_id)
        if path is not None and result["acked"] is not None:
            Path(path).write_text(json.dumps(result["acked"]))

    def running(self) -> int:
        if not self.pending:
            return 0
        _, waiting = ray.wait(list(self.pending.values()), num_returns=len(self.pending), timeout=0)
        return len(waiting)

    def kill(self, agent_id: str) -> None:
        """Kill the actor's process (as a crash would); Ray restarts it while restarts are left."""
        ray.kill(self.actors[agent_id], no_restart=False)

    def stop(self, grace: float = 30.0) -> None:
        self.restart = False
        for agent_id in self.pending:
            self.actors[agent_id].halt.remote()
        if self.pending:
            ray.wait(list(self.pending.values()), num_returns=len(self.pending), timeout=grace)
        self.check()
        for agent_id in list(self.pending):  # past the grace: killed, no report
            ray.kill(self.actors[agent_id], no_restart=True)
            del self.pending[agent_id]
        self.close()

    def close(self) -> None:
        """Release the actors and the placement group, and stop Ray if this fleet started it."""
        if not ray.is_initialized():
            return
        for actor in self.actors.values():
            ray.kill(actor, no_restart=True)
        remove_placement_group(self.group)
        if self.owns_ray:
            ray.shutdown()


def _probe(address: str | None) -> None:
    """Fail at once when a cluster's HOST:PORT does not answer: Ray itself retries for minutes, silently."""
    try:
        where = None if address is None else parse_ray_address(address)
    except ValueError as exc:
        raise FleetError(str(exc)) from None
    if where is None:
        return
    try:
        socket.create_connection(where, timeout=_PROBE_TIMEOUT_S).close()
    except OSError as exc:
        raise FleetError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}") from None


def _local_cpus(needed: float) -> int:
    """The CPUs a Ray started for the fleet declares: room for every worker. CPUs are Ray's bookkeeping, not
    a limit, and agents mostly wait on the coordinator, so a 2-core host runs eight; a cluster declares its
    own."""
    return max(os.cpu_count() or 1, math.ceil(needed))
