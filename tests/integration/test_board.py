"""The board on a real coordinator: working memories, task graphs, claims under leases, results that teach."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from groove.client import BadRequest, Conflict, GrooveClient, NotFound
from groove.protocol import constants as C
from groove.protocol.envelope import encode_request
from groove.protocol.ids import uuid7
from tests.helpers import RunningCoordinator, agent_report, learning, run_readme_example, spawn_agent, wait_for
from tests.integration.test_crash import raw_call

PROJECT = "/srv/shop"


def plan(client: GrooveClient, tasks: list[dict[str, object]], max_attempts: int = 3) -> str:
    memory = client.create_memory(PROJECT, "checkout", "ship the new checkout", ["keep the API"], "alex", max_attempts)
    client.add_tasks(memory, tasks)
    return memory


def test_tasks_are_handed_out_by_priority_once_their_dependencies_completed(client: GrooveClient) -> None:
    memory = plan(
        client,
        [
            {"id": "schema", "title": "schema", "priority": 1},
            {"id": "api", "title": "api", "depends_on": ["schema"], "priority": 9},
            {"id": "docs", "title": "docs", "priority": 5},
            {"id": "ui", "title": "ui", "role": "frontend", "priority": 20},
        ],
    )
    first = client.claim_task(memory, "a1", 60_000)
    second = client.claim_task(memory, "a2", 60_000)
    assert first is not None
    assert second is not None
    assert (first.id, second.id) == ("docs", "schema")  # `api` waits on `schema`; `ui` only for its role
    assert client.claim_task(memory, "a3", 60_000) is None
    frontend = client.claim_task(memory, "a4", 60_000, role="frontend")
    assert frontend is not None
    assert frontend.id == "ui"
    assert client.complete_task("schema", "a2", "tables made").status == "completed"
    api = client.claim_task(memory, "a3", 60_000)
    assert api is not None
    assert api.id == "api"
    assert api.status == "assigned"
    assert api.assigned_to == "a3"
    stored = client.memory(memory)
    assert stored.goal == "ship the new checkout"
    assert stored.constraints == ["keep the API"]
    assert stored.tasks == {"assigned": 3, "completed": 1}
    assert [t.id for t in client.tasks(memory, status="assigned")] == ["ui", "api", "docs"]
    assert [m.id for m in client.memories(project=PROJECT)] == [memory]


def test_every_task_is_claimed_once_by_16_agents_and_never_before_its_dependencies(
    coordinator: RunningCoordinator, client_factory: Callable[..., GrooveClient]
) -> None:
    width, depth = 20, 6
    tasks: list[dict[str, Any]] = [
        {"id": f"t{level}-{i}", "title": f"task {level}-{i}", "priority": i % 3}
        | ({"depends_on": [f"t{level - 1}-{i}", f"t{level - 1}-{(i + 1) % width}"]} if level else {})
        for level in range(depth)
        for i in range(width)
    ]
    memory = plan(client_factory(coordinator.endpoint), tasks)
    done: list[tuple[str, str]] = []
    errors: list[BaseException] = []

    def agent(name: str) -> None:
        client = client_factory(coordinator.endpoint)
        deadline = time.monotonic() + 120
        try:
            while time.monotonic() < deadline:
                task = client.claim_task(memory, name, 30_000)
                if task is None:  # none ready: the plan is done, or the next level waits on others' work
                    if client.memory(memory).tasks == {"completed": len(tasks)}:
                        return
                    time.sleep(0.01)  # an idle agent's polling interval
                    continue
                client.complete_task(task.id, name, f"{task.id} done")
                done.append((task.id, name))
        except BaseException as exc:  # surfaced below: a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=agent, args=(f"agent-{n}",)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    assert sorted(tid for tid, _ in done) == sorted(t["id"] for t in tasks)  # each once, none lost
    stored = {t.id: t for t in client_factory(coordinator.endpoint).tasks(memory)}
    assert {t.status for t in stored.values()} == {"completed"}
    for task in stored.values():
        for dep in task.depends_on:
            finished, claimed = stored[dep].completed_at, task.assigned_at
            assert finished is not None
            assert claimed is not None
            assert finished <= claimed


def test_a_resent_claim_returns_the_same_task(coordinator: RunningCoordinator, client: GrooveClient) -> None:
    memory = plan(client, [{"title": "one"}, {"title": "two"}])
    payload = encode_request(uuid7(), "task.claim", {"memory_id": memory, "agent_id": "a1", "lease_ms": 60_000})
    first = raw_call(coordinator.endpoint, payload)
    again = raw_call(coordinator.endpoint, payload)
    assert first["body"] == again["body"]
    assert [t.assigned_to for t in client.tasks(memory)] == ["a1", None]


def test_a_lapsed_lease_requeues_the_task_and_its_late_completion_is_refused(client: GrooveClient) -> None:
    memory = plan(client, [{"id": "slow", "title": "slow"}], max_attempts=2)
    task = client.claim_task(memory, "sleepy", 300)
    assert task is not None
    wait_for(lambda: client.task("slow").status == "pending", "the lapsed lease requeued the task", timeout=10)
    lapsed = client.task("slow")
    assert lapsed.attempts == 1
    assert lapsed.assigned_to is None
    assert lapsed.last_error is not None
    with pytest.raises(Conflict):
        client.complete_task("slow", "sleepy", "too late")
    again = client.claim_task(memory, "awake", 60_000)
    assert again is not None
    assert again.id == "slow"
    assert client.renew_lease("slow", "awake", 120_000) > again.lease_until  # type: ignore[operator]
    with pytest.raises(Conflict):
        client.renew_lease("slow", "sleepy")
    assert client.complete_task("slow", "awake", "done").status == "completed"


def test_failures_retry_until_attempts_are_spent_then_block_dependents(client: GrooveClient) -> None:
    memory = plan(client, [{"id": "flaky", "title": "f"}, {"id": "after", "title": "a", "depends_on": ["flaky"]}], 2)
    client.claim_task(memory, "a1", 60_000)
    assert client.fail_task("flaky", "a1", "exploded").model_dump() == {"status": "pending", "attempts": 1}
    client.claim_task(memory, "a1", 60_000)
    assert client.fail_task("flaky", "a1", "exploded again").model_dump() == {"status": "failed", "attempts": 2}
    assert client.task("after").status == "blocked"
    assert client.claim_task(memory, "a1", 60_000) is None


def test_a_task_given_back_untried_is_pending_again_with_no_attempt_counted(client: GrooveClient) -> None:
    memory = plan(client, [{"id": "held", "title": "h"}], 1)  # one attempt: a counted one would fail it
    client.claim_task(memory, "a1", 60_000)
    client.start_task("held", "a1")
    with pytest.raises(Conflict):
        client.release_task("held", "intruder")  # only its holder gives it back
    assert client.release_task("held", "a1", "stopping: Ctrl-C").model_dump() == {"status": "pending", "attempts": 0}
    back = client.task("held")
    assert (back.assigned_to, back.started_at, back.last_error) == (None, None, "stopping: Ctrl-C")
    with pytest.raises(Conflict):
        client.release_task("held", "a1")  # not held any more
    with pytest.raises(NotFound):
        client.release_task("ghost", "a1")
    with pytest.raises(BadRequest):
        client.call(C.OP_TASK_RELEASE, {"task_id": "held"})  # no agent_id
    again = client.claim_task(memory, "a2", 60_000)  # claimable at once
    assert again is not None
    assert again.id == "held"
    assert client.complete_task("held", "a2", "done").status == "completed"


def test_a_worker_stopped_mid_plan_gives_back_the_task_it_held_with_no_attempt_counted(
    coordinator: RunningCoordinator, client: GrooveClient
) -> None:
    memory = plan(client, [{"id": f"t{i}", "title": f"task {i}"} for i in range(400)], 1)
    worker = spawn_agent(coordinator.endpoint, "--agent-id", "w1", "--memory", memory, "--duration", "60")
    wait_for(lambda: client.memory(memory).tasks.get("completed", 0) >= 20, "the worker under way", timeout=60)
    worker.send_signal(signal.SIGINT)  # Ctrl-C
    report = agent_report(worker, timeout=60)
    tasks = client.tasks(memory)
    assert {t.status for t in tasks} <= {"completed", "pending"}  # none left held until its lease lapses
    assert all(t.attempts == 0 for t in tasks)  # one attempt each: a counted one would have failed its task
    assert report["ops"].get("complete", 0) == sum(1 for t in tasks if t.status == "completed")


def test_a_plan_over_one_request_s_worth_goes_in_chunks_dependencies_first(client: GrooveClient) -> None:
    # listed dependents first: in the plan's order its first chunk would name tasks not added yet
    n = C.MAX_TASKS_PER_ADD + 1500
    tasks = [{"id": f"t{i}", "title": f"task {i}", "depends_on": [f"t{i + 1}"] if i + 1 < n else []} for i in range(n)]
    memory = client.create_memory(PROJECT, "big", "a long chain")
    ids = client.add_plan(memory, tasks)
    assert ids == [t["id"] for t in tasks]  # in the plan's order
    assert client.memory(memory).tasks == {"pending": n}
    claimed = client.claim_task(memory, "a1", 60_000)
    assert claimed is not None
    assert claimed.id == f"t{n - 1}"  # the one task that waits on nothing
    cycle: list[dict[str, object]] = [{"id": "x", "title": "x", "depends_on": ["y"]}, {"id": "y", "title": "y"}]
    cycle[1]["depends_on"] = ["x"]
    with pytest.raises(ValueError, match="cycle"):
        client.add_plan(memory, cycle)


def test_review_and_results_that_teach(client: GrooveClient) -> None:
    memory = plan(client, [{"id": "risky", "title": "migrate", "needs_review": True}])
    client.claim_task(memory, "a1", 60_000)
    client.start_task("risky", "a1")
    lesson = learning(f"project:{PROJECT}", n=3)
    elsewhere = learning("global", n=4)
    done = client.complete_task("risky", "a1", "migrated", learnings=[lesson, elsewhere], next_steps=["drop old"])
    assert done.status == "review"
    stored = [client.get(lid) for lid in done.learning_ids]
    assert [s.tier for s in stored] == [f"project:{PROJECT}", "user"]
    assert all(s.source == {"type": "task", "task_id": "risky", "memory_id": memory, "agent_id": "a1"} for s in stored)
    assert client.review_task("risky", "lead", "needs_rework", "add a rollback") == "pending"
    client.claim_task(memory, "a2", 60_000)
    client.complete_task("risky", "a2", "migrated, with a rollback")
    assert client.review_task("risky", "lead", "approved") == "completed"
    final = client.task("risky")
    assert final.result is not None
    assert final.result["summary"] == "migrated, with a rollback"
    assert (final.review_status, final.reviewed_by) == ("approved", "lead")
    with pytest.raises(Conflict):
        client.review_task("risky", "lead", "rejected")


def test_bad_plans_and_wrong_holders_are_refused_and_change_nothing(client: GrooveClient) -> None:
    memory = plan(client, [{"id": "a", "title": "a"}])
    with pytest.raises(BadRequest, match="no task 'ghost'"):
        client.add_tasks(memory, [{"id": "b", "title": "b", "depends_on": ["ghost"]}])
    with pytest.raises(BadRequest, match="cycle"):
        client.add_tasks(
            memory, [{"id": "x", "title": "x", "depends_on": ["y"]}, {"id": "y", "title": "y", "depends_on": ["x"]}]
        )
    with pytest.raises(Conflict):
        client.add_tasks(memory, [{"id": "a", "title": "again"}])
    with pytest.raises(BadRequest):
        client.add_tasks(memory, [{"id": "has space", "title": "x"}])
    assert [t.id for t in client.tasks(memory)] == ["a"]
    with pytest.raises(NotFound):
        client.claim_task(uuid7(), "a1", 60_000)
    with pytest.raises(NotFound):
        client.task("nope")
    with pytest.raises(BadRequest):
        client.claim_task(memory, "a1", 5)  # a lease shorter than the minimum
    client.claim_task(memory, "a1", 60_000)
    with pytest.raises(Conflict):
        client.complete_task("a", "intruder", "mine now")
    with pytest.raises(Conflict):
        client.review_task("a", "lead", "approved")
    client.set_memory_status(memory, "paused")
    client.add_tasks(memory, [{"id": "b", "title": "b"}])
    assert client.claim_task(memory, "a2", 60_000) is None  # a paused memory hands out nothing
    client.cancel_task("a")
    with pytest.raises(Conflict):
        client.cancel_task("a")
    assert client.task("a").status == "cancelled"
    client.set_memory_status(memory, "completed")
    with pytest.raises(Conflict):
        client.add_tasks(memory, [{"title": "late"}])
    assert client.memory(memory).tasks == {"cancelled": 1, "pending": 1}


def test_the_board_survives_a_kill_9(coordinator: RunningCoordinator, client: GrooveClient) -> None:
    memory = plan(client, [{"id": "kept", "title": "kept"}, {"id": "next", "title": "next", "depends_on": ["kept"]}])
    claimed = client.claim_task(memory, "a1", 600_000)
    assert claimed is not None
    coordinator.kill()
    coordinator.restart()
    after = client.task("kept")
    assert (after.status, after.assigned_to, after.lease_until) == ("assigned", "a1", claimed.lease_until)
    assert client.claim_task(memory, "a2", 60_000) is None  # still held; `next` still waits on it
    client.complete_task("kept", "a1", "done")
    nxt = client.claim_task(memory, "a2", 60_000)
    assert nxt is not None
    assert nxt.id == "next"


def test_the_readme_board_example_runs(coordinator: RunningCoordinator, client: GrooveClient, tmp_path: Path) -> None:
    lines = run_readme_example("board", coordinator.endpoint, tmp_path).stdout.splitlines()
    assert lines[:3] == ["refund-schema: completed", "refund-api: completed", "refund-docs: review"]
    assert lines[3:] == ["completed", "{'completed': 3}", "['add the refunds table: amounts are integer cents']"]
    (learned,) = client.iter_learnings(tier=f"project:{PROJECT}")  # the same lesson three times: reinforced
    assert learned.source["type"] == "task"
    assert learned.confidence > 0.5


def test_a_completion_can_claim_the_next_task_in_the_same_write(client: GrooveClient) -> None:
    memory = plan(client, [{"id": "one", "title": "1"}, {"id": "two", "title": "2", "depends_on": ["one"]}])
    client.claim_task(memory, "a1", 60_000)
    done = client.complete_task("one", "a1", "done", next_lease_ms=60_000)
    assert done.status == "completed"
    assert done.next is not None
    assert (done.next.id, done.next.assigned_to) == ("two", "a1")  # ready because `one` completed just before
    last = client.complete_task("two", "a1", "done", next_lease_ms=60_000)
    assert last.next is None
    assert client.memory(memory).tasks == {"completed": 2}


AGENT_THAT_DIES = """
import sys, time
from groove.client import GrooveClient
client = GrooveClient(sys.argv[1])
client.hello("doomed", status="working")
task = client.claim_task(sys.argv[2], "doomed", 600_000)
client.heartbeat("doomed", status="working", task_id=task.id)
print(task.id, flush=True)
time.sleep(600)
"""


@pytest.mark.slow
def test_an_agent_killed_with_kill_9_loses_its_lease_once_it_is_gone(
    coordinator: RunningCoordinator, client: GrooveClient
) -> None:
    memory = plan(client, [{"id": "doomed-task", "title": "t"}])
    agent = subprocess.Popen(
        [sys.executable, "-c", AGENT_THAT_DIES, coordinator.endpoint, memory], stdout=subprocess.PIPE, text=True
    )
    assert agent.stdout is not None
    assert agent.stdout.readline().strip() == "doomed-task"
    (seen,) = [a for a in client.agents() if a.agent_id == "doomed"]
    assert (seen.status, seen.task_id) == ("working", "doomed-task")
    agent.kill()
    agent.wait()
    # gone after the alive window (15 s without a word), then released within a second: not after its 10 min
    requeued = wait_for(lambda: client.task("doomed-task").status == "pending", "the lease released", timeout=30)
    assert requeued
    task = client.task("doomed-task")
    assert task.attempts == 1
    assert task.last_error == "agent 'doomed' is gone"
    with pytest.raises(Conflict):
        client.complete_task("doomed-task", "doomed", "back from the dead")
    client.claim_task(memory, "a2", 60_000)
    client.complete_task("doomed-task", "a2", "done")
    (counted,) = [a for a in client.agents() if a.agent_id == "doomed"]
    assert (counted.tasks_completed, counted.tasks_failed) == (0, 0)


def test_decisions_artifacts_and_checkpoints_are_kept_with_the_memory(client: GrooveClient) -> None:
    memory = plan(client, [{"id": "orm", "title": "pick the ORM"}, {"id": "models", "title": "models"}])
    chosen = client.record_decision(
        memory, "which ORM?", "SQLAlchemy", "the team knows it", "a1", alternatives=["Django ORM"],
        task_id="orm", affects_tasks=["models"], confidence="high",
    )  # fmt: skip
    fixed = client.record_decision(memory, "tabs?", "spaces", "PEP 8", "a1", reversible=False)
    client.reverse_decision(chosen, "lead")
    with pytest.raises(Conflict):
        client.reverse_decision(chosen, "lead")  # reversed already
    with pytest.raises(Conflict):
        client.reverse_decision(fixed, "lead")  # not reversible
    with pytest.raises(BadRequest):
        client.record_decision(memory, "q", "c", "r", "a1", affects_tasks=["elsewhere"])
    assert [d.id for d in client.decisions(memory, standing=True)] == [fixed]
    (reversed_one,) = client.decisions(memory, task_id="orm")
    assert (reversed_one.reversed_by, reversed_one.alternatives) == ("lead", ["Django ORM"])

    first = client.record_artifact(memory, "models", "code", "app/models.py", "sha-1", "a1", git_branch="feat")
    same = client.record_artifact(memory, "models", "code", "app/models.py", "sha-1", "a1")
    second = client.record_artifact(memory, "models", "code", "app/models.py", "sha-2", "a2")
    assert (first.version, same.id, second.version) == (1, first.id, 2)
    versions = client.artifacts(memory, path="app/models.py")
    assert [(a.version, a.previous_id, a.checksum) for a in versions] == [(1, None, "sha-1"), (2, first.id, "sha-2")]
    with pytest.raises(BadRequest):
        client.record_artifact(memory, "ghost", "code", "x.py", "sha", "a1")

    mark = client.record_checkpoint(memory, "a1", "feat", "abc123", "/work/a1", task_id="models", trigger="milestone",
                                    staged_changes=["app/models.py"])  # fmt: skip
    (kept,) = client.checkpoints(memory, agent_id="a1")
    assert (kept.id, kept.trigger, kept.staged_changes) == (mark, "milestone", ["app/models.py"])
    with pytest.raises(NotFound):
        client.record_checkpoint(uuid7(), "a1", "b", "c", "/w")
    with pytest.raises(NotFound):
        client.reverse_decision(uuid7(), "lead")


def test_nudges_reach_their_agents_once_acknowledged_and_again_until_then(
    coordinator: RunningCoordinator, client: GrooveClient
) -> None:
    memory = plan(client, [{"title": "t"}])
    direct = client.send_nudge("a1", memory, "rebase on main", "lead", priority="low")
    urgent = client.send_nudge("role:qa", memory, "stop: the build is red", "lead", priority="critical")
    idle = client.send_nudge("all", memory, "when idle: update the docs", "lead", delivery="when_idle")
    first = client.poll_nudges("a1", role="qa")
    assert [n.id for n in first] == [urgent, direct]  # highest priority first; when_idle waits
    assert client.poll_nudges("a1", role="qa") == []  # delivered: not again on the same connection
    assert [n.id for n in client.poll_nudges("a1", role="qa", idle=True)] == [idle]
    assert [n.id for n in client.poll_nudges("a2")] == []  # a2 is neither a1 nor qa, and not idle
    assert client.ack_nudges("a1", [urgent, idle]) == 2
    assert client.ack_nudges("a1", [urgent]) == 0
    assert [n.id for n in client.poll_nudges("a1", role="qa", idle=True, again=True)] == [direct]  # unacked only
    coordinator.kill()
    coordinator.restart()  # deliveries are not kept: what was not acknowledged comes again, acknowledged never
    assert [n.id for n in client.poll_nudges("a1", role="qa", idle=True)] == [direct]
    with pytest.raises(NotFound):
        client.ack_nudges("a1", [uuid7()])
    with pytest.raises(NotFound):
        client.send_nudge("a1", uuid7(), "m", "lead")
    with pytest.raises(BadRequest):
        client.send_nudge("a1", memory, "m", "lead", priority="urgent")


def test_an_immediate_nudge_is_pushed_to_a_connected_agent(
    coordinator: RunningCoordinator, client: GrooveClient, client_factory: Callable[..., GrooveClient]
) -> None:
    memory = plan(client, [{"title": "t"}])
    agent = client_factory(coordinator.endpoint)
    agent.hello("pushed-to", role="qa")
    other = client_factory(coordinator.endpoint)
    other.hello("not-me", role="dev")
    sent = time.monotonic()
    nudge = client.send_nudge("role:qa", memory, "look at the red build now", "lead", "high", "immediate")
    (pushed,) = agent.pushed_nudges(wait=10)
    assert time.monotonic() - sent < 5
    assert (pushed.id, pushed.message, pushed.priority) == (nudge, "look at the red build now", "high")
    assert other.pushed_nudges(wait=0.3) == []
    assert [n.id for n in agent.poll_nudges("pushed-to", role="qa")] == [nudge]  # until acknowledged
    agent.ack_nudges("pushed-to", [nudge])
