"""The coordinator's side of the envelope: decoding and checking requests against the registry, encoding
replies and pushes. The client's side, which needs neither pydantic nor the registry, is `protocol.envelope`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgpack
from pydantic import BaseModel, ValidationError

from groove.protocol import constants as C
from groove.protocol.envelope import pack, unpack
from groove.protocol.errors import RETRYABLE, DecodeError, ErrorCode, ProtocolError, ValidationFailed
from groove.protocol.ops import OPS

_ENVELOPE_KEYS = frozenset({"v", "id", "op", "body"})


@dataclass(slots=True)
class RequestEnvelope:
    """A decoded request envelope; `body` is still the raw map."""

    id: str
    op: str
    body: dict[str, Any] = field(default_factory=dict)


def decode_request(data: bytes) -> RequestEnvelope:
    """Decode and check a request envelope (not yet its body); raises ProtocolError with the code to answer."""
    if len(data) > C.MAX_MESSAGE_BYTES:
        raise DecodeError(
            f"message is {len(data):,} bytes; the limit is {C.MAX_MESSAGE_BYTES:,} (1 MiB): split the request",
            _peek_id(data),
        )
    value = unpack(data)
    if not isinstance(value, dict):
        raise DecodeError(f"payload must be a msgpack map, got {type(value).__name__}")
    request_id = _request_id(value.get("id"))
    if request_id is None:
        raise DecodeError(f"'id' must be a string of 1-{C.MAX_REQUEST_ID_CHARS} characters")
    if value.get("v") != C.PROTOCOL_VERSION or isinstance(value.get("v"), bool):
        raise ProtocolError(
            ErrorCode.UNSUPPORTED_VERSION,
            f"protocol version {value.get('v')!r} is not supported; this coordinator speaks v{C.PROTOCOL_VERSION}",
            request_id,
        )
    unknown = set(value) - _ENVELOPE_KEYS
    if unknown:
        raise DecodeError(f"unknown envelope keys: {', '.join(sorted(map(str, unknown)))}", request_id)
    op = value.get("op")
    if not isinstance(op, str):
        raise DecodeError("'op' must be a string", request_id)
    if op not in OPS:
        raise ProtocolError(ErrorCode.UNKNOWN_OP, f"unknown operation {op[:60]!r}", request_id)
    body = value.get("body", {})
    if not isinstance(body, dict):
        raise DecodeError(f"'body' must be a map, got {type(body).__name__}", request_id)
    return RequestEnvelope(request_id, op, body)


def _request_id(raw: Any) -> str | None:
    """An envelope's `id` if it is a usable one (a string of 1-128 characters), else None."""
    return raw if isinstance(raw, str) and 0 < len(raw) <= C.MAX_REQUEST_ID_CHARS else None


def _peek(data: bytes, key: str) -> Any:
    """One top-level value of an envelope, read without decoding the rest (other values are skipped); None if
    there is no readable one."""
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=len(data))
    unpacker.feed(data)
    try:
        for _ in range(unpacker.read_map_header()):
            if unpacker.unpack() == key:
                return unpacker.unpack()
            unpacker.skip()
    except Exception:  # msgpack raises several unrelated types on hostile input
        return None


def _peek_id(data: bytes) -> str | None:
    """The request id of a payload too large to decode, so that its refusal reaches the request that caused it."""
    return _request_id(_peek(data, "id"))


def peek_op(data: bytes) -> str | None:
    """The operation a payload asks for, if it names one, without decoding its body."""
    op = _peek(data, "op")
    return op if isinstance(op, str) else None


def validate_body(request: RequestEnvelope) -> BaseModel:
    """The request's body as its operation's model; raises ValidationFailed with a readable message."""
    try:
        return OPS[request.op].request.model_validate(request.body)
    except ValidationError as exc:
        raise ValidationFailed(ErrorCode.BAD_REQUEST, describe(exc), request.id) from None


def describe(exc: ValidationError, limit: int = 3) -> str:
    """A one-line account of a ValidationError: `field.path: problem; ...`."""
    parts = []
    # an unknown field first: it is most often a misspelt one, and the "Field required" it causes says less
    errors = sorted(exc.errors(), key=lambda err: err["type"] != "extra_forbidden")
    for err in errors[:limit]:
        where = ".".join(str(p) for p in err["loc"]) or "body"
        message = err["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if err["loc"] else message)
    more = exc.error_count() - limit
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)


def encode_ok(request_id: str, body: dict[str, Any]) -> bytes:
    """The payload frame of a successful reply."""
    return pack({"v": C.PROTOCOL_VERSION, "id": request_id, "ok": True, "body": body})


def encode_push(kind: str, body: dict[str, Any]) -> bytes:
    """The payload frame of an unsolicited message (an immediate nudge): no request id, `push` says what."""
    return pack({"v": C.PROTOCOL_VERSION, "id": None, "ok": True, "push": kind, "body": body})


def encode_error(
    request_id: str | None,
    code: ErrorCode,
    message: str,
    retry_after_ms: int | None = None,
    detail: dict[str, Any] | None = None,
) -> bytes:
    """The payload frame of an error reply; `retry_after_ms` is sent with `busy`, `detail` holds a code's own
    fields (`owner` with `wrong_coordinator`)."""
    error: dict[str, Any] = (detail or {}) | {"code": code.value, "message": message, "retryable": RETRYABLE[code]}
    if retry_after_ms is not None:
        error["retry_after_ms"] = retry_after_ms
    return pack({"v": C.PROTOCOL_VERSION, "id": request_id, "ok": False, "error": error})
