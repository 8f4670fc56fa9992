"""The front's share of the per-request work (on unless `--no-front-checks`): a write request decoded, its body's
digest taken and its body validated in the front process, so that the coordinator's socket thread only routes it.

A plain `learning.put` (new learnings for one tier, ids the coordinator's to choose) goes further: the front
builds the rows it stores, its keyword text and its ack (`write/built.py`), and the writer only joins and commits
them. Any other write the front checks reaches the coordinator as `[user id or nil, routing id, request id, op,
body digest, the body's model_dump()]`, and the socket thread rebuilds the body from it (`protocol.rebuild`).
Anything the checks refuse (a malformed envelope, a read, a body that fails validation) goes to the coordinator
as it came, which answers it as it always has: its error reply and its count in `stats` are the same either way.

Imported by the front only with the checks on: the protocol's models take a while to import, and a front without
them must start fast.
"""

from __future__ import annotations

from typing import Any

from groove.coordinator.wire.codec import decode_request, validate_body
from groove.coordinator.wire.digests import body_digest
from groove.coordinator.wire.rebuild import rebuildable
from groove.coordinator.write.built import build
from groove.protocol import constants as C
from groove.protocol.errors import ProtocolError
from groove.protocol.ids import now_ms
from groove.protocol.models import LearningPutRequest
from groove.protocol.ops import OPS

# The operations checked here: the writes (the requests a swarm sends most), each with a body the coordinator
# can rebuild. A read goes to the coordinator as it came.
CHECKED = frozenset(name for name, op in OPS.items() if op.write and rebuildable(op.request))

# What `check` found: a write checked (its entry for the batch's `checked` list), or a put built (for `built`)
CHECKED_WRITE, BUILT_PUT = 0, 1


def check(user_id: str | None, frames: list[bytes]) -> tuple[int, list[Any]] | None:
    """A client message as a checked or built entry, or None if the coordinator should have it as it came."""
    if len(frames) != 3 or frames[1] != b"":
        return None
    try:
        request = decode_request(frames[2])
        if request.op not in CHECKED:
            return None
        digest = body_digest(request.body)
        body = validate_body(request)
    except ProtocolError:
        return None
    if request.op == C.OP_LEARNING_PUT:
        assert isinstance(body, LearningPutRequest)
        built = build(request.id, body, digest, frames[2], now_ms())
        if built is not None:
            return BUILT_PUT, [user_id, frames[0], *built.wire()]
    return CHECKED_WRITE, [user_id, frames[0], request.id, request.op, digest, body.model_dump()]
