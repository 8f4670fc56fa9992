"""Fleets of agent workers: spawned with the coordinator's endpoint, restarted when they crash before their
time is up, stopped cleanly, their reports and latencies collected.

Two backends share this bookkeeping (`FleetBase`): `Fleet` runs `groove agent` processes on this host;
`agents.rayfleet.RayFleet` runs each worker in a Ray actor, placed over a cluster (`agents.backends` picks
one, and imports Ray only when it is chosen). A worker's options are `WorkerSpec`'s own fields, so both backends
take the same ones: the local backend turns them into `groove agent` flags, whose names mirror the fields.

Each run's latencies land in `workdir` as `AGENT.RUN.lat.json` whichever backend ran it, so `latencies()`
gathers every run's figures; the local backend also keeps each run's stdout and stderr there, so a crashed
worker's traceback can be shown and pipes never fill.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from groove.client.errors import GrooveError
from groove.protocol.keys import CurveClient
from groove.swarm.coding import groove_argv
from groove.swarm.worker import EXIT_MISMATCHES, WorkerSpec

_RESTART_MIN_LEFT_S = 1.0  # a worker that crashes with less time than this left is not restarted
# WorkerSpec fields that are not a spawn's options: the fleet sets them, or (heartbeat_s) tests alone do
_NOT_OPTIONS = frozenset({"endpoint", "agent_id", "duration", "timeout", "curve", "latencies_file", "heartbeat_s"})
WORKER_OPTIONS = frozenset(f.name for f in fields(WorkerSpec)) - _NOT_OPTIONS


class FleetError(GrooveError):
    """A fleet cannot be started: its backend is missing or cannot place the workers."""


def stop_process(proc: subprocess.Popen[bytes], grace: float = 30.0) -> int:
    """SIGTERM, then SIGKILL after `grace` seconds; returns the exit status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


@dataclass
class Member:
    """One agent id in the fleet, with the runs that have worked it."""

    agent_id: str
    options: dict[str, Any]  # WorkerSpec fields; `{run}` in a text value becomes the run's number
    ends_at: float | None  # monotonic time its duration runs out (None: it runs a count)
    node: str = ""  # where its last run was placed: this host's name, or the Ray node id
    proc: subprocess.Popen[bytes] | None = None  # the local backend's process
    runs: int = 0
    crashes: list[str] = field(default_factory=list)  # the tail of each crashed run's error
    reports: list[dict[str, Any]] = field(default_factory=list)

    def run_options(self) -> dict[str, Any]:
        """This run's options, `{run}` replaced, so a restarted worker's files do not overwrite earlier ones."""
        return {k: v.replace("{run}", str(self.runs)) if isinstance(v, str) else v for k, v in self.options.items()}

    def left(self) -> float | None:
        """Seconds of its duration left (None: it runs a count)."""
        return None if self.ends_at is None else self.ends_at - time.monotonic()


class FleetBase(ABC):
    """What both backends share: members, restarts while time is left, waiting, the gathered evidence."""

    backend = ""

    def __init__(self, endpoint: str, workdir: Path, timeout: float = 30.0, restart: bool = True) -> None:
        self.endpoint = endpoint
        self.workdir = workdir
        self.timeout = timeout
        self.restart = restart
        self.members: dict[str, Member] = {}
        self.startup_s = 0.0  # what the backend took before the first worker could be started
        workdir.mkdir(parents=True, exist_ok=True)

    def spawn(self, agent_id: str, *, duration: float | None = None, **options: Any) -> Member:
        """Start a worker for `agent_id` with these WorkerSpec options (mix, in_flight, seed, memory, ...);
        it runs for `duration` seconds (restarted within them if it crashes) or its `count` of requests."""
        unknown = set(options) - WORKER_OPTIONS
        if unknown:
            raise TypeError(f"not worker options: {', '.join(sorted(unknown))} (known: {sorted(WORKER_OPTIONS)})")
        options = {k: str(v) if isinstance(v, Path) else v for k, v in options.items()}
        ends_at = time.monotonic() + duration if duration is not None else None
        member = Member(agent_id, options, ends_at, runs=1)
        self._start(member)
        self.members[agent_id] = member  # only once started: a spawn refused leaves no member behind
        return member

    @abstractmethod
    def _start(self, member: Member) -> None:
        """Start run `member.runs` of the member."""

    @abstractmethod
    def check(self) -> list[str]:
        """Reap runs that ended: keep their reports, restart those that crashed with time left. Returns one
        line per crash, for the caller to show."""

    @abstractmethod
    def running(self) -> int:
        """Workers running now."""

    @abstractmethod
    def stop(self, grace: float = 30.0) -> None:
        """Ask every worker to stop (they finish their requests in flight and report), then reap them."""

    def crashed(self, member: Member, status: str, tail: list[str]) -> str:
        """Note a crashed run and restart it if time is left; the line that says so."""
        member.crashes.append("\n".join(tail))
        left = member.left()
        again = self.restart and left is not None and left > _RESTART_MIN_LEFT_S
        if again:
            member.runs += 1
            self._start(member)
        return (
            f"agent {member.agent_id} {status}"
            + (f"; restarting it for the remaining {left:.0f} s" if again and left is not None else "")
            + (f": {tail[-1]}" if tail else "")
        )

    def file(self, member: Member, kind: str) -> Path:
        """A file of the member's current run in the workdir."""
        return self.workdir / f"{member.agent_id}.{member.runs}.{kind}"

    def wait(self, timeout: float | None = None, poll_s: float = 0.2) -> bool:
        """Wait for every worker to end (restarting crashed ones meanwhile); False if `timeout` ran out."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            # counted before the check, so a worker that ends between the two is reaped (its report kept) before
            # this returns; counted after it, such a worker was left unreaped and its report lost
            idle = not self.running()
            self.check()
            if idle and not self.running():  # the check restarted none
                return True
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(poll_s)

    def latencies(self) -> dict[str, list[float]]:
        """Every acked request's latency in ms by kind, from every run of every worker that reported."""
        found: dict[str, list[float]] = {}
        for path in sorted(self.workdir.glob("*.lat.json")):
            for kind, values in json.loads(path.read_text()).items():
                found.setdefault(kind, []).extend(values)
        return found

    def reports(self) -> list[dict[str, Any]]:
        """Every finished run's report, in spawn order."""
        return [report for member in self.members.values() for report in member.reports]


