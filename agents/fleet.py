"""A fleet of `groove agent` worker processes: spawned with the coordinator's endpoint, restarted when they
crash before their time is up, stopped cleanly, their reports collected.

Used by `groove swarm`, the orchestrator and the load harness. Each worker's report (its last stdout line)
its stderr and its latencies go to files in `workdir`, so a crashed worker's traceback can be shown, pipes
never fill, and `latencies()` gathers every run's figures.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.worker import EXIT_MISMATCHES

_RESTART_MIN_LEFT_S = 1.0  # a worker that crashes with less time than this left is not restarted


def groove_argv(*args: str) -> list[str]:
    """The command line that runs `groove ARGS` with this interpreter."""
    return [sys.executable, "-m", "cli", *args]


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
    """One agent id in the fleet, with the processes that have run it."""

    agent_id: str
    options: list[str]
    ends_at: float | None  # monotonic time its --duration runs out (None: it runs a --count)
    proc: subprocess.Popen[bytes] | None = None
    runs: int = 0
    crashes: list[str] = field(default_factory=list)  # the tail of each crashed run's stderr
    reports: list[dict[str, Any]] = field(default_factory=list)


class Fleet:
    """Worker processes for one coordinator endpoint."""

    def __init__(self, endpoint: str, workdir: Path, timeout: float = 30.0, restart: bool = True) -> None:
        self.endpoint = endpoint
        self.workdir = workdir
        self.timeout = timeout
        self.restart = restart
        self.members: dict[str, Member] = {}
        workdir.mkdir(parents=True, exist_ok=True)

    def spawn(self, agent_id: str, *options: str, duration: float | None = None) -> Member:
        """Start `groove agent --agent-id ID OPTIONS [--duration D]` (give --duration here, not in options).
        `{run}` in an option becomes the run's number, so a restarted worker's files do not overwrite the
        ones its earlier runs left."""
        ends_at = time.monotonic() + duration if duration is not None else None
        member = Member(agent_id, list(options), ends_at)
        self.members[agent_id] = member
        self._start(member)
        return member

    def _start(self, member: Member) -> None:
        member.runs += 1
        extra = []
        if member.ends_at is not None:
            extra = ["--duration", f"{max(0.1, member.ends_at - time.monotonic()):.2f}"]
        out = self._file(member, "out").open("wb")
        err = self._file(member, "err").open("wb")
        argv = groove_argv(
            "--endpoint", self.endpoint, "--timeout", str(self.timeout), "agent", "--agent-id", member.agent_id
        )
        # its own session: a Ctrl-C meant for the caller reaches the workers only as the caller's orderly stop
        options = [o.replace("{run}", str(member.runs)) for o in member.options]
        extra += ["--latencies-file", str(self._file(member, "lat.json"))]
        member.proc = subprocess.Popen([*argv, *options, *extra], stdout=out, stderr=err, start_new_session=True)
        out.close()
        err.close()

    def _file(self, member: Member, kind: str) -> Path:
        return self.workdir / f"{member.agent_id}.{member.runs}.{kind}"

    def check(self) -> list[str]:
        """Reap workers that ended: keep their reports, restart those that crashed with time left.
        Returns one line per crash, for the caller to show."""
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
            tail = self._file(member, "err").read_text(errors="replace").strip().splitlines()[-3:]
            member.crashes.append("\n".join(tail))
            left = None if member.ends_at is None else member.ends_at - time.monotonic()
            again = self.restart and left is not None and left > _RESTART_MIN_LEFT_S
            events.append(
                f"agent {member.agent_id} exited with status {proc.returncode}"
                + (f"; restarting it for the remaining {left:.0f} s" if again else "")
                + (f": {tail[-1]}" if tail else "")
            )
            if again:
                self._start(member)
        return events

    def _report(self, member: Member) -> dict[str, Any] | None:
        lines = self._file(member, "out").read_text(errors="replace").strip().splitlines()
        try:
            report: dict[str, Any] = json.loads(lines[-1])
        except (IndexError, json.JSONDecodeError):
            return None
        return report

    def running(self) -> int:
        """Workers running now."""
        return sum(1 for m in self.members.values() if m.proc is not None and m.proc.poll() is None)

    def wait(self, timeout: float | None = None, poll_s: float = 0.2) -> bool:
        """Wait for every worker to end (restarting crashed ones meanwhile); False if `timeout` ran out."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self.check()
            if not self.running():
                return True
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(poll_s)

    def stop(self, grace: float = 30.0) -> None:
        """Ask every worker to stop (they finish their requests in flight and report), then reap them."""
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
