"""The writer: group commit over real RocksDB tiers, exactly-once by request id, bad items isolated."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groove.coordinator.errors import Rejected
from groove.coordinator.loop.injection import InjectRecord
from groove.coordinator.metrics import Metrics
from groove.coordinator.search.changes import DerivedChanges
from groove.coordinator.store.reads import list_relations
from groove.coordinator.store.records import vector_blob
from groove.coordinator.store.tierset import TierSet
from groove.coordinator.write.batcher import Batcher, Outcome
from groove.coordinator.write.bodies import StoreRelated, StoreVectors
from groove.coordinator.write.housekeeping import IDEMPOTENCY_WINDOW_MS
from groove.coordinator.write.ops import INJECT, PUT, STORE_RELATED, STORE_VECTORS, WriteItem
from groove.protocol import constants as C
from groove.protocol.errors import ErrorCode
from groove.protocol.ids import uuid7
from groove.protocol.models import LearningPutRequest, RelationListRequest
from groove.protocol.scopes import tier_for_scope
from tests.coordinator.harness import NOW, Harness
from tests.helpers import learning


@pytest.fixture(params=[1, 2], ids=["writer-alone", "commit-behind"])
def h(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Harness]:
    harness = Harness(tmp_path, commit_threads=request.param)
    yield harness
    harness.tiers.close()


APPLIED_ONE = {"applied": 1, "ignored": 0, "rated_before": 0}


def put(h: Harness, *items: dict[str, Any]) -> list[str]:
    ids: list[str] = h.ok(C.OP_LEARNING_PUT, {"learnings": list(items)})["ids"]
    return ids


def test_record_outcome_follows_seed_000_exactly(h: Harness) -> None:
    (lid,) = put(h, learning())
    h.ok(C.OP_OUTCOME_RECORD, {"attributions": [{"learning_id": lid, "outcome": "helpful"}]})
    h.ok(
        C.OP_OUTCOME_RECORD,
        {"attributions": [{"learning_id": lid, "outcome": "ignored"}, {"learning_id": lid, "outcome": "contradicted"}]},
    )
    got = h.get(lid)
    usage = got["usage"]
    assert usage["times_injected"] == 3
    assert (usage["times_helpful"], usage["times_ignored"], usage["times_contradicted"]) == (1, 1, 1)
    assert usage["confidence_alpha"] == pytest.approx(2.0)
    assert usage["confidence_beta"] == pytest.approx(1.0 + 0.1 + 1.5)
    assert got["confidence"] == pytest.approx(2.0 / 4.6)
    assert usage["last_used"] == NOW


def test_stated_confidence_sets_the_prior(h: Harness) -> None:
    (lid,) = put(h, learning(confidence=0.8))
    got = h.get(lid)
    assert got["confidence"] == pytest.approx(0.8)
    assert got["usage"]["confidence_alpha"] / (
        got["usage"]["confidence_alpha"] + got["usage"]["confidence_beta"]
    ) == pytest.approx(0.8)


def test_outcomes_for_one_learning_in_one_batch_all_count(h: Harness) -> None:
    (lid,) = put(h, learning())
    items = [
        h.item(C.OP_OUTCOME_RECORD, {"attributions": [{"learning_id": lid, "outcome": "helpful"}]}) for _ in range(10)
    ]
    assert all(r == {"applied": 1, "ignored": 0, "rated_before": 0} for r in h.run(*items))
    assert h.get(lid)["usage"]["times_helpful"] == 10


def test_a_batch_that_reinforces_a_stored_learning_by_its_content_and_rates_it_does_both(h: Harness) -> None:
    # the learning is loaded once, as a content's owner and as the outcome's subject, and both changes land
    (lid,) = put(h, learning(n=3))
    again = h.item(C.OP_LEARNING_PUT, {"learnings": [learning(n=3), learning(n=4, id=uuid7())]})
    rate = h.item(C.OP_OUTCOME_RECORD, {"attributions": [{"learning_id": lid, "outcome": "helpful"}]})
    reinforced, rated = h.run(again, rate)
    assert isinstance(reinforced, dict)
    assert (reinforced["ids"][0], reinforced["created"]) == (lid, [False, True])
    assert rated == {"applied": 1, "ignored": 0, "rated_before": 0}
    usage = h.get(lid)["usage"]
    assert usage["times_helpful"] == 1
    assert usage["confidence_alpha"] == pytest.approx(1.0 + C.REINFORCE_ALPHA_STEP + 1.0)


def _injected(h: Harness, lid: str, session: str) -> str:
    """An injection of one learning, recorded as `inject.prepare` records it; its id."""
    reply = {"injection_id": uuid7(), "learnings": [], "markdown": "", "params": {}}
    record = InjectRecord(
        injection_id=reply["injection_id"],
        session_id=session,
        learnings=[(lid, tier_for_scope(C.SCOPE_GLOBAL))],
        had_task=False,
        params={},
        reply=reply,
    )
    h.write(INJECT, record)
    return str(reply["injection_id"])


def test_a_rating_during_a_session_and_its_close_count_once_in_one_batch_and_across_a_restart(
    h: Harness, tmp_path: Path
) -> None:
    (lid,) = put(h, learning())
    first = _injected(h, lid, "s-1")
    rate = {"attributions": [{"learning_id": lid, "outcome": "helpful"}], "session_id": "s-1"}
    close = {"attributions": [{"learning_id": lid, "outcome": "helpful"}], "injection_id": first}
    replies = h.run(h.item(C.OP_OUTCOME_RECORD, rate), h.item(C.OP_OUTCOME_RECORD, close))
    assert replies == [
        {"applied": 1, "ignored": 0, "rated_before": 0},
        {"applied": 0, "ignored": 0, "rated_before": 1},
    ]
    usage = h.get(lid)["usage"]
    assert (usage["times_injected"], usage["times_helpful"]) == (1, 1)
    # what a session rated is read from the outcome log, so a restart between rating and close forgets nothing
    second = _injected(h, lid, "s-2")
    assert h.ok(C.OP_OUTCOME_RECORD, rate | {"session_id": "s-2"})["rated_before"] == 0
    h.tiers.close()
    again = Harness(tmp_path)
    try:
        reply = again.ok(C.OP_OUTCOME_RECORD, close | {"injection_id": second})
        assert reply == {"applied": 0, "ignored": 0, "rated_before": 1}
        usage = again.get(lid)["usage"]
        assert (usage["times_injected"], usage["times_helpful"]) == (2, 2)
    finally:
        again.tiers.close()


def test_a_close_that_names_a_learning_it_was_given_twice_counts_it_once(h: Harness) -> None:
    a, b = put(h, learning(n=1), learning(n=2))
    given = _injected(h, a, "s-1")
    twice = [{"learning_id": a, "outcome": "helpful"}, {"learning_id": a, "outcome": "contradicted"}]
    other = [{"learning_id": b, "outcome": "helpful"}] * 2  # not given by the injection: each is a use of its own
    reply = h.ok(C.OP_OUTCOME_RECORD, {"attributions": twice + other, "injection_id": given, "success": True})
    assert reply == {"applied": 3, "ignored": 0, "rated_before": 1}
    usage = h.get(a)["usage"]
    assert (usage["times_injected"], usage["times_helpful"], usage["times_contradicted"]) == (1, 1, 0)
    assert h.get(b)["usage"]["times_helpful"] == 2


def test_a_retried_request_id_applies_once(h: Harness, tmp_path: Path) -> None:
    (lid,) = put(h, learning())
    body = {"attributions": [{"learning_id": lid, "outcome": "helpful"}]}
    first = h.run(h.item(C.OP_OUTCOME_RECORD, body, request_id="retry-me"))
    second = h.run(h.item(C.OP_OUTCOME_RECORD, body, request_id="retry-me"))
    assert first == second == [APPLIED_ONE]
    assert h.get(lid)["usage"]["times_helpful"] == 1
    # also after the tiers are closed and reopened (a restart): the applied id is stored with the data
    h.tiers.close()
    again = Harness(tmp_path)
    try:
        assert again.run(again.item(C.OP_OUTCOME_RECORD, body, request_id="retry-me")) == [APPLIED_ONE]
        assert again.get(lid)["usage"]["times_helpful"] == 1
    finally:
        again.tiers.close()


def test_a_retried_put_returns_the_original_ids(h: Harness) -> None:
    body = {"learnings": [learning(n=1), learning(scope="project:/p", n=2)]}
    first = h.run(h.item(C.OP_LEARNING_PUT, body, request_id="put-1"))[0]
    second = h.run(h.item(C.OP_LEARNING_PUT, body, request_id="put-1"))[0]
    assert first == second
    assert isinstance(first, dict)
    assert first["created"] == [True, True]
    assert sum(t.learnings for t in h.tiers.opened()) == 2


def test_bad_items_are_isolated_from_the_rest_of_the_batch(h: Harness) -> None:
    (lid,) = put(h, learning())
    good_put = h.item(C.OP_LEARNING_PUT, {"learnings": [learning(n=9)]})
    unknown = h.item(
        C.OP_OUTCOME_RECORD,
        {"attributions": [{"learning_id": lid, "outcome": "helpful"}, {"learning_id": uuid7(), "outcome": "helpful"}]},
    )
    good_outcome = h.item(C.OP_OUTCOME_RECORD, {"attributions": [{"learning_id": lid, "outcome": "ignored"}]})
    self_relation = h.item(C.OP_RELATION_PUT, {"from_id": lid, "relation_type": "related_to", "to_id": lid})
    replies = h.run(good_put, unknown, good_outcome, self_relation)
    assert isinstance(replies[0], dict)
    assert isinstance(replies[1], Rejected)
    assert replies[1].code == ErrorCode.NOT_FOUND
    assert replies[2] == {"applied": 1, "ignored": 0, "rated_before": 0}
    assert isinstance(replies[3], Rejected)
    assert replies[3].code == ErrorCode.BAD_REQUEST
    usage = h.get(lid)["usage"]
    assert (usage["times_helpful"], usage["times_ignored"]) == (0, 1)


def test_put_of_an_existing_id_updates_content_and_keeps_usage(h: Harness) -> None:
    lid = uuid7()
    assert h.ok(C.OP_LEARNING_PUT, {"learnings": [learning(id=lid)]})["created"] == [True]
    h.ok(C.OP_OUTCOME_RECORD, {"attributions": [{"learning_id": lid, "outcome": "helpful"}]})
    changed = learning(id=lid, n=2, confidence=0.1)
    assert h.ok(C.OP_LEARNING_PUT, {"learnings": [changed]})["created"] == [False]
    got = h.get(lid)
    assert got["description"] == "description 2"
    assert got["usage"]["times_helpful"] == 1
    assert got["confidence"] == pytest.approx(2 / 3)


def test_an_id_cannot_live_in_two_tiers(h: Harness) -> None:
    lid = uuid7()
    h.ok(C.OP_LEARNING_PUT, {"learnings": [learning(id=lid)]})
    (reply,) = h.run(h.item(C.OP_LEARNING_PUT, {"learnings": [learning(scope="project:/p", id=lid)]}))
    assert isinstance(reply, Rejected)
    assert reply.code == ErrorCode.CONFLICT


def test_delete_removes_usage_and_relations_in_every_tier(h: Harness) -> None:
    user_id, project_id = put(h, learning(), learning(scope="project:/p"))
    h.ok(C.OP_RELATION_PUT, {"from_id": project_id, "relation_type": "specializes", "to_id": user_id})
    h.ok(C.OP_RELATION_PUT, {"from_id": user_id, "relation_type": "related_to", "to_id": project_id})
    assert len(list_relations(h.tiers, RelationListRequest(id=user_id))["relations"]) == 2
    assert h.ok(C.OP_LEARNING_DELETE, {"id": user_id}) == {"deleted": True}
    assert h.ok(C.OP_LEARNING_DELETE, {"id": user_id}) == {"deleted": False}
    assert list_relations(h.tiers, RelationListRequest(id=project_id))["relations"] == []
    user = h.tiers.get("user", create=False)
    assert user is not None
    assert user.run("?[count(learning_id)] := *usage_stats{learning_id}") == [[0]]
    assert user.learnings == 0


def test_put_then_delete_in_one_batch(h: Harness) -> None:
    lid = uuid7()
    replies = h.run(
        h.item(C.OP_LEARNING_PUT, {"learnings": [learning(id=lid)]}), h.item(C.OP_LEARNING_DELETE, {"id": lid})
    )
    assert replies[0] == {"ids": [lid], "created": [True]}
    # planning saw no learning yet, so the delete finds nothing to delete
    assert replies[1] == {"deleted": False}
    assert h.get(lid)["id"] == lid


def test_a_retry_is_answered_from_its_stored_reply_even_when_it_could_not_apply_now(h: Harness) -> None:
    (lid,) = put(h, learning())
    body = {"attributions": [{"learning_id": lid, "outcome": "helpful"}]}
    assert h.run(h.item(C.OP_OUTCOME_RECORD, body, request_id="late-retry")) == [APPLIED_ONE]
    h.ok(C.OP_LEARNING_DELETE, {"id": lid})
    assert h.run(h.item(C.OP_OUTCOME_RECORD, body, request_id="late-retry")) == [APPLIED_ONE]
    (fresh,) = h.run(h.item(C.OP_OUTCOME_RECORD, body))
    assert isinstance(fresh, Rejected)
    assert fresh.code == ErrorCode.NOT_FOUND


def test_a_batch_mixing_retries_and_new_writes_commits_the_new_ones(h: Harness) -> None:
    body = {"learnings": [learning(n=1)]}
    (first,) = h.run(h.item(C.OP_LEARNING_PUT, body, request_id="old"))
    replies = h.run(
        h.item(C.OP_LEARNING_PUT, {"learnings": [learning(n=2)]}),
        h.item(C.OP_LEARNING_PUT, body, request_id="old"),
        h.item(C.OP_LEARNING_PUT, {"learnings": [learning(n=3)]}),
    )
    assert replies[1] == first
    assert [r["created"] for r in replies if isinstance(r, dict)] == [[True], [True], [True]]
    user = h.tiers.get("user", create=False)
    assert user is not None
    assert user.learnings == 3
    assert user.run("?[count(id)] := *learning{id}") == [[3]]


def test_a_request_id_reused_for_another_operation_after_a_restart_is_refused(h: Harness, tmp_path: Path) -> None:
    (lid,) = put(h, learning())
    h.run(
        h.item(C.OP_OUTCOME_RECORD, {"attributions": [{"learning_id": lid, "outcome": "helpful"}]}, request_id="reused")
    )
    (reply,) = h.run(h.item(C.OP_LEARNING_PUT, {"learnings": [learning(n=2)]}, request_id="reused"))
    assert isinstance(reply, Rejected)
    assert reply.code == ErrorCode.BAD_REQUEST
    assert "already used for outcome.record" in reply.message
    assert h.tiers.open_user().learnings == 1


def test_a_deleted_id_can_be_used_again_in_another_tier(h: Harness) -> None:
    lid = uuid7()
    h.ok(C.OP_LEARNING_PUT, {"learnings": [learning(id=lid)]})
    h.ok(C.OP_OUTCOME_RECORD, {"attributions": [{"learning_id": lid, "outcome": "helpful"}]})
    assert h.ok(C.OP_LEARNING_DELETE, {"id": lid}) == {"deleted": True}
    assert h.ok(C.OP_LEARNING_PUT, {"learnings": [learning(scope="project:/q", id=lid)]})["created"] == [True]
    assert h.get(lid)["tier"] == "project:/q"
    assert h.get(lid)["usage"]["times_helpful"] == 0
    assert h.ok(C.OP_OUTCOME_RECORD, {"attributions": [{"learning_id": lid, "outcome": "ignored"}]}) == APPLIED_ONE


def test_request_ids_are_remembered_for_the_idempotency_window_only(h: Harness) -> None:
    (lid,) = put(h, learning())
    body = {"attributions": [{"learning_id": lid, "outcome": "helpful"}]}
    h.run(h.item(C.OP_OUTCOME_RECORD, body, request_id="old-id"), now=NOW)
    h.batcher.housekeeper.prune(now=NOW + IDEMPOTENCY_WINDOW_MS)
    h.run(h.item(C.OP_OUTCOME_RECORD, body, request_id="old-id"), now=NOW + IDEMPOTENCY_WINDOW_MS)
    assert h.get(lid)["usage"]["times_helpful"] == 1  # still inside the window: not applied again
    h.batcher.housekeeper.prune(now=NOW + IDEMPOTENCY_WINDOW_MS + 1)
    h.run(h.item(C.OP_OUTCOME_RECORD, body, request_id="old-id"), now=NOW + IDEMPOTENCY_WINDOW_MS + 2)
    assert h.get(lid)["usage"]["times_helpful"] == 2  # forgotten: a request this old is a new request


def test_the_acker_tells_derived_data_before_each_ack_and_answers_batches_in_commit_order(tmp_path: Path) -> None:
    """The writer thread commits while the acker answers the batch before: derived data must still learn each
    commit before its acks go out, batch after batch in commit order, and a stop must answer everything queued."""
    events: list[tuple[str, str]] = []  # ("derived", learning id) or ("ack", request id), as they happen
    lock = threading.Lock()

    def done(outcomes: list[Outcome]) -> None:
        with lock:
            events.extend(("ack", item.request_id) for item, _ in outcomes)

    def committed(commits: list[tuple[str, DerivedChanges]]) -> None:
        with lock:
            events.extend(("derived", lid) for _, changes in commits for lid, _ in changes.texts)

    tiers = TierSet(tmp_path)
    tiers.open_user()
    batcher = Batcher(tiers, Metrics(), done, max_batch=8, max_wait_ms=0, capacity=1000, committed=committed)
    body = {"scope": "global", "category": "solution", "insight": "x"}
    items = [
        WriteItem(uuid7(), PUT, LearningPutRequest.model_validate({"learnings": [body | {"description": f"d{i}"}]}))
        for i in range(200)
    ]
    batcher.start()
    for item in items:
        assert batcher.submit(item)
    batcher.request_stop()
    deadline = time.monotonic() + 30
    while batcher.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not batcher.is_alive()
    tiers.close()
    acks = [rid for kind, rid in events if kind == "ack"]
    assert acks == [item.request_id for item in items]  # every request answered once, in queue (= commit) order
    for item in items:
        (lid,) = item.replies[C.TIER_USER]["ids"]
        assert events.index(("derived", lid)) < events.index(("ack", item.request_id))


def reinforced(h: Harness, item: dict[str, Any]) -> tuple[str, bool]:
    """Put one learning; (the id it landed on, whether it was new)."""
    reply = h.ok(C.OP_LEARNING_PUT, {"learnings": [item]})
    return reply["ids"][0], reply["created"][0]


def test_the_same_content_reinforces_its_holder_across_batches_and_restarts(h: Harness, tmp_path: Path) -> None:
    first, created = reinforced(h, learning(n=1))
    assert created
    assert reinforced(h, learning(n=1, description="  DESCRIPTION   1 ")) == (first, False)  # case, spacing aside
    assert reinforced(h, learning(scope="user:me", n=1))[1]  # another scope is other content
    h.tiers.close()
    again = Harness(tmp_path)
    try:
        assert reinforced(again, learning(n=1)) == (first, False)
    finally:
        again.tiers.close()


def test_a_content_whose_holder_was_deleted_or_changed_is_new_again_or_found_in_its_other_holder(h: Harness) -> None:
    gone, _ = reinforced(h, learning(n=1))
    h.ok(C.OP_LEARNING_DELETE, {"id": gone})
    fresh, created = reinforced(h, learning(n=1))  # its last holder is gone: stored anew, not lost
    assert created
    assert fresh != gone
    changed = learning(id=fresh, n=9)  # the holder now holds other content
    h.ok(C.OP_LEARNING_PUT, {"learnings": [changed]})
    assert reinforced(h, learning(n=1))[1]  # nobody holds content 1 any more
    # two learnings with one content (a client-chosen id does not deduplicate): the first one's delete leaves
    # the other as the holder that a put of the content reinforces
    a, _ = reinforced(h, learning(n=5))
    b, _ = reinforced(h, learning(n=5, id=uuid7()))
    assert a != b
    h.ok(C.OP_LEARNING_DELETE, {"id": b})  # b held it last
    assert reinforced(h, learning(n=5)) == (a, False)


def test_a_batch_over_many_tiers_commits_behind_the_writer_and_answers_every_write_once(tmp_path: Path) -> None:
    replies: dict[str, dict[str, Any] | Rejected] = {}

    def done(outcomes: list[Outcome]) -> None:
        replies.update((item.request_id, result) for item, result in outcomes)

    tiers = TierSet(tmp_path)
    tiers.open_user()
    batcher = Batcher(tiers, Metrics(), done, max_batch=256, max_wait_ms=0, capacity=1000, commit_threads=2)
    try:
        # a request per project tier, and one spanning two tiers
        bodies = [[learning(scope=f"project:/p{i % 6}", n=i)] for i in range(60)]
        bodies.append([learning(scope="project:/p0", n=100), learning(scope="project:/p5", n=101)])
        items = [WriteItem(uuid7(), PUT, LearningPutRequest.model_validate({"learnings": b})) for b in bodies]
        batcher.process(items, NOW)
        first = {item.request_id: replies[item.request_id] for item in items}
        ids = [lid for reply in first.values() for lid in reply["ids"]]  # type: ignore[index]
        assert None not in ids  # every part of every request committed: none acked without its tier
        assert len(set(ids)) == len(ids) == 62
        assert sum(t.learnings for t in tiers.opened()) == 62
        # the same requests resent: answered from the stored replies, nothing applied twice
        replies.clear()
        batcher.process([WriteItem(item.request_id, PUT, item.body) for item in items], NOW)
        assert replies == first
        assert sum(t.learnings for t in tiers.opened()) == 62
    finally:
        tiers.close()


def test_a_request_one_tier_refuses_changes_no_later_tier_though_that_tier_was_prepared_behind_it(h: Harness) -> None:
    # the writer prepares the second tier's transaction while the first one's runs: a request the first tier
    # refuses when it lands must leave the second tier as it was, as if the tiers had committed one by one
    (x,) = put(h, learning(scope="project:/a", n=1))
    (y,) = put(h, learning(scope="project:/b", n=2))
    delete = h.item(C.OP_LEARNING_DELETE, {"id": x})
    both = h.item(
        C.OP_OUTCOME_RECORD,
        {"attributions": [{"learning_id": x, "outcome": "helpful"}, {"learning_id": y, "outcome": "helpful"}]},
    )
    other = h.item(C.OP_LEARNING_PUT, {"learnings": [learning(scope="project:/b", n=3)]})
    replies = h.run(delete, both, other)
    assert isinstance(replies[0], dict)
    assert isinstance(replies[1], Rejected)
    assert replies[1].code == ErrorCode.NOT_FOUND
    assert isinstance(replies[2], dict)
    assert replies[2]["created"] == [True]
    assert h.get(y)["usage"]["times_helpful"] == 0  # the refused request changed nothing in the second tier
    assert h.get(replies[2]["ids"][0])["description"] == "description 3"  # the tier's other write committed
    with pytest.raises(Rejected):
        h.get(x)


def test_vectors_land_only_on_learnings_that_still_exist_unedited_and_relations_need_both_ends(h: Harness) -> None:
    kept, gone, edited, older = put(h, learning(n=1), learning(n=2), learning(n=3), learning(n=4))
    blob = vector_blob([1.0] + [0.0] * (C.EMBEDDING_DIM - 1))
    vectors = StoreVectors(tier=C.TIER_USER, rows=[(lid, blob) for lid in (kept, gone, edited, uuid7())])
    near = StoreRelated(tier=C.TIER_USER, pairs=[(kept, older, 0.95), (kept, gone, 0.93), (uuid7(), edited, 0.91)])
    items = [
        h.item(C.OP_LEARNING_DELETE, {"id": gone}),
        h.item(C.OP_LEARNING_PUT, {"learnings": [learning(n=5, id=edited)]}),  # its text changed: the vector is stale
        WriteItem(uuid7(), STORE_VECTORS, vectors, internal=True),  # the pool's: no reply
        WriteItem(uuid7(), STORE_RELATED, near, internal=True),  # the near-duplicate thread's: no reply
        h.item(C.OP_RELATION_PUT, {"from_id": kept, "relation_type": "related_to", "to_id": uuid7()}),
        h.item(C.OP_RELATION_PUT, {"from_id": kept, "relation_type": "supersedes", "to_id": older}),
    ]
    h.batcher.process(items, NOW)  # one batch
    replies = [h.replies.get(item.request_id) for item in items]
    user = h.tiers.get(C.TIER_USER, create=False)
    assert user is not None
    assert user.run("?[id] := *learning_embeddings{learning_id: id}") == [[kept]]
    assert isinstance(replies[4], Rejected)
    assert replies[4].code == ErrorCode.NOT_FOUND
    assert replies[5] == {}
    related = user.run(
        "?[f, t, w] := *learning_relations{from_id: f, to_id: t, weight: w, relation_type: $r}", {"r": "related_to"}
    )
    assert related == [[kept, older, 0.95]]  # the pairs whose learnings are both still there
    assert h.get(older)["confidence"] < h.get(kept)["confidence"]  # superseded: its usage was loaded and demoted


def test_a_write_a_later_tier_refuses_is_refused_though_an_earlier_tier_took_its_share(h: Harness) -> None:
    (x,) = put(h, learning(scope="project:/a", n=1))
    (y,) = put(h, learning(scope="project:/b", n=2))
    first = h.item(C.OP_LEARNING_PUT, {"learnings": [learning(scope="project:/a", n=3)]})  # tier a commits first
    delete = h.item(C.OP_LEARNING_DELETE, {"id": y})
    both = h.item(
        C.OP_OUTCOME_RECORD,
        {"attributions": [{"learning_id": x, "outcome": "helpful"}, {"learning_id": y, "outcome": "helpful"}]},
    )
    replies = h.run(first, delete, both)
    # tier a took its share before tier b refused its own: an ack of tier a's share alone ("applied": 1) would
    # tell the client both were recorded
    assert isinstance(replies[2], Rejected)
    assert replies[2].code == ErrorCode.NOT_FOUND
    assert isinstance(replies[1], dict)
