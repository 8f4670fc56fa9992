"""A spawnable agent worker: says hello, heartbeats, runs a workload, reports what happened.

The report is one JSON object (see `Report`). Evidence for the harnesses goes to files when asked:
`latencies_file` gets every acked request's latency in milliseconds by kind, `acked_file` the ids of the
learnings acked and, per learning, how many injections and attributions of it were acked (its expected
`times_injected` contribution), and for a board agent the tasks it completed and the notes it shared, so a
harness can check that nothing acked was lost or counted twice.
The worker never loads an embedding model: the coordinator embeds.
"""

from __future__ import annotations

import json
import math
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from groove.client.client import GrooveClient
from groove.client.errors import Conflict, GrooveError, NotFound
from groove.protocol import constants as C
from groove.protocol.keys import CurveClient
from groove.swarm.agentwork import AgentWork
from groove.swarm.boardwork import BoardWork, PlanWork
from groove.swarm.coding import AGENT_TIMEOUT_S, CODING_AGENTS
from groove.swarm.workloads import DEFAULT_MIX, Report, Script, Synthetic, VectorSearch, Workload, parse_mix

SYNTHETIC, VECTOR_SEARCH, BOARD = "synthetic", "search", "board"
LEASE_MS = 60_000  # a board worker's lease on the task it holds, unless told otherwise
_HOOK_TIMEOUT_S = 3.0  # what the agent's groove hooks wait for the coordinator: a hook must not stall the agent
# `groove agent`'s status when it ran to the end but a reply or a read-back was not what it should be: not a
# crash (its report is printed and kept, it is not restarted), but not a success either
EXIT_MISMATCHES = 4
# its status when acked writes could not be read back (the coordinator went silent, or the time to finish ran out)
EXIT_UNVERIFIED = 5
STOP_GRACE_S = 20.0  # after a stop, what the requests in flight and the read-back get: within compose's 30 s


@dataclass
class WorkerSpec:
    """How one worker runs: its workload (`synthetic`, `search` or a JSON-lines file), limits and evidence."""

    endpoint: str
    agent_id: str
    workload: str = SYNTHETIC
    mix: str = DEFAULT_MIX
    duration: float | None = None
    count: int | None = None
    in_flight: int = 1
    seed: int = 0
    timeout: float = 30.0
    role: str = "worker"
    verify: bool = True
    latencies_file: Path | None = None
    acked_file: Path | None = None
    start_at: float | None = None  # wall-clock time to begin at, so many workers share one window
    rate: float | None = None  # requests per second to pace the synthetic workload at (default: flat out)
    heartbeat_s: float = C.HEARTBEAT_INTERVAL_S
    curve: CurveClient | None = None  # keys for a coordinator running with --curve
    memory: str | None = None  # a working memory to work the plan of (the board workload) instead
    lease_ms: int = LEASE_MS
    fail_share: float = 0.0  # of the board's tasks, the share the agent fails (to be retried)
    projects: str | None = None  # comma-separated corpus projects the synthetic workload keeps to (no global)
    agent: str | None = None  # with `memory`: a real coding agent (claude, codex) does each task (agents.agentwork)
    repo: str | None = None  # the git repository the agent works in (a worktree per task)
    agent_timeout: float = AGENT_TIMEOUT_S  # seconds one task's agent may run before it is stopped and failed
    agent_binary: str | None = None  # the agent's program [default: `claude` or `codex` on PATH]
    stop_grace: float = STOP_GRACE_S  # once `stop` is set, no request waits longer than this

    def identity(self) -> dict[str, object]:
        """The `hello` body."""
        return {"agent_id": self.agent_id, "role": self.role, "pid": os.getpid(), "host": socket.gethostname()}


class Heartbeat(threading.Thread):
    """Sends `heartbeat` every interval on its own connection, so a busy or idle worker stays alive in the
    registry; says `hello` again when the coordinator has forgotten the agent (it restarted). Working a
    board, it also says which task it holds and renews that task's lease."""

    def __init__(self, spec: WorkerSpec, report: Report, holding: Callable[[], str | None]) -> None:
        super().__init__(name="groove-heartbeat", daemon=True)
        self.spec, self.report, self.holding = spec, report, holding
        self.stopped = threading.Event()

    def run(self) -> None:
        """Beat until stopped; a coordinator that is down is tried again at the next beat."""
        interval = self.spec.heartbeat_s
        with GrooveClient(
            self.spec.endpoint, timeout=interval, attempt_timeout=interval / 2, curve=self.spec.curve
        ) as client:
            while not self.stopped.wait(interval):
                task = self.holding()
                try:
                    if self.spec.memory is None:
                        client.heartbeat(self.spec.agent_id)
                    else:
                        client.heartbeat(self.spec.agent_id, "working" if task else "idle", task)
                    if task is not None:
                        client.renew_lease(task, self.spec.agent_id)
                except Conflict:
                    pass  # the task ended (or its lease lapsed) since the workload last said
                except NotFound:
                    try:
                        client.call(C.OP_HELLO, self.spec.identity())
                        self.report.restarts += 1
                    except GrooveError:
                        pass
                except GrooveError:
                    pass  # down or restarting; the next beat tries again

    def stop(self) -> None:
        """Stop beating (the thread ends within one interval)."""
        self.stopped.set()


