"""Resent writes, recognised by request id before anything else is done for them (PROTOCOL.md, section 7).

A write's request id is its idempotency key. While its first attempt waits for the commit, a resend joins
it and gets the same ack; afterwards a resend is answered from the reply cache (the most recent writes) or,
past it, by the writer from the reply stored in the tier with the data. The id names one request: a resend
must repeat the operation and the body. Another operation is `bad_request`; another body (compared by its
digest, however the client orders the keys) is `conflict`; neither changes anything.

Owned by the socket loop's thread; nothing here is thread-safe.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from groove.coordinator.errors import reused_id
from groove.coordinator.wire.codec import encode_error


@dataclass(slots=True)
class Waiting:
    """A write queued or committing: the peers to ack when it commits."""

    op: str
    digest: str
    peers: list[bytes]
    received: float  # perf_counter() when the first attempt arrived


class Resends:
    """Writes in flight and the replies of recent ones, by request id."""

    def __init__(self, cache_size: int) -> None:
        self.waiting: dict[str, Waiting] = {}
        # request id -> (op, body digest, reply payload), oldest first. An OrderedDict because evicting a plain
        # dict's first key skips every slot deleted before it: 32 µs per acked write once the cache is full.
        self._replies: OrderedDict[str, tuple[str, str, bytes]] = OrderedDict()
        self._cache_size = cache_size

    def __len__(self) -> int:
        """Replies cached."""
        return len(self._replies)

    def answer(self, peer: bytes, request_id: str, op: str, digest: str) -> bytes | None:
        """None for a request id not seen recently. Otherwise what to send `peer` now: the stored reply, an
        error for a reused id, or b"" when the resend joined its first attempt and is acked with it."""
        cached = self._replies.get(request_id)
        if cached is not None:
            first_op, first_digest, payload = cached
        elif (waiting := self.waiting.get(request_id)) is not None:
            first_op, first_digest, payload = waiting.op, waiting.digest, b""
        else:
            return None
        refusal = reused_id(request_id, first_op, first_digest, op, digest)
        if refusal is not None:
            return encode_error(request_id, refusal.code, refusal.message)
        if cached is None and peer not in self.waiting[request_id].peers:
            self.waiting[request_id].peers.append(peer)
        return payload

    def wait(self, request_id: str, op: str, digest: str, peer: bytes, received: float) -> None:
        """A new write was queued."""
        self.waiting[request_id] = Waiting(op, digest, [peer], received)

    def done(self, request_id: str, payload: bytes, cacheable: bool) -> Waiting:
        """A write was answered: remember its reply (unless it is an error worth retrying) and return who
        waited for it."""
        waiting = self.waiting.pop(request_id)
        if cacheable and self._cache_size:
            self._replies[request_id] = (waiting.op, waiting.digest, payload)
            if len(self._replies) > self._cache_size:
                self._replies.popitem(last=False)
        return waiting
