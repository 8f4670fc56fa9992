"""Agents and clients when their coordinator goes away, in either order of stopping (as compose stops services):
a client silent-for-a-deadline fails its queued calls at once, an agent whose coordinator stopped first reports
what it could not read back within one deadline, and SIGTERM ends an agent within its stop grace in any phase."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable

from groove.client import AsyncGrooveClient, CoordinatorAbsent, GrooveClient, GrooveTimeout
from groove.client.transport import Result
from groove.protocol import constants as C
from groove.swarm.worker import EXIT_UNVERIFIED
from tests.helpers import RunningCoordinator, agent_report, spawn_agent, wait_for

DEADLINE_S = 3.0


def _written(client: GrooveClient, at_least: int) -> None:
    wait_for(lambda: client.stats().writes_committed >= at_least, f"{at_least} writes committed", timeout=60)


def test_a_silent_coordinator_costs_one_deadline_and_the_calls_queued_behind_fail_at_once(
    coordinator: RunningCoordinator, client_factory: Callable[..., GrooveClient]
) -> None:
    client = client_factory(coordinator.endpoint, timeout=DEADLINE_S)
    client.ping()
    coordinator.proc.send_signal(signal.SIGSTOP)  # hung: the connection stays up, nothing answers
    try:
        started = time.monotonic()
        results = client.call_many([("ping", {})] * 200, window=8)
        took = time.monotonic() - started
    finally:
        coordinator.proc.send_signal(signal.SIGCONT)
    assert DEADLINE_S <= took < DEADLINE_S + 2.5, took  # one deadline, not 25 of them
    first, rest = results[:8], results[8:]
    # the window sent first waited its deadline; one of it to time out first says so (a call sent a moment later,
    # still waiting when the silence is found, fails unsent like the rest)
    assert all(isinstance(r.error, GrooveTimeout) for r in first)
    assert any(not isinstance(r.error, CoordinatorAbsent) for r in first)
    assert all(isinstance(r.error, CoordinatorAbsent) for r in rest)
    assert coordinator.endpoint in str(rest[0].error)
    assert client.transport.silence.absent
    # awake again: the next call is sent and answered, and the client no longer calls it absent
    assert [r.error for r in client.call_many([("ping", {})] * 20, window=8)] == [None] * 20
    assert not client.transport.silence.absent


def test_the_async_client_too_fails_the_calls_waiting_for_room_once_its_coordinator_is_silent(
    coordinator: RunningCoordinator,
) -> None:
    async def batches() -> tuple[float, list[Result], list[Result]]:
        async with AsyncGrooveClient(coordinator.endpoint, timeout=DEADLINE_S) as client:
            await client.call(C.OP_PING)
            coordinator.proc.send_signal(signal.SIGSTOP)
            try:
                started = time.monotonic()
                silent = await client.call_many([(C.OP_PING, {})] * 200, window=8)
                took = time.monotonic() - started
            finally:
                coordinator.proc.send_signal(signal.SIGCONT)
            return took, silent, await client.call_many([(C.OP_PING, {})] * 20, window=8)

    took, silent, awake = asyncio.run(batches())
    assert DEADLINE_S <= took < DEADLINE_S + 2.5, took
    assert all(isinstance(r.error, GrooveTimeout) for r in silent[:8])
    assert any(not isinstance(r.error, CoordinatorAbsent) for r in silent[:8])
    assert all(isinstance(r.error, CoordinatorAbsent) for r in silent[8:])
    assert [r.error for r in awake] == [None] * 20


def test_an_agent_whose_coordinator_stopped_first_reports_what_it_could_not_read_back_within_a_deadline(
    coordinator: RunningCoordinator, client: GrooveClient
) -> None:
    agent = spawn_agent(
        coordinator.endpoint, "--duration", "600", "--in-flight", "16", "--mix", "learn=100", timeout=DEADLINE_S
    )
    _written(client, 300)
    assert coordinator.stop() == 0  # SIGTERM: it commits and acks what it queued, then is gone
    stopped = time.monotonic()
    report = agent_report(agent, timeout=60, status=EXIT_UNVERIFIED)
    assert time.monotonic() - stopped < DEADLINE_S + 5  # not the 600 s workload, nor a deadline per read-back
    assert report["ops"]["learn"] >= 300
    assert report["unverified"] == report["created"] > 0  # nothing could be read back: every acked one is said
    assert "whole deadline" in report["unverified_why"] or "nothing heard" in report["unverified_why"]


def test_sigterm_ends_an_agent_within_its_stop_grace_while_its_coordinator_hangs(
    coordinator: RunningCoordinator, client: GrooveClient
) -> None:
    grace = 2.0
    agent = spawn_agent(
        coordinator.endpoint,
        "--duration", "600", "--in-flight", "16", "--mix", "learn=100", "--stop-grace", str(grace),
        timeout=60,
    )  # fmt: skip
    _written(client, 300)
    coordinator.proc.send_signal(signal.SIGSTOP)  # its deadline (60 s) is far off: only the grace can end it
    try:
        time.sleep(0.5)  # requests in flight and unanswered
        agent.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        report = agent_report(agent, timeout=30, status=EXIT_UNVERIFIED)
        assert time.monotonic() - signalled < grace + 3
    finally:
        coordinator.proc.send_signal(signal.SIGCONT)
    assert report["unverified"] > 0
    assert "ran out" in report["unverified_why"]


def test_sigterm_with_the_coordinator_up_reads_everything_back_and_exits_0(
    coordinator: RunningCoordinator, client: GrooveClient
) -> None:
    agent = spawn_agent(coordinator.endpoint, "--duration", "600", "--in-flight", "16", "--mix", "learn=100")
    _written(client, 300)
    agent.send_signal(signal.SIGTERM)
    report = agent_report(agent, timeout=30)
    assert report["unverified"] == 0
    assert report["verified"] == report["created"] > 0


def test_sigterm_while_the_agent_waits_to_start_ends_it_at_once(
    coordinator: RunningCoordinator, client: GrooveClient
) -> None:
    agent = spawn_agent(coordinator.endpoint, "--count", "10", "--start-at", str(time.time() + 300))
    # its hello comes after its signal handlers are in place: then it waits for its start
    wait_for(lambda: client.agents("alive"), "the agent's hello", timeout=60)
    agent.send_signal(signal.SIGTERM)
    report = agent_report(agent, timeout=10)
    assert sum(report["ops"].values()) == 0