def run_worker(spec: WorkerSpec, stop: threading.Event | None = None, abort: threading.Event | None = None) -> Report:
    """Run one workload until its duration or count runs out, whichever comes first, or until `stop` is set
    (requests in flight are finished), then read back what was acked unless `abort` is set."""
    stop = stop or threading.Event()
    abort = abort or threading.Event()
    kind = (spec.agent or BOARD) if spec.memory is not None else spec.workload
    report = Report(spec.agent_id, kind if kind in (SYNTHETIC, VECTOR_SEARCH, BOARD, *CODING_AGENTS) else "script")
    with GrooveClient(spec.endpoint, timeout=spec.timeout, curve=spec.curve) as client:
        client.transport.cutoff = _cutoff(stop, spec.stop_grace)
        client.call(C.OP_HELLO, spec.identity())
        client.prepare()  # before the start, not in the first timed call (workers start together)
        began = time.monotonic()
        stop_at = float("inf")
        limit = spec.count if spec.count is not None else 1 << 62

        def more(done: int) -> bool:  # a coordinator silent a whole deadline ends the workload too
            return (
                done < limit
                and time.monotonic() < stop_at
                and not stop.is_set()
                and not client.transport.silence.absent
            )

        workload = _workload(spec, client, report, more, stop.is_set)
        heartbeat = Heartbeat(spec, report, lambda: getattr(workload, "holding", None))
        heartbeat.start()
        try:
            if spec.start_at is not None:
                stop.wait(max(0.0, spec.start_at - time.time()))
            began = time.monotonic()
            stop_at = began + spec.duration if spec.duration else float("inf")
            workload.run()
            report.elapsed_s = time.monotonic() - began
            if isinstance(workload, Synthetic | PlanWork) and spec.verify:
                workload.verify(abort.is_set)
            if isinstance(workload, AgentWork):
                report.sessions = workload.sessions_report()
        finally:
            heartbeat.stop()
    evidence = workload.evidence
    if spec.latencies_file is not None:
        latencies = {kind: [round(x * 1000, 4) for x in values] for kind, values in evidence.latencies.items()}
        spec.latencies_file.write_text(json.dumps(latencies))
    if spec.acked_file is not None:
        board = workload if isinstance(workload, BoardWork) else None
        acked = {
            "learned": list(evidence.written),
            "injected": evidence.injected,
            "completed": board.completed if board is not None else [],
            "noted": list(board.noted) if board is not None else [],
        }
        spec.acked_file.write_text(json.dumps(acked))
    return report


def _cutoff(stop: threading.Event, grace: float) -> Callable[[], float]:
    """When requests give up: `grace` seconds after `stop` was first seen set (the transport looks every second)."""
    at = [math.inf]

    def cutoff() -> float:
        if stop.is_set() and at[0] == math.inf:
            at[0] = time.monotonic() + grace
        return at[0]

    return cutoff


def _workload(
    spec: WorkerSpec, client: GrooveClient, report: Report, more: Callable[[int], bool], stopping: Callable[[], bool]
) -> Workload:
    common: dict[str, Any] = {
        "client": client,
        "report": report,
        "seed": spec.seed,
        "more": more,
        "agent_id": spec.agent_id,
    }
    if spec.memory is not None and spec.agent is not None:
        return AgentWork(
            **common,
            memory_id=spec.memory,
            agent=spec.agent,
            repo=Path(spec.repo or "."),
            lease_ms=spec.lease_ms,
            agent_timeout=spec.agent_timeout,
            binary=spec.agent_binary,
            role=None if spec.role == "worker" else spec.role,
            connection=["--endpoint", spec.endpoint, "--timeout", f"{_HOOK_TIMEOUT_S:g}"],
            logs=None if spec.latencies_file is None else spec.latencies_file.parent,
            stopping=stopping,
            curve=spec.curve,
        )
    if spec.memory is not None:
        role = None if spec.role == "worker" else spec.role
        return BoardWork(**common, memory_id=spec.memory, lease_ms=spec.lease_ms, fail_share=spec.fail_share, role=role)
    if spec.workload == SYNTHETIC:
        projects = None if spec.projects is None else spec.projects.split(",")
        return Synthetic(**common, mix=parse_mix(spec.mix), in_flight=spec.in_flight, rate=spec.rate, projects=projects)
    if spec.workload == VECTOR_SEARCH:
        return VectorSearch(**common, in_flight=spec.in_flight)
    return Script(**common, path=Path(spec.workload))


def report_json(report: Report) -> str:
    """The report as one JSON line."""
    return json.dumps(asdict(report))
