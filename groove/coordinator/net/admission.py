"""A request's way in, on the socket loop: decoded (or taken as the front checked or built it), admitted (its key's
role, a resend answered from the reply cache, `busy` under a flood) and routed to its handler: a write to the
batcher, a control op answered at once, a read to a reader thread (`_read`, whose reply goes back over the outbox).
`server.Coordinator` is one of these; the loop, start-up and shutdown are `server.py`'s.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import queue
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from groove.coordinator.errors import Rejected
from groove.coordinator.inproc import Pushers
from groove.coordinator.metrics import OK, Metrics
from groove.coordinator.net.auth import ADMIN, Principal
from groove.coordinator.net.handlers import HANDLERS, Control, Prepared, Read, Services, Write
from groove.coordinator.net.link import FrontLink
from groove.coordinator.net.permissions import body_refusal, op_refusal, put_refusal
from groove.coordinator.net.registry import AgentRegistry
from groove.coordinator.net.resends import Resends
from groove.coordinator.wire.codec import RequestEnvelope, decode_request, encode_error, encode_ok, validate_body
from groove.coordinator.wire.digests import body_digest
from groove.coordinator.wire.rebuild import rebuild
from groove.coordinator.write.batcher import Batcher
from groove.coordinator.write.built import Built
from groove.coordinator.write.ops import BUILT_BODY, PUT, WriteItem, WriteOp
from groove.protocol import constants as C
from groove.protocol.errors import ErrorCode, ProtocolError
from groove.protocol.frames import send_frames
from groove.protocol.ops import OPS

if TYPE_CHECKING:
    from groove.coordinator.search.embedpool import EmbedPool

log = logging.getLogger(__name__)

READ, CHOSEN = b"R", b"C"  # outbox frames: a read's reply; a write a reader prepared, for the socket loop
_MAX_PENDING_READS = 10_000  # reads queued for the reader threads; past this they get `busy`


class Admission:
    """The coordinator's request handling, apart from its loop (what `server.Coordinator` sets up)."""

    services: Services  # what the handlers see of the coordinator
    metrics: Metrics
    registry: AgentRegistry
    batcher: Batcher
    resends: Resends
    link: FrontLink
    readers: ThreadPoolExecutor
    pool: EmbedPool | None
    outbox: Pushers
    principals: dict[bytes, Principal] | None
    _closing: bool
    _reads_pending: int  # socket thread only
    # writes prepared on reader threads, for the socket thread: (peer, request id, digest, write, body, received)
    _chosen: queue.SimpleQueue[tuple[bytes, str, str, WriteOp[Any], BaseModel, float]]

    def _principal(self, user_id: str | None, peer: bytes) -> Principal | None:
        """Who sent a message: its key's principal (everyone is admin without CURVE); None once refused."""
        who = ADMIN if self.principals is None else self.principals.get((user_id or "").encode())
        if who is None:  # the front admitted only known keys, so this cannot happen; refuse, never assume
            self._error(peer, None, ErrorCode.UNAUTHORIZED, "this key is not authorized")
        return who

    def _send(self, peer: bytes, payload: bytes) -> None:
        self.link.send(peer, payload)
        self.metrics.requests_served += 1

    def _error(
        self, peer: bytes, request_id: str | None, code: ErrorCode, message: str, retry_after_ms: int | None = None,
        op: str = "",
    ) -> None:  # fmt: skip
        """Refuse a request before it reaches a handler; counted by its op ("" when it could not be read)."""
        self.metrics.refused(op, code.value)
        self._send(peer, encode_error(request_id, code, message, retry_after_ms))

    def _handle(self, frames: list[bytes], who: Principal) -> None:
        peer, op = frames[0], ""
        if len(frames) != 3 or frames[1] != b"":
            got = f"expected 2 frames [empty delimiter, payload] from a DEALER, got {len(frames) - 1}"
            self._error(peer, None, ErrorCode.BAD_REQUEST, got)
            return
        try:
            request = decode_request(frames[2])
            op = request.op
            # A resend is recognised by its id before its body is validated again: a flood of resends costs a
            # digest and a lookup each. It is answered from the stored reply, or when the first attempt commits.
            digest = body_digest(request.body) if OPS[op].deduped else ""
            if not self._admitted(peer, request, digest, who):
                return
            body = validate_body(request)
        except ProtocolError as exc:
            self._error(peer, exc.request_id, exc.code, exc.message, op=op)
            return
        self._route(peer, request, digest, body, who)

    def _handle_checked(self, peer: bytes, who: Principal, request: RequestEnvelope, digest: str, dump: Any) -> None:
        """A write the front decoded, digested and validated (`--front-checks`): `_handle`'s steps, the body
        rebuilt from its dump instead of validated again."""
        self.metrics.front_checked += 1
        if self._admitted(peer, request, digest, who):
            self._route(peer, request, digest, rebuild(OPS[request.op].request, dump), who)

    def _handle_built(self, peer: bytes, who: Principal, put: Built) -> None:
        """A put the front built (write/built.py): `_handle`'s steps, its roles checked on what it stores."""
        self.metrics.front_checked += 1
        if not self._admitted(peer, RequestEnvelope(put.request_id, C.OP_LEARNING_PUT), put.digest, who):
            return
        scopes = [scope for _, scope, _ in put.hashes]
        if who.role != C.ROLE_ADMIN and (reason := put_refusal(who, put.tier, scopes)) is not None:
            self._unauthorized(peer, put.request_id, reason, C.OP_LEARNING_PUT)
            return
        self._write(peer, WriteItem(put.request_id, PUT, BUILT_BODY, put.digest, built=put), time.perf_counter())

    def _admitted(self, peer: bytes, request: RequestEnvelope, digest: str, who: Principal) -> bool:
        """Whether a request goes on to its handler; False once it is answered (refused, or a resend)."""
        self.registry.touch(peer)
        if who is not ADMIN and (reason := op_refusal(who, request.op)) is not None:
            self._unauthorized(peer, request.id, reason, request.op)
            return False
        if digest and self._known(peer, request.id, request.op, digest):
            return False
        if isinstance(HANDLERS[request.op], Write) and self.batcher.full():
            self._refuse_write(peer, request.id, request.op)  # under a flood, before spending a validation on it
            return False
        return True

    def _route(self, peer: bytes, request: RequestEnvelope, digest: str, body: BaseModel, who: Principal) -> None:
        op, handler = request.op, HANDLERS[request.op]
        if who is not ADMIN and (reason := body_refusal(who, body)) is not None:
            self._unauthorized(peer, request.id, reason, op)
            return
        if isinstance(handler, Write):
            self._write(peer, WriteItem(request.id, handler.op, body, digest, curates=who.curates), time.perf_counter())
        elif isinstance(handler, Control):
            try:
                self._send(peer, encode_ok(request.id, handler.run(self.services, peer, body)))
            except Rejected as exc:
                self._error(peer, request.id, exc.code, exc.message, op=op)
                return
            for to, push in handler.then(self.services, peer, body) if handler.then is not None else ():
                self._send(to, push)
        elif self._reads_pending >= _MAX_PENDING_READS:
            waiting = f"{_MAX_PENDING_READS} reads are already waiting; retry shortly"
            self._error(peer, request.id, ErrorCode.BUSY, waiting, C.DEFAULT_BUSY_RETRY_MS * 4, op)
        else:
            self._reads_pending += 1
            reading = functools.partial(self._read, peer, request, digest, body, time.perf_counter())
            read = functools.partial(self.readers.submit, reading)
            self.pool.first(body, read) if self.pool is not None else read()  # a query's vector first (queries.py)

    def _known(self, peer: bytes, request_id: str, op: str, digest: str) -> bool:
        """Answer a request id seen before (or join its waiters); False if it is new."""
        answer = self.resends.answer(peer, request_id, op, digest)
        if answer:
            self._send(peer, answer)
        return answer is not None

    def _write(self, peer: bytes, item: WriteItem, received: float) -> None:
        """Queue a write whose id is not known yet (callers check `_known` first)."""
        if self._closing:
            closing = "coordinator is shutting down; retry after it restarts"
            self._error(peer, item.request_id, ErrorCode.BUSY, closing, retry_after_ms=1000, op=item.op.name)
            return
        if not self.batcher.submit(item):
            self._refuse_write(peer, item.request_id, item.op.name)
            return
        self.resends.wait(item.request_id, item.op.name, item.digest, peer, received)

    def _unauthorized(self, peer: bytes, request_id: str, reason: str, op: str) -> None:
        self.metrics.unauthorized += 1
        self._error(peer, request_id, ErrorCode.UNAUTHORIZED, reason, op=op)

    def _refuse_write(self, peer: bytes, request_id: str, op: str) -> None:
        """`busy`, come back in half the time the writer needs for the queue: a flood of clients then backs
        off in step with the writer instead of hammering the socket loop."""
        drain = self.metrics.drain_ms(self.batcher.depth()) / 2
        self._error(
            peer,
            request_id,
            ErrorCode.BUSY,
            f"write queue is full ({self.batcher.capacity} requests); retry shortly",
            retry_after_ms=int(min(C.MAX_BUSY_RETRY_MS, max(C.DEFAULT_BUSY_RETRY_MS, drain))),
            op=op,
        )

    def _read(self, peer: bytes, request: RequestEnvelope, digest: str, body: BaseModel, received: float) -> None:
        handler = HANDLERS[request.op]
        try:
            if isinstance(handler, Prepared):
                # prepared here; the socket thread queues its write, and the ack goes out after the commit
                prepared = handler.prepare(self.services, body, request.id)
                self._chosen.put((peer, request.id, digest, handler.op, prepared, received))
                self.outbox.socket().send(CHOSEN)
                return
            assert isinstance(handler, Read)
            with self.batcher.held() if handler.held else contextlib.nullcontext():
                result = handler.run(self.services, body)
            if "took_ms" in OPS[request.op].reply.model_fields:
                result["took_ms"] = (time.perf_counter() - received) * 1000
            payload, outcome = encode_ok(request.id, result), OK
        except Rejected as exc:
            payload, outcome = encode_error(request.id, exc.code, exc.message, detail=exc.detail), exc.code.value
        except Exception:
            log.exception("%s %s failed", request.op, request.id)
            payload = encode_error(request.id, ErrorCode.INTERNAL, f"{request.op} failed inside the coordinator")
            outcome = ErrorCode.INTERNAL.value
        self.metrics.record_op(request.op, (time.perf_counter() - received) * 1000, outcome)
        send_frames(self.outbox.socket(), (READ, peer, payload))