class Fleet(FleetBase):
    """`groove agent` processes on this host, for one coordinator endpoint; with `curve`, each worker talks
    CURVE with these keys (the client's pair written once, for the workers only, into the fleet's workdir)."""

    backend = "local"

    def __init__(
        self,
        endpoint: str,
        workdir: Path,
        timeout: float = 30.0,
        restart: bool = True,
        curve: CurveClient | None = None,
    ) -> None:
        super().__init__(endpoint, workdir, timeout, restart)
        self.keys: list[str] = []
        if curve is not None:
            secret = curve.write_secret(workdir / "worker.key_secret")  # mode 0600
            # the server's key as its 40 Z85 characters; the client's pair from the file
            self.keys = ["--server-key", curve.server_public.decode(), "--key", str(secret)]

    def _start(self, member: Member) -> None:
        member.node = socket.gethostname()
        out = self.file(member, "out").open("wb")
        err = self.file(member, "err").open("wb")
        connection = ["--endpoint", self.endpoint, "--timeout", str(self.timeout), *self.keys]
        argv = groove_argv(*connection, "agent", "--agent-id", member.agent_id)
        left = member.left()
        flags = worker_flags(member.run_options()) + ([] if left is None else ["--duration", f"{max(0.1, left):.2f}"])
        flags += ["--latencies-file", str(self.file(member, "lat.json"))]
        # its own session: a Ctrl-C meant for the caller reaches the workers only as the caller's orderly stop
        member.proc = subprocess.Popen([*argv, *flags], stdout=out, stderr=err, start_new_session=True)
        out.close()
        err.close()

    def check(self) -> list[str]:
        events = []
        for member in self.members.values():
            proc = member.proc
            if proc is None or proc.poll() is None:
                continue
            member.proc = None
            report = self._report(member)
            if proc.returncode in (0, EXIT_MISMATCHES) and report is not None:
                member.reports.append(report)  # mismatches are counted in the report
                continue
            tail = self.file(member, "err").read_text(errors="replace").strip().splitlines()[-3:]
            events.append(self.crashed(member, f"exited with status {proc.returncode}", tail))
        return events

    def _report(self, member: Member) -> dict[str, Any] | None:
        lines = self.file(member, "out").read_text(errors="replace").strip().splitlines()
        try:
            report: dict[str, Any] = json.loads(lines[-1])
        except (IndexError, json.JSONDecodeError):
            return None
        return report

    def running(self) -> int:
        return sum(1 for m in self.members.values() if m.proc is not None and m.proc.poll() is None)

    def stop(self, grace: float = 30.0) -> None:
        self.restart = False
        for member in self.members.values():
            if member.proc is not None and member.proc.poll() is None:
                member.proc.send_signal(signal.SIGTERM)
        # one SIGTERM only: a second one reaching a worker that is exiting after its report kills it
        deadline = time.monotonic() + grace
        for member in self.members.values():
            if member.proc is not None:
                try:
                    member.proc.wait(max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    member.proc.kill()
                    member.proc.wait()
        self.check()


def parse_ray_address(text: str) -> tuple[str, int] | None:
    """The HOST and PORT of a Ray address (None for `auto`: the cluster this host is in); ValueError if it
    is none of auto, HOST:PORT and ray://HOST:PORT."""
    if text == "auto":
        return None
    host, _, port = text.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"Ray address {text!r}: expected auto, HOST:PORT or ray://HOST:PORT")
    return host, int(port)


def worker_flags(options: dict[str, Any]) -> list[str]:
    """`groove agent` flags for WorkerSpec options: `in_flight=4` is `--in-flight 4`, `verify=False`
    `--no-verify` (the command's options are named after the fields they set)."""
    flags: list[str] = []
    for name, value in options.items():
        flag = name.replace("_", "-")
        if isinstance(value, bool):
            flags.append(f"--{flag}" if value else f"--no-{flag}")
        elif value is not None:
            flags += [f"--{flag}", str(value)]
    return flags
