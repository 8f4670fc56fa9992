"""A hung agent (SIGSTOP) holding a lease while the plan goes on, then SIGCONT.

Its heartbeats stop with it, so its lease lapses on time: the task goes back to the plan and another agent
does it. When the stopped agent wakes and completes the task it held, the completion is refused (`conflict`)
and it goes on with the plan. Every acked completion is stored once, by exactly one agent."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from groove.client import GrooveClient
from tests.helpers import RunningCoordinator, agent_report, spawn_agent, wait_for

_TASKS = 300
_LEASE_MS = 1500


def test_a_stopped_agents_task_goes_to_another_and_its_late_completion_is_refused(
    coordinator: RunningCoordinator, client_factory: Callable[..., GrooveClient], tmp_path: Path
) -> None:
    client = client_factory(coordinator.endpoint)
    memory = client.create_memory("/srv/hung-agent", "hung", "finish without the stalled agent")
    client.add_tasks(memory, [{"id": f"t{i}", "title": f"task {i}"} for i in range(_TASKS)])

    spawned: list[subprocess.Popen[bytes]] = []

    def agent(name: str) -> tuple[subprocess.Popen[bytes], Path]:
        acked = tmp_path / f"{name}.json"
        args = ("--agent-id", name, "--memory", memory, "--lease-ms", str(_LEASE_MS), "--acked-file", str(acked))
        spawned.append(spawn_agent(coordinator.endpoint, *args))
        return spawned[-1], acked

    try:
        stalled, stalled_acked = agent("stalled")
        wait_for(lambda: _completed(client, "stalled") >= 5, "the agent at work")
        stalled.send_signal(signal.SIGSTOP)
        stopped = time.monotonic()
        time.sleep(0.3)  # what it had in flight is answered, so the coordinator's view is settled
        # each completion claims the next task: a working agent always holds one
        (held,) = [t.id for t in client.tasks(memory, status="assigned", assigned_to="stalled")]

        rescuer, rescuer_acked = agent("rescuer")
        rescued = agent_report(rescuer, timeout=120)  # it drains the plan, the stalled agent's task included
        assert time.monotonic() - stopped > _LEASE_MS / 1000
        stalled.send_signal(signal.SIGCONT)
        woken = agent_report(stalled, timeout=60)
    finally:  # a failure above must not leave a stopped agent behind
        for proc in spawned:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    assert rescued["errors"] == 0, rescued["error_samples"]
    assert woken["errors"] == 1  # its completion of the lapsed task, and nothing else
    assert "conflict" in json.dumps(woken["error_samples"])
    assert rescued["mismatches"] == woken["mismatches"] == 0
    by_stalled = json.loads(stalled_acked.read_text())["completed"]
    by_rescuer = json.loads(rescuer_acked.read_text())["completed"]
    assert held in by_rescuer
    assert held not in by_stalled
    assert set(by_stalled).isdisjoint(by_rescuer)  # no task completed twice
    tasks = client.tasks(memory)
    assert sorted(by_stalled + by_rescuer) == sorted(t.id for t in tasks)  # every acked one, none lost
    assert {t.status for t in tasks} == {"completed"}
    again = client.task(held)
    assert again.assigned_to == "rescuer"
    assert (again.attempts, again.last_error) == (1, "the lease of 'stalled' lapsed")  # one attempt spent


def _completed(client: GrooveClient, agent_id: str) -> int:
    """How many tasks the coordinator counts this agent as having completed (0 before its hello)."""
    return sum(a.tasks_completed for a in client.agents() if a.agent_id == agent_id)
