"""Puts built in the front (write/built.py): what is built, that a built put stores what the planned put stores, and
that the writer sends the unusual ones the planned way (content stored already or put twice, a resend)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groove.coordinator.errors import Rejected
from groove.coordinator.wire.digests import body_digest
from groove.coordinator.write.built import Built, build
from groove.coordinator.write.ops import BUILT_BODY, PUT, WriteItem
from groove.protocol import constants as C
from groove.protocol.envelope import encode_request, unpack
from groove.protocol.ids import uuid7
from groove.protocol.models import LearningPutRequest
from tests.coordinator.harness import NOW, Harness
from tests.helpers import learning


@pytest.fixture(params=[1, 2], ids=["writer-alone", "commit-behind"])
def h(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Harness]:
    harness = Harness(tmp_path / "h", commit_threads=request.param)
    yield harness
    harness.tiers.close()


def built(body: dict[str, Any], request_id: str | None = None) -> Built | None:
    """What the front builds of a put with this body (as `net.checks.check` does)."""
    rid = request_id or uuid7()
    raw = encode_request(rid, C.OP_LEARNING_PUT, body)
    return build(rid, LearningPutRequest.model_validate(body), body_digest(body), raw, NOW)


def item(body: dict[str, Any], request_id: str | None = None) -> WriteItem:
    put = built(body, request_id)
    assert put is not None
    return WriteItem(put.request_id, PUT, BUILT_BODY, put.digest, built=put)


def acked(write: WriteItem, result: dict[str, Any] | Rejected) -> dict[str, Any]:
    """The reply a write got: its built ack while it stayed built, else the reply the writer made."""
    assert not isinstance(result, Rejected), result.message
    if write.built is not None:
        body: dict[str, Any] = unpack(write.built.reply)["body"]
        return body
    return result


def test_only_the_plain_put_is_built() -> None:
    assert built({"learnings": [learning(n=1, id="0190a2b4-0000-7000-8000-000000000001")]}) is None  # its own id
    assert built({"learnings": [learning(n=1), learning("project:/p", n=2)]}) is None  # two tiers
    assert built({"learnings": [learning(n=1), learning(n=1)]}) is None  # one content twice
    put = built({"learnings": [learning(n=1), learning("user:me", n=2, embedding=[1.0] + [0.0] * 383)]})
    assert put is not None
    assert put.tier == C.TIER_USER
    assert [row[0] for row in put.vectors] == [put.ids[1]]
    assert unpack(put.reply)["body"] == {"ids": put.ids, "created": [True, True]}
    assert Built.from_wire(put.wire()) == put


def test_a_built_put_stores_what_the_planned_put_stores(h: Harness, tmp_path: Path) -> None:
    body = {"learnings": [learning("project:/p", n=1, pattern={"language": "rust"}, confidence=0.8)]}
    write = item(body)
    (result,) = h.run(write)
    (lid,) = acked(write, result)["ids"]
    planned = Harness(tmp_path / "planned")
    try:
        (other,) = planned.ok(C.OP_LEARNING_PUT, body)["ids"]
        assert h.get(lid) | {"id": other} == planned.get(other)
    finally:
        planned.tiers.close()
    assert h.tiers.get("project:/p", create=False) is not None
    assert h.tiers.locate([lid])[lid].name == "project:/p"


def test_content_put_twice_in_a_batch_or_stored_before_is_reinforced_not_stored_again(h: Harness) -> None:
    first, second, third = (item({"learnings": [learning(n=1)]}) for _ in range(3))
    other = item({"learnings": [learning(n=2)]})
    replies = [acked(w, r) for w, r in zip((first, second, other), h.run(first, second, other), strict=True)]
    assert [r["created"] for r in replies] == [[True], [False], [True]]
    assert replies[0]["ids"] == replies[1]["ids"]
    (again,) = h.run(third)
    assert acked(third, again) == {"ids": replies[0]["ids"], "created": [False]}
    assert sum(t.learnings for t in h.tiers.opened()) == 2
    assert (
        h.get(replies[0]["ids"][0])["usage"]["confidence_alpha"]
        > h.get(replies[2]["ids"][0])["usage"]["confidence_alpha"]
    )


def test_a_resent_built_put_gets_its_first_reply_even_with_other_ids(h: Harness) -> None:
    body = {"learnings": [learning(n=3)]}
    first = item(body, request_id="put-1")
    (reply,) = h.run(first)
    resent = item(body, request_id="put-1")  # built again by the front: new ids, the same request
    assert resent.built is not None
    assert first.built is not None
    assert resent.built.ids != first.built.ids
    (again,) = h.run(resent)
    assert acked(resent, again) == acked(first, reply)
    assert sum(t.learnings for t in h.tiers.opened()) == 1


def test_a_built_put_joins_a_transaction_with_planned_writes_to_its_tier(h: Harness) -> None:
    (stored,) = h.ok(C.OP_LEARNING_PUT, {"learnings": [learning(n=4)]})["ids"]
    rating = h.item(C.OP_OUTCOME_RECORD, {"attributions": [{"learning_id": stored, "outcome": "helpful"}]})
    write = item({"learnings": [learning(n=5)]})
    outcome, put = h.run(rating, write)
    assert outcome == {"applied": 1, "ignored": 0, "rated_before": 0}
    assert write.built is not None  # it stayed built, joined to the planned write's transaction
    (lid,) = acked(write, put)["ids"]
    assert h.get(lid)["description"] == "description 5"
    assert h.get(stored)["usage"]["times_helpful"] == 1
