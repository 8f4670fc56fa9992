"""Resent writes recognised by request id: joined while in flight, answered from the cache after, and
refused when the id comes back with another operation or another body."""

from __future__ import annotations

import msgpack

from groove.coordinator.errors import reused_id
from groove.coordinator.net.resends import Resends
from groove.coordinator.wire.digests import body_digest, comparable
from groove.protocol.errors import ErrorCode


def code(payload: bytes | None) -> str:
    assert payload
    error: str = msgpack.unpackb(payload, raw=False)["error"]["code"]
    return error


def test_a_resend_joins_its_first_attempt_then_gets_the_stored_reply() -> None:
    resends = Resends(cache_size=10)
    assert resends.answer(b"p1", "r", "learning.put", "d1") is None  # new
    resends.wait("r", "learning.put", "d1", b"p1", 0.0)
    assert resends.answer(b"p2", "r", "learning.put", "d1") == b""  # joined: acked with the first attempt
    assert resends.answer(b"p2", "r", "learning.put", "d1") == b""  # once per peer
    waiting = resends.done("r", b"ack", cacheable=True)
    assert waiting.peers == [b"p1", b"p2"]
    assert resends.answer(b"p3", "r", "learning.put", "d1") == b"ack"


def test_another_body_is_conflict_and_another_operation_bad_request_in_flight_and_after() -> None:
    resends = Resends(cache_size=10)
    resends.wait("r", "learning.put", "d1", b"p1", 0.0)
    for _ in range(2):  # in flight, then from the cache
        assert code(resends.answer(b"p2", "r", "learning.put", "d2")) == "conflict"
        assert code(resends.answer(b"p2", "r", "learning.delete", "d1")) == "bad_request"
        if resends.waiting:
            assert resends.done("r", b"ack", cacheable=True).peers == [b"p1"]  # the refused never joined


def test_the_cache_keeps_the_most_recent_and_skips_what_should_be_retried() -> None:
    resends = Resends(cache_size=2)
    for rid in ("a", "b", "c"):
        resends.wait(rid, "learning.put", "d", b"p", 0.0)
        resends.done(rid, rid.encode(), cacheable=True)
    assert resends.answer(b"p", "a", "learning.put", "d") is None  # evicted: the writer answers from the tier
    assert resends.answer(b"p", "c", "learning.put", "d") == b"c"
    resends.wait("e", "learning.put", "d", b"p", 0.0)
    resends.done("e", b"internal error", cacheable=False)
    assert resends.answer(b"p", "e", "learning.put", "d") is None  # a retry is applied, not answered the error


def test_digests_are_compared_only_when_taken_alike() -> None:
    new, other = body_digest({"a": 1}), body_digest({"a": 2})
    earlier = "3f1c0e5a9b2d4c6e8f0a1b2c3d4e5f60"  # as a release before the prefix stored it
    assert comparable(new, other)
    assert not comparable(earlier, new)
    assert not comparable("", new)
    refusal = reused_id("r1", "learning.put", other, "learning.put", new)
    assert refusal is not None
    assert refusal.code == ErrorCode.CONFLICT
    assert reused_id("r1", "learning.put", earlier, "learning.put", new) is None  # answered without the check
