"""A fleet's worker options are WorkerSpec's fields; the local backend turns them into `groove agent` flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from groove.cli.agent import agent_command
from groove.swarm.backends import open_fleet
from groove.swarm.fleet import WORKER_OPTIONS, Fleet, FleetBase, Member, worker_flags


def test_every_worker_option_is_a_groove_agent_option_of_the_same_name() -> None:
    params = {p.name for p in agent_command.params}
    assert sorted(WORKER_OPTIONS - params) == []


def test_flags_parse_back_to_the_options_they_came_from() -> None:
    options = {
        "mix": "learn=2,search=1",
        "in_flight": 4,
        "seed": 7,
        "verify": False,
        "start_at": 1700000000.5,
        "memory": "mem-1",
        "fail_share": 0.25,
        "lease_ms": 30_000,
        "count": None,  # None: the option is left out
    }
    flags = worker_flags(options)
    assert "--count" not in flags
    assert "--no-verify" in flags
    parsed = agent_command.make_context("agent", [*flags, "--duration", "1"], obj={}).params
    assert {k: parsed[k] for k in options if k != "count"} == {k: v for k, v in options.items() if k != "count"}


def test_an_unknown_option_or_backend_is_refused_before_anything_starts(tmp_path: Path) -> None:
    fleet = Fleet("tcp://127.0.0.1:1", tmp_path)
    with pytest.raises(TypeError, match="not worker options: inflight"):
        fleet.spawn("a", inflight=3, duration=1)
    assert fleet.members == {}
    with pytest.raises(ValueError, match="unknown backend 'k8s'"):
        open_fleet("k8s", "tcp://127.0.0.1:1", tmp_path, agents=1)
    with pytest.raises(ValueError, match="address: only for the ray backend"):
        open_fleet("local", "tcp://127.0.0.1:1", tmp_path, agents=1, address="auto")


class _EndsBetweenLooks(FleetBase):
    """One worker that ends just after a check looked at it, so the check reaps it only the next time."""

    def _start(self, member: Member) -> None:
        self.ended = False

    def check(self) -> list[str]:
        for member in self.members.values():
            if self.ended and not member.reports:
                member.reports.append({"agent_id": member.agent_id})
        return []

    def running(self) -> int:
        self.ended = True  # it ends now: after any check before this count, before any check after it
        return 0

    def stop(self, grace: float = 30.0) -> None:
        self.check()


def test_waiting_keeps_the_report_of_a_worker_that_ends_between_a_check_and_the_count(tmp_path: Path) -> None:
    # `benchmarks.load` once failed with "agents ['load-0'] ended without a report: []": its worker ended after
    # the wait's check and before its count of running workers, and the wait returned with it unreaped
    fleet = _EndsBetweenLooks("tcp://127.0.0.1:1", tmp_path)
    fleet.spawn("a", duration=1)
    assert fleet.wait(timeout=5, poll_s=0.01)
    assert fleet.reports() == [{"agent_id": "a"}]
