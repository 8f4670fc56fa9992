"""The envelope and its msgpack encoding (`use_bin_type=True`, `raw=False`): what a client needs to send a
request and read its reply.

Request payload: `{"v": 1, "id": str, "op": str, "body": map}`.
Reply payload:   `{"v": 1, "id": str, "ok": true, "body": map}` or
                 `{"v": 1, "id": str | null, "ok": false, "error": {"code", "message", "retryable", ...}}`.

Only msgpack and the constants are imported here: `groove hook` runs before every agent session and
speaks the protocol through this module alone, without loading pydantic or the operation registry
(`protocol.codec`, the coordinator's side).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgpack

from groove.protocol import constants as C
from groove.protocol.errors import DecodeError


def pack(value: Any) -> bytes:
    """msgpack-encode `value` with str as str and bytes as bin."""
    packed: bytes = msgpack.packb(value, use_bin_type=True)
    return packed


def unpack(data: bytes) -> Any:
    """msgpack-decode one value; raises DecodeError on anything that is not exactly one value."""
    try:
        return msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises several unrelated types on hostile input
        raise DecodeError(f"payload is not valid msgpack: {exc}") from None


def encode_request(request_id: str, op: str, body: dict[str, Any]) -> bytes:
    """The payload frame of a request."""
    return pack({"v": C.PROTOCOL_VERSION, "id": request_id, "op": op, "body": body})


@dataclass(slots=True)
class ReplyEnvelope:
    """A decoded reply envelope."""

    id: str | None
    ok: bool
    body: dict[str, Any]
    error: dict[str, Any] | None
    push: str | None = None  # set on an unsolicited message: what it carries (`nudge`)


def decode_reply(data: bytes) -> ReplyEnvelope:
    """Decode a reply envelope; raises DecodeError if it is not one."""
    value = unpack(data)
    if not isinstance(value, dict) or not isinstance(value.get("ok"), bool):
        raise DecodeError("reply is not a map with a boolean 'ok'")
    rid = value.get("id")
    if value["ok"]:
        body = value.get("body")
        if not isinstance(body, dict):
            raise DecodeError("reply has ok=true but no 'body' map")
        push = value.get("push")
        return ReplyEnvelope(rid, True, body, None, push if isinstance(push, str) else None)
    error = value.get("error")
    if not isinstance(error, dict) or not isinstance(error.get("code"), str):
        raise DecodeError("reply has ok=false but no 'error' map with a 'code'")
    return ReplyEnvelope(rid, False, {}, error)
