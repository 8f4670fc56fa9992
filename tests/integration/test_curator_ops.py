"""`learning.archive` and `task.prioritize`: a curator's hand on the lifecycle and on the order of claims."""

from __future__ import annotations

import pytest

from groove.client import BadRequest, Conflict, GrooveClient, NotFound
from groove.protocol import constants as C
from tests.helpers import RunningCoordinator

_NO_SUCH = "01a20000-0000-7000-8000-000000000000"


def test_an_archived_learning_leaves_search_and_injection_until_restored(
    coordinator: RunningCoordinator, client: GrooveClient
) -> None:
    lid = client.learn("global", "solution", "Pin the flaky socket test", "It fails under load.")
    assert [hit.learning.id for hit in client.search("flaky socket", mode="keyword")] == [lid]
    client.archive(lid, "superseded by the retry helper")
    with pytest.raises(Conflict):
        client.archive(lid)
    assert client.get(lid).archived
    assert client.search("flaky socket", mode="keyword") == []
    assert client.inject("s-archived", task="flaky socket", seed=1).learnings == []
    coordinator.stop()
    coordinator.restart()  # the archive is stored, not only in the coordinator's memory
    assert client.search("flaky socket", mode="keyword") == []
    client.restore(lid)
    assert not client.get(lid).archived
    assert [hit.learning.id for hit in client.search("flaky socket", mode="keyword")] == [lid]


def test_a_reprioritised_task_is_claimed_in_its_new_place(client: GrooveClient) -> None:
    memory = client.create_memory("/srv/prio", "prio", "order the work")
    client.add_tasks(memory, [{"id": f"p{i}", "title": f"step {i}", "priority": i} for i in range(3)])
    client.prioritize_task("p0", 10)  # the lowest goes first now
    client.prioritize_task("p2", -5)  # and the highest last
    order = []
    for n in range(3):
        task = client.claim_task(memory, f"a{n}", lease_ms=60_000)
        assert task is not None
        order.append(task.id)
    assert order == ["p0", "p1", "p2"]
    assert client.task("p0").priority == 10
    client.complete_task("p0", "a0", "done")
    with pytest.raises(Conflict):
        client.prioritize_task("p0", 1)  # finished
    client.prioritize_task("p1", 3)  # held: allowed, it matters if the task comes back
    assert client.task("p1").priority == 3


def test_bad_archive_and_prioritize_requests_change_nothing(client: GrooveClient) -> None:
    with pytest.raises(NotFound):
        client.archive(_NO_SUCH)
    with pytest.raises(NotFound):
        client.prioritize_task("ghost", 1)
    bad: list[tuple[str, dict[str, object]]] = [
        (C.OP_LEARNING_ARCHIVE, {}),
        (C.OP_LEARNING_ARCHIVE, {"id": "nope"}),
        (C.OP_LEARNING_ARCHIVE, {"id": _NO_SUCH, "reason": "x" * 10_000}),
        (C.OP_TASK_PRIORITIZE, {"task_id": "t"}),
        (C.OP_TASK_PRIORITIZE, {"task_id": "t", "priority": 10**9}),
        (C.OP_TASK_PRIORITIZE, {"task_id": "t", "priority": "high"}),
    ]
    for op, body in bad:
        with pytest.raises(BadRequest):
            client.call(op, body)
