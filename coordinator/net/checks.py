"""The front's share of the per-request work, when the coordinator runs with `--front-checks`: a write request
decoded, its body's digest taken and its body validated in the front process, so that the coordinator's socket
thread only rebuilds the checked body (`protocol.rebuild`) and routes it.

Imported by the front only with that option: the protocol's models take a while to import, and a front without it
must start fast (`protocol.digests`).

What the coordinator gets for each checked request (a `checked` entry of a batch, see `front.py`):
`[user id or nil, routing id, request id, op, body digest, the body's model_dump()]`. Anything the checks refuse
(a malformed envelope, a read, a body that fails validation) goes to the coordinator as it came, which answers it
as it always has: its error reply and its count in `stats` are the same either way.
"""

from __future__ import annotations

from typing import Any

from groove.protocol.codec import decode_request, validate_body
from groove.protocol.digests import body_digest
from groove.protocol.errors import ProtocolError
from groove.protocol.ops import OPS
from groove.protocol.rebuild import rebuildable

# The operations checked here: the writes (the requests a swarm sends most), each with a body the coordinator
# can rebuild. A read goes to the coordinator as it came.
CHECKED = frozenset(name for name, op in OPS.items() if op.write and rebuildable(op.request))


def check(user_id: str | None, frames: list[bytes]) -> list[Any] | None:
    """A client message as a checked entry, or None if the coordinator should have it as it came."""
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
    return [user_id, frames[0], request.id, request.op, digest, body.model_dump()]
