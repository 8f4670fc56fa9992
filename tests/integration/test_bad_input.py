"""Hostile and malformed input on a raw DEALER socket: the right error code, nothing changed, still serving."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import msgpack
import pytest
import zmq

from groove.client import GrooveClient, RequestTooLarge
from groove.protocol import constants as C
from groove.protocol.ids import uuid7
from groove.protocol.ops import OPS
from tests.helpers import RunningCoordinator, learning


class Raw:
    """A bare DEALER, so tests can send anything at all."""

    def __init__(self, endpoint: str) -> None:
        self.sock: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(endpoint)

    def send(self, *frames: bytes) -> None:
        self.sock.send_multipart(list(frames))

    def reply(self, timeout_ms: int = 5000) -> dict[str, Any]:
        assert self.sock.poll(timeout_ms), "no reply"
        frames = self.sock.recv_multipart()
        assert frames[0] == b""
        value: dict[str, Any] = msgpack.unpackb(frames[1], raw=False)
        return value

    def request(self, value: Any) -> dict[str, Any]:
        self.send(b"", msgpack.packb(value, use_bin_type=True))
        return self.reply()


@pytest.fixture(params=[("--no-front-checks",), ()], ids=["checked-here", "checked-in-front"])
def coordinator(
    request: pytest.FixtureRequest, coordinator_factory: Callable[..., RunningCoordinator]
) -> RunningCoordinator:
    """Every test here twice: the coordinator checks each request itself, then its front checks the writes (a
    write the front refuses reaches the coordinator as it came, so the same errors must come back)."""
    return coordinator_factory(*request.param)


@pytest.fixture
def raw(coordinator: RunningCoordinator) -> Iterator[Raw]:
    r = Raw(coordinator.endpoint)
    yield r
    r.sock.close()


def envelope(op: str, body: Any, v: Any = 1, rid: str = "req-1") -> dict[str, Any]:
    return {"v": v, "id": rid, "op": op, "body": body}


def put_body(**override: Any) -> dict[str, Any]:
    return {"learnings": [learning(n=5) | override]}


def offer(tier: str, learning_tier: str) -> dict[str, Any]:
    """An `inject.prepare` offer of `tier` with one candidate whose learning says it is of `learning_tier`."""
    counts = {"times_injected": 0, "times_helpful": 0, "times_ignored": 0, "times_contradicted": 0}
    usage = counts | {"last_used": None, "confidence_alpha": 1.0, "confidence_beta": 1.0}
    stored = learning(n=6) | {"id": uuid7(), "confidence": 0.5, "source": {}, "tier": learning_tier}
    stored |= {"created_at": 1, "updated_at": 1, "usage": usage}
    candidate = {"learning": stored, "score": 0.5, "relevance": 0.5, "reasoning": "r"}
    return {"tiers": [tier], "candidates": [candidate]}


SHOP = {"project": "/srv/shop"}
RATED = [{"learning_id": uuid7(), "outcome": "helpful"}]


CASES: list[tuple[str, Any, str]] = [
    ("not a map", [1, 2, 3], "bad_request"),
    ("string payload", "hello", "bad_request"),
    ("missing id", {"v": 1, "op": "ping", "body": {}}, "bad_request"),
    ("v 2", envelope("ping", {}, v=2), "unsupported_version"),
    ("v string", envelope("ping", {}, v="1"), "unsupported_version"),
    ("unknown op", envelope("learning.teleport", {}), "unknown_op"),
    ("body not a map", envelope("ping", [1]), "bad_request"),
    ("missing field", envelope("learning.get", {}), "bad_request"),
    ("mistyped field", envelope("learning.get", {"id": 12}), "bad_request"),
    ("unknown field", envelope("ping", {"verbose": True}), "bad_request"),
    ("scope proj:", envelope("learning.put", put_body(scope="proj:/x")), "bad_request"),
    ("scope user:", envelope("learning.put", put_body(scope="user:")), "bad_request"),
    ("scope empty", envelope("learning.put", put_body(scope="")), "bad_request"),
    ("scope 10 kB", envelope("learning.put", put_body(scope="project:/" + "x" * 10_000)), "bad_request"),
    ("confidence NaN", envelope("learning.put", put_body(confidence=float("nan"))), "bad_request"),
    ("confidence 7", envelope("learning.put", put_body(confidence=7)), "bad_request"),
    ("no learnings", envelope("learning.put", {"learnings": []}), "bad_request"),
    ("whitespace insight", envelope("learning.put", put_body(insight=" \t\n")), "bad_request"),
    ("whitespace description", envelope("learning.put", put_body(description="   ")), "bad_request"),
    ("relative project root", envelope("learning.put", put_body(scope="project:relative")), "bad_request"),
    ("relative project tier", envelope("learning.list", {"tier": "project:a/b"}), "bad_request"),
    ("relative search project", envelope("search", {"query": "x", "context": {"project": "a/b"}}), "bad_request"),
    (
        "unknown learning in outcome",
        envelope("outcome.record", {"attributions": [{"learning_id": uuid7(), "outcome": "helpful"}]}),
        "not_found",
    ),
    (
        "bad outcome",
        envelope("outcome.record", {"attributions": [{"learning_id": uuid7(), "outcome": "meh"}]}),
        "bad_request",
    ),
    (
        "relation to unknown",
        envelope("relation.put", {"from_id": uuid7(), "relation_type": "supersedes", "to_id": uuid7()}),
        "not_found",
    ),
    (
        "bad relation type",
        envelope("relation.put", {"from_id": uuid7(), "relation_type": "likes", "to_id": uuid7()}),
        "bad_request",
    ),
    ("get unknown", envelope("learning.get", {"id": uuid7()}), "not_found"),
    ("offer a tier not read", envelope("inject.candidates", {"tiers": ["project:/srv/shop"]}), "bad_request"),
    ("offer no tier", envelope("inject.candidates", {"tiers": [], "context": SHOP}), "bad_request"),
    (
        "offer a tier twice",
        envelope("inject.candidates", {"tiers": ["project:/srv/shop"] * 2, "context": SHOP}),
        "bad_request",
    ),
    (
        "the user tier offered",
        envelope("inject.prepare", {"session_id": "s", "elsewhere": [offer("user", "user")]}),
        "bad_request",
    ),
    (
        "an offered learning of another tier",
        envelope(
            "inject.prepare",
            {"session_id": "s", "context": SHOP, "elsewhere": [offer("project:/srv/shop", "project:/srv/api")]},
        ),
        "bad_request",
    ),
    (
        "an offer of a tier not read",
        envelope("inject.prepare", {"session_id": "s", "elsewhere": [offer("project:/srv/shop", "project:/srv/shop")]}),
        "bad_request",
    ),
    (
        "record an injection of nothing",
        envelope("injection.record", {"injection_id": uuid7(), "learning_ids": []}),
        "bad_request",
    ),
    (
        "record a learning twice",
        envelope("injection.record", {"injection_id": uuid7(), "learning_ids": [RATED[0]["learning_id"]] * 2}),
        "bad_request",
    ),
    (
        "elsewhere without an injection",
        envelope("outcome.record", {"attributions": RATED, "elsewhere": RATED}),
        "bad_request",
    ),
    (
        "injected with an injection",
        envelope("outcome.record", {"injection_id": uuid7(), "attributions": [RATED[0] | {"injected": True}]}),
        "bad_request",
    ),
    (
        "rated here and elsewhere",
        envelope("outcome.record", {"injection_id": uuid7(), "attributions": RATED, "elsewhere": RATED}),
        "bad_request",
    ),
]


def snapshot(client: GrooveClient) -> list[dict[str, Any]]:
    return [x.model_dump() for x in client.iter_learnings()]


def test_each_bad_request_gets_its_code_and_changes_nothing(raw: Raw, client: GrooveClient) -> None:
    lid = client.learn("global", "solution", "kept", "kept")
    client.record_outcome([(lid, "helpful")])
    before = snapshot(client)
    for name, value, code in CASES:
        reply = raw.request(value)
        assert reply["ok"] is False, name
        assert reply["error"]["code"] == code, (name, reply)
        assert reply["error"]["message"], name
        assert isinstance(reply["error"]["retryable"], bool)
        if isinstance(value, dict) and "id" in value and code != "bad_request":
            assert reply["id"] == value["id"], name
        assert raw.request(envelope("ping", {}, rid="after"))["ok"] is True, f"not serving after {name}"
    assert snapshot(client) == before


def test_garbage_frames_and_oversized_messages(raw: Raw, client: GrooveClient) -> None:
    before = snapshot(client)
    raw.send(b"", b"\xc1\xff\x00garbage")
    assert raw.reply()["error"]["code"] == "bad_request"
    raw.send(b"", msgpack.packb({"v": 1, "id": "t", "op": "ping"})[:-3])
    assert raw.reply()["error"]["code"] == "bad_request"
    raw.send(b"only one frame, no delimiter")
    assert raw.reply()["error"]["code"] == "bad_request"
    raw.send(b"", b"a", b"b")
    assert raw.reply()["error"]["code"] == "bad_request"
    big = envelope("learning.put", {"learnings": [learning(n=1, pattern="x" * 60_000)] * 20}, rid="big-1")
    refused = raw.request(big)
    assert refused["error"]["code"] == "bad_request"
    assert refused["id"] == "big-1"  # read from the oversized request, so its sender can match the refusal
    assert snapshot(client) == before
    with pytest.raises(RequestTooLarge):  # the client refuses to send it at all, instead of timing out
        client.put_learnings([learning(n=i, pattern="x" * 60_000) for i in range(20)])
    assert snapshot(client) == before
    # past the transport's frame limit the connection is dropped; the coordinator keeps serving others
    raw.send(b"", b"\x00" * (C.MAX_FRAME_BYTES + 10))
    assert client.ping().protocol == 1
    assert snapshot(client) == before


def test_request_id_reused_for_another_operation(raw: Raw, client: GrooveClient) -> None:
    lid = client.learn("global", "solution", "d", "i")
    body = {"attributions": [{"learning_id": lid, "outcome": "helpful"}]}
    first = raw.request(envelope("outcome.record", body, rid="dup"))
    assert first["ok"] is True
    assert raw.request(envelope("outcome.record", body, rid="dup")) == first
    clash = raw.request(envelope("learning.delete", {"id": lid}, rid="dup"))
    assert clash["error"]["code"] == "bad_request"
    assert client.get(lid).usage.times_helpful == 1


def test_a_resend_with_another_body_is_refused_and_key_order_does_not_matter(
    coordinator_factory: Callable[..., RunningCoordinator], client_factory: Callable[..., GrooveClient]
) -> None:
    # --reply-cache 0: every resend is answered by the writer from the reply stored with the data, as after a
    # restart or once the in-memory cache has let the id go; the first coordinator answers from memory
    # the front checking (the default): the digest is the front's, and a resend's is compared with it
    for options in ((), ("--no-front-checks",), ("--reply-cache", "0")):
        coordinator = coordinator_factory(*options)
        client, raw = client_factory(coordinator.endpoint), Raw(coordinator.endpoint)
        first = raw.request(envelope("learning.put", put_body(description="first"), rid="same"))
        assert first["ok"] is True, first
        reordered = dict(reversed(list(put_body(description="first")["learnings"][0].items())))
        assert raw.request(envelope("learning.put", {"learnings": [reordered]}, rid="same")) == first
        other = raw.request(envelope("learning.put", put_body(description="second"), rid="same"))
        assert (other["ok"], other["error"]["code"], other["id"]) == (False, "conflict", "same"), options
        assert [x.description for x in client.iter_learnings()] == ["first"]
        coordinator.stop()
    coordinator.restart()  # with --reply-cache 0 still: the stored digest outlives the process
    raw = Raw(coordinator.endpoint)
    assert raw.request(envelope("learning.put", put_body(description="second"), rid="same"))["error"]["code"] == (
        "conflict"
    )
    assert raw.request(envelope("learning.put", put_body(description="first"), rid="same"))["ok"] is True


def test_every_spelling_of_a_project_root_reaches_one_tier(client: GrooveClient) -> None:
    spellings = ["/srv/app", "/srv/app/", "/srv/x/../app", "//srv/./app"]
    ids = [client.learn(f"project:{root}", "solution", f"d{i}", f"i{i}") for i, root in enumerate(spellings)]
    assert {t.tier for t in client.stats().tiers} == {"user", "project:/srv/app"}
    listed = client.list_learnings(tier="project:/srv/app/").learnings
    assert [x.id for x in listed] == ids
    assert {x.scope for x in listed} == {"project:/srv/app"}


FIELDS = sorted({f for op in OPS.values() for f in op.request.model_fields})


def random_message(rng: random.Random) -> list[bytes]:
    """A random frame layout, with payloads that are random bytes, random msgpack or cut-off requests."""
    kind = rng.randrange(4)
    if kind == 0:
        payload = rng.randbytes(rng.randrange(0, 300))
    elif kind == 1:
        value: Any = rng.choice([None, 1, -5, 2.5, "x", [1, "a"], {"v": 1}, {"id": "z"}, {1: 2}, b"\x00"])
        payload = msgpack.packb(value, use_bin_type=True)
    elif kind == 2:
        whole = msgpack.packb(
            envelope(
                rng.choice([*[name for name, op in OPS.items() if op.write], "ping", "learning.get"]),
                {"learnings": [learning(n=1)]},
                rid=f"f{rng.random()}",
            )
        )
        payload = whole[: rng.randrange(1, len(whole))]
    else:
        body: dict[str, Any] = {
            rng.choice(FIELDS): rng.choice([1, "x", [], {}, None, -1, "/", 1e300]) for _ in range(2)
        }
        payload = msgpack.packb(envelope(rng.choice(sorted(OPS)), body, rid="g"))
    return rng.choice([[b"", payload], [payload], [b"", payload, b"extra"], [b"x", payload], [b"", payload]])


def test_random_traffic_is_always_answered_and_changes_nothing(raw: Raw, client: GrooveClient) -> None:
    lid = client.learn("global", "solution", "kept", "kept")
    before = snapshot(client)
    rng = random.Random(20261122)
    sent = 400
    for _ in range(sent):
        raw.send(*random_message(rng))
    answered = 0
    for _ in range(sent):
        reply = raw.reply(timeout_ms=10_000)
        assert reply["ok"] is False or "body" in reply
        answered += 1
    assert answered == sent
    assert raw.sock.poll(200) == 0  # nothing more: one reply per message
    assert client.get(lid).description == "kept"
    assert snapshot(client) == before


def test_every_operation_refuses_an_unknown_field_and_every_field_of_the_wrong_type(
    raw: Raw, client: GrooveClient
) -> None:
    """Each op of the registry, and each of its request fields given a nested list (no field takes one): a
    `bad_request` naming the field, and nothing stored changed."""
    client.learn("global", "solution", "kept", "kept")
    before = snapshot(client)
    tried = 0
    for name, op in OPS.items():
        reply = raw.request(envelope(name, {"no_such_field": 1}, rid=f"{name}-unknown"))
        assert reply["error"]["code"] == "bad_request", (name, reply)
        assert "no_such_field" in reply["error"]["message"], name
        for field in op.request.model_fields:
            reply = raw.request(envelope(name, {field: [[[]]]}, rid=f"{name}-{field}"))
            assert reply["error"]["code"] == "bad_request", (name, field, reply)
            assert reply["id"] == f"{name}-{field}"
            tried += 1
    assert tried > 50
    assert snapshot(client) == before
