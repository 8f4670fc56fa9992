"""Several writers (`--writers N`): each tier committed by one writer, the writes that may span tiers with every
writer held, each write answered once and a tier's writes in their order."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from groove.coordinator.errors import Rejected
from groove.coordinator.metrics import Metrics
from groove.coordinator.search.changes import DerivedChanges
from groove.coordinator.store.tierset import TierSet
from groove.coordinator.write.batcher import Batcher, Outcome
from groove.coordinator.write.ops import OUTCOME, PUT, WriteItem
from groove.protocol.ids import uuid7
from groove.protocol.models import LearningPutRequest, OutcomeRecordRequest
from tests.helpers import learning

APPLIED_ONE = {"applied": 1, "ignored": 0, "rated_before": 0}


def test_two_writers_commit_their_tiers_side_by_side_and_every_write_once_in_its_tiers_order(tmp_path: Path) -> None:
    """`--writers 2`: puts into one tier go to that tier's writer; a put into two tiers, one with a client's id and
    an outcome go to the first, which commits them with both held. Each write is answered once, derived data learns
    each commit before its acks, a tier's writes are acked in the order they came, and resends apply nothing."""
    events: list[tuple[str, str]] = []  # ("derived", learning id) or ("ack", request id), as they happen
    results: dict[str, dict[str, Any] | Rejected] = {}
    lock = threading.Lock()

    def done(outcomes: list[Outcome]) -> None:
        with lock:
            events.extend(("ack", item.request_id) for item, _ in outcomes)
            results.update((item.request_id, result) for item, result in outcomes)

    def committed(commits: list[tuple[str, DerivedChanges]]) -> None:
        with lock:
            events.extend(("derived", lid) for _, changes in commits for lid, _ in changes.texts)

    def settle(items: list[WriteItem]) -> None:
        deadline = time.monotonic() + 30
        while any(item.request_id not in results for item in items):
            assert time.monotonic() < deadline, "not every write was answered"
            time.sleep(0.01)

    def put_item(*bodies: dict[str, Any]) -> WriteItem:
        return WriteItem(uuid7(), PUT, LearningPutRequest.model_validate({"learnings": list(bodies)}))

    tiers = TierSet(tmp_path)
    tiers.open_user()
    batcher = Batcher(tiers, Metrics(), done, max_batch=8, max_wait_ms=0, capacity=1000, committed=committed, writers=2)
    assert batcher.writers == 2
    batcher.start()
    homed = [put_item(learning(scope=f"project:/p{i % 4}", n=i)) for i in range(120)]
    spanning = put_item(learning(scope="project:/p0", n=200), learning(scope="project:/p1", n=201))
    chosen = put_item(learning(scope="project:/p2", n=300) | {"id": uuid7()})
    first = [*homed[:60], spanning, *homed[60:], chosen]
    for item in first:
        assert batcher.submit(item)
    settle(first)
    ids = {item.request_id: results[item.request_id]["ids"] for item in first}  # type: ignore[index]
    rated = [{"attributions": [{"learning_id": ids[item.request_id][0], "outcome": "helpful"}]} for item in homed[::7]]
    outcomes = [WriteItem(uuid7(), OUTCOME, OutcomeRecordRequest.model_validate(body)) for body in rated]
    resent = [WriteItem(item.request_id, PUT, item.body) for item in homed[:10]]
    second = [*outcomes, *resent, *[put_item(learning(scope=f"project:/p{i % 4}", n=400 + i)) for i in range(40)]]
    for item in second:
        assert batcher.submit(item)
    settle(second)
    batcher.request_stop()
    deadline = time.monotonic() + 30
    while batcher.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not batcher.is_alive()
    assert all(item.homed for item in homed)
    assert not spanning.homed
    assert not chosen.homed
    assert not any(item.homed for item in outcomes)
    assert sum(t.learnings for t in tiers.opened()) == 120 + 2 + 1 + 40  # the resends applied nothing
    tiers.close()
    acks = [rid for kind, rid in events if kind == "ack"]
    assert len(acks) == len(first) + len(second)  # each answered once: a resend (the same id) is one more answer
    assert len(set(acks)) == len(first) + len(second) - len(resent)
    for item in resent:
        assert results[item.request_id] == {"ids": ids[item.request_id], "created": [True]}
    for item in outcomes:
        assert results[item.request_id] == APPLIED_ONE
    for tier in range(4):  # one tier's writes: acked in the order they were queued
        mine = [item.request_id for n, item in enumerate(homed) if n % 4 == tier]
        assert [rid for rid in acks[: len(first)] if rid in set(mine)] == mine
    for item in first:
        for lid in ids[item.request_id]:
            assert events.index(("derived", lid)) < events.index(("ack", item.request_id))


def test_the_queue_bound_holds_for_all_the_writers_together(tmp_path: Path) -> None:
    tiers = TierSet(tmp_path)
    batcher = Batcher(tiers, Metrics(), lambda _: None, max_batch=8, max_wait_ms=0, capacity=10, writers=2)
    bodies = [
        LearningPutRequest.model_validate({"learnings": [learning(scope=f"project:/p{i % 2}", n=i)]}) for i in range(11)
    ]
    items = [WriteItem(uuid7(), PUT, body) for body in bodies]
    assert all(batcher.submit(item) for item in items[:10])  # never started: they stay queued
    assert batcher.depth() == 10
    assert batcher.full()
    assert not batcher.submit(items[10])  # `busy` for the caller: the bound is the queues together
    assert batcher.depth() == 10
    tiers.close()
