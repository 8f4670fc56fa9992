"""The envelope codec: round trips, every way a payload can be wrong, and hostile bytes."""

from __future__ import annotations

import contextlib
import re

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groove.coordinator.wire.codec import decode_request, encode_error, encode_ok, peek_op, validate_body
from groove.protocol import constants as C
from groove.protocol.endpoints import EndpointError, check_endpoint
from groove.protocol.envelope import decode_reply, encode_request, pack
from groove.protocol.errors import DecodeError, ErrorCode, ProtocolError
from groove.protocol.ops import OPS


def test_request_round_trip() -> None:
    payload = encode_request("r1", C.OP_PING, {})
    assert msgpack.unpackb(payload, raw=False) == {"v": 1, "id": "r1", "op": "ping", "body": {}}
    request = decode_request(payload)
    assert (request.id, request.op, request.body) == ("r1", "ping", {})


def test_reply_round_trips() -> None:
    ok = decode_reply(encode_ok("r1", {"x": 1}))
    assert (ok.id, ok.ok, ok.body, ok.error) == ("r1", True, {"x": 1}, None)
    err = decode_reply(encode_error(None, ErrorCode.BUSY, "full", retry_after_ms=20))
    assert err.id is None
    assert err.ok is False
    assert err.error == {"code": "busy", "message": "full", "retryable": True, "retry_after_ms": 20}


@pytest.mark.parametrize(
    ("payload", "code", "has_id"),
    [
        (b"\xc1garbage", ErrorCode.BAD_REQUEST, False),
        (pack([1, 2, 3]), ErrorCode.BAD_REQUEST, False),
        (pack({"v": 1, "op": "ping", "body": {}}), ErrorCode.BAD_REQUEST, False),
        (pack({"v": 1, "id": 5, "op": "ping", "body": {}}), ErrorCode.BAD_REQUEST, False),
        (pack({"v": 2, "id": "a", "op": "ping", "body": {}}), ErrorCode.UNSUPPORTED_VERSION, True),
        (pack({"v": True, "id": "a", "op": "ping", "body": {}}), ErrorCode.UNSUPPORTED_VERSION, True),
        (pack({"id": "a", "op": "ping", "body": {}}), ErrorCode.UNSUPPORTED_VERSION, True),
        (pack({"v": 1, "id": "a", "op": "teleport", "body": {}}), ErrorCode.UNKNOWN_OP, True),
        (pack({"v": 1, "id": "a", "op": 7, "body": {}}), ErrorCode.BAD_REQUEST, True),
        (pack({"v": 1, "id": "a", "op": "ping", "body": [1]}), ErrorCode.BAD_REQUEST, True),
        (pack({"v": 1, "id": "a", "op": "ping", "body": {}, "extra": 1}), ErrorCode.BAD_REQUEST, True),
        (pack({"v": 1, "id": "x" * 200, "op": "ping", "body": {}}), ErrorCode.BAD_REQUEST, False),
        (b"\x00" * (C.MAX_MESSAGE_BYTES + 1), ErrorCode.BAD_REQUEST, False),
        (pack({"v": 1, "id": "a", "op": "ping", "body": {}}) + b"\x01", ErrorCode.BAD_REQUEST, False),
    ],
)
def test_bad_envelopes_get_the_right_code(payload: bytes, code: ErrorCode, has_id: bool) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_request(payload)
    assert caught.value.code == code
    assert (caught.value.request_id == "a") == has_id
    assert caught.value.message


def test_body_validation_message_names_the_field() -> None:
    request = decode_request(encode_request("a", C.OP_LEARNING_GET, {"id": "nope"}))
    with pytest.raises(ProtocolError) as caught:
        validate_body(request)
    assert caught.value.code == ErrorCode.BAD_REQUEST
    assert caught.value.message.startswith("id: ")
    assert "UUIDv7" in caught.value.message


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=512))
def test_random_bytes_never_escape_as_anything_but_protocol_errors(data: bytes) -> None:
    try:
        request = decode_request(data)
    except ProtocolError:
        return
    with contextlib.suppress(ProtocolError):
        validate_body(request)


json_like = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.text(max_size=20)
    | st.binary(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(sorted(OPS)),
    # every field name any operation knows, and one none does: each op also meets its neighbours' fields
    st.dictionaries(
        st.sampled_from(sorted({f for op in OPS.values() for f in op.request.model_fields} | {"zz"})),
        json_like,
        max_size=4,
    ),
)
def test_random_bodies_are_accepted_or_rejected_cleanly(op: str, body: dict[str, object]) -> None:
    request = decode_request(encode_request("a", op, body))
    try:
        validate_body(request)
    except ProtocolError as exc:
        failure: ProtocolError | None = exc
    else:
        failure = None
    if failure is not None:
        assert failure.code == ErrorCode.BAD_REQUEST
        assert failure.request_id == "a"


@pytest.mark.parametrize(
    ("endpoint", "binding"),
    [
        ("tcp://127.0.0.1:5555", False),
        ("tcp://*:0", True),
        ("tcp://[::1]:80", False),
        ("ipc:///tmp/g", False),
        ("tcp://eth0:5555", True),
        ("tcp://127.0.0.1:*", True),
        ("inproc://x", False),
    ],
)
def test_well_formed_endpoints_pass(endpoint: str, binding: bool) -> None:
    assert check_endpoint(endpoint, binding) == endpoint


@pytest.mark.parametrize(
    ("endpoint", "binding", "says"),
    [
        ("localhost:5555", False, "did you mean tcp://localhost:5555"),
        ("bogus", True, "no transport"),
        ("tcp://nohost", False, "needs a port"),
        ("tcp://h:0", False, "port"),
        ("tcp://*:5555", False, "not a host"),
        ("tcp://h:99999", True, "port"),
        ("udp://h:1", False, "unknown transport"),
        ("tcp://", False, "no address"),
    ],
)
def test_malformed_endpoints_are_refused_saying_what_was_expected(endpoint: str, binding: bool, says: str) -> None:
    with pytest.raises(EndpointError, match=re.escape(says)):
        check_endpoint(endpoint, binding)


def test_an_oversized_request_is_refused_under_its_own_id() -> None:
    data = encode_request("big-1", "learning.put", {"learnings": [{"description": "x" * (C.MAX_MESSAGE_BYTES + 1)}]})
    with pytest.raises(DecodeError) as refused:
        decode_request(data)
    assert refused.value.request_id == "big-1"


def test_peek_op_reads_the_operation_without_decoding_the_body() -> None:
    payload = encode_request("r1", C.OP_PING, {})
    assert peek_op(payload) == C.OP_PING
    big = encode_request("r2", C.OP_LEARNING_PUT, {"learnings": [{"description": "x" * 10_000}]})
    assert peek_op(big) == C.OP_LEARNING_PUT
    assert peek_op(msgpack.packb({"id": "r3", "op": 7})) is None  # not a string: not an operation
    assert peek_op(msgpack.packb([1, 2])) is None  # not a map
    assert peek_op(b"\xc1garbage") is None
