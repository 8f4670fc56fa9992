"""`AsyncGrooveClient`: the same operations as `GrooveClient` (the same steps, `calls.py`), awaited on asyncio over
one `zmq.asyncio` DEALER.

Any number of calls may be in flight on one client from many tasks: each waits on its own future, and one pump
task per client reads the socket and hands each reply to the call with its request id. The rules are the
synchronous transport's (`transport.py`): a request keeps its id across resends, an attempt that times out is
resent with its attempt timeout doubled, a retryable error (`busy`) is resent after the delay it suggests, every
call in flight is resent as soon as a dropped connection is back, and `absent_after` says when nothing listens.

Cancellation-safe: a cancelled call takes its request id out of the client at once, so its reply, if one comes,
is dropped by the pump and never read by a later call; a write it had sent may still be applied, once.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import time
from collections import deque
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any

import zmq
import zmq.asyncio

from groove.client.board import BoardCalls
from groove.client.calls import AsyncRunner
from groove.client.client import LearningCalls, taken_nudges
from groove.client.errors import CoordinatorAbsent, GrooveError, GrooveTimeout, from_wire
from groove.client.transport import (
    LINK_EVENTS,
    Result,
    Silence,
    absent_message,
    addressed,
    backoff_s,
    checked,
    configure,
    no_reply_message,
    too_large,
)
from groove.protocol import constants as C
from groove.protocol.boardrecords import Nudge
from groove.protocol.envelope import ReplyEnvelope, decode_reply, encode_request
from groove.protocol.errors import ProtocolError
from groove.protocol.frames import send_frames
from groove.protocol.ids import uuid7
from groove.protocol.keys import CurveClient
from groove.protocol.models import LearningOut


@dataclass(slots=True)
class _Flight:
    payload: bytes
    first_sent: float
    deadline: float
    attempt_timeout: float
    resend_at: float
    replied: asyncio.Future[ReplyEnvelope]
    last_error: GrooveError | None = None


class AsyncTransport:
    """A `zmq.asyncio` DEALER connected to one coordinator endpoint, shared by every task of one event loop."""

    def __init__(
        self,
        endpoint: str,
        timeout: float = 30.0,
        attempt_timeout: float = 2.0,
        context: zmq.asyncio.Context | None = None,
        curve: CurveClient | None = None,
        absent_after: float | None = None,
    ) -> None:
        self.endpoint, self.curve = checked(endpoint), curve
        self.timeout, self.attempt_timeout, self.absent_after = timeout, attempt_timeout, absent_after
        self.sock: zmq.asyncio.Socket = (context or zmq.asyncio.Context.instance()).socket(zmq.DEALER)
        # a blocking view of the same socket: the pump drains what poll said is there, and sends never wait
        self._now: zmq.Socket[bytes] = zmq.Socket.shadow(self.sock.underlying)
        configure(self._now, curve)
        self._monitor = self.sock.get_monitor_socket(LINK_EVENTS)
        self._events: zmq.Socket[bytes] = zmq.Socket.shadow(self._monitor.underlying)  # the same for link events
        self._dropped = self._reached = self._refused = False
        self._created = time.monotonic()
        self.silence = Silence(self.endpoint)  # a batch's calls still waiting for room fail once it is absent
        self.sock.connect(endpoint)
        self._flights: dict[str, _Flight] = {}
        self.pushed: deque[tuple[str, dict[str, Any]]] = deque(maxlen=10_000)
        self._pushed_more: asyncio.Event | None = None
        self._pump: asyncio.Task[None] | None = None

    def close(self) -> None:
        """Close the socket; calls in flight fail with GrooveError. Closing twice does nothing."""
        if self._pump is not None and not self._pump.done():
            self._pump.cancel()
        for flight in self._flights.values():
            if not flight.replied.done():
                flight.replied.set_exception(GrooveError("the client was closed while the call waited"))
        if not self.sock.closed:
            self.sock.disable_monitor()
            self._monitor.close(linger=0)
            self.sock.close(linger=0)

    async def aclose(self) -> None:
        """`close`, then wait for the pump to end."""
        self.close()
        if self._pump is not None:
            await asyncio.gather(self._pump, return_exceptions=True)

    async def call(
        self,
        op: str,
        body: dict[str, Any],
        timeout: float | None = None,
        attempt_timeout: float | None = None,
        request_id: str | None = None,
    ) -> dict[str, Any]:
        """As `Transport.call`, awaited."""
        if self.sock.closed:
            raise GrooveError("the client is closed")
        self._start_pump()
        rid = uuid7() if request_id is None else request_id
        if rid in self._flights:
            raise ValueError(f"request id {rid} is already in flight on this client")
        payload = encode_request(rid, op, body)
        if len(payload) > C.MAX_MESSAGE_BYTES:
            raise too_large(op, len(payload))
        now = time.monotonic()
        attempt = self.attempt_timeout if attempt_timeout is None else attempt_timeout
        budget = self.timeout if timeout is None else timeout
        replied: asyncio.Future[ReplyEnvelope] = asyncio.get_running_loop().create_future()
        flight = _Flight(payload, now, now + budget, attempt, now + attempt, replied)
        self._flights[rid] = flight
        try:
            self._send(payload)
            return await self._await(flight)
        finally:
            del self._flights[rid]  # cancelled or done: a late reply finds no one and is dropped

    async def _await(self, flight: _Flight) -> dict[str, Any]:
        while True:
            now = time.monotonic()
            wake = min(flight.resend_at, flight.deadline)
            if self.absent_after is not None and not self._reached:
                wake = min(wake, self._created + self.absent_after)
            await asyncio.wait([flight.replied], timeout=max(0.0, wake - now))
            now = time.monotonic()
            if flight.replied.done():
                reply = flight.replied.result()
                if reply.ok:
                    return reply.body
                assert reply.error is not None
                error = from_wire(reply.error)
                if not (error.retryable and now < flight.deadline):
                    raise error
                flight.last_error = error
                flight.resend_at = now + backoff_s(error)
                flight.replied = asyncio.get_running_loop().create_future()
                continue
            if self._absent():
                raise CoordinatorAbsent(absent_message(self.endpoint, self.absent_after or 0.0))
            if now >= flight.deadline:
                if flight.last_error is not None:  # it answered: say what, not "no reply"
                    raise flight.last_error
                self.silence.timed_out(flight.first_sent, flight.deadline)
                raise GrooveTimeout(no_reply_message(self.endpoint, flight.deadline - flight.first_sent, self.curve))
            if now >= flight.resend_at:
                if flight.last_error is None:  # a timed-out attempt: the next waits twice as long
                    flight.attempt_timeout = min(flight.attempt_timeout * 2, 10.0)
                flight.resend_at = min(flight.deadline, now + flight.attempt_timeout)
                self._send(flight.payload)

    def _absent(self) -> bool:
        if self.absent_after is None or self._reached or not self._refused:
            return False
        return time.monotonic() >= self._created + self.absent_after

    def _send(self, payload: bytes) -> None:
        # as the synchronous transport: never block on a missing connection; the resend timer tries again
        with contextlib.suppress(zmq.Again):
            send_frames(self._now, (b"", payload), block=False)
        # A send may take in replies that had arrived, and with them the edge of the socket's file descriptor
        # that the pump's poll waits on: what is readable now is read now, or it would wait for the next reply.
        if int(self._now.get(zmq.EVENTS)) & zmq.POLLIN:
            self._take_replies()

    def _start_pump(self) -> None:
        if self._pump is None or self._pump.done():
            self._pushed_more = asyncio.Event()
            self._pump = asyncio.get_running_loop().create_task(self._run_pump(), name=f"groove {self.endpoint}")

    async def _run_pump(self) -> None:
        """Read replies and link events for as long as the client lives; a failure fails every call waiting."""
        poller = zmq.asyncio.Poller()
        poller.register(self.sock, zmq.POLLIN)
        poller.register(self._monitor, zmq.POLLIN)
        try:
            while True:
                for sock, _ in await poller.poll():
                    if sock is self.sock:
                        self._take_replies()
                    else:
                        self._link_changed()
        except Exception as exc:  # handed to every caller waiting, who raise it
            for flight in self._flights.values():
                if not flight.replied.done():
                    flight.replied.set_exception(GrooveError(f"the client's socket failed: {exc}"))

    def _take_replies(self) -> None:
        while True:
            try:
                frames = self._now.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            self.silence.hear()
            try:
                reply = decode_reply(frames[-1])
            except ProtocolError:
                continue  # not a reply to us; the request will time out and be resent
            if reply.push is not None:
                self.pushed.append((reply.push, reply.body))
                if self._pushed_more is not None:
                    self._pushed_more.set()
                continue
            flight = addressed(reply, self._flights)
            if flight is not None and not flight.replied.done():
                flight.replied.set_result(reply)

    def _link_changed(self) -> None:
        while True:
            try:
                frames = self._events.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            (event,) = struct.unpack_from("=H", frames[0])
            if event == zmq.EVENT_CONNECT_RETRIED:
                self._refused = True
            elif event == zmq.EVENT_DISCONNECTED:
                self._dropped = True
            elif event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self._reached = True
                self.silence.hear()
                if self._dropped:  # the peer lost what it had not answered: send it all again now
                    self._dropped = False
                    now = time.monotonic()
                    for flight in self._flights.values():
                        if flight.resend_at < flight.deadline:  # not a call that must never be resent
                            flight.resend_at = min(flight.deadline, now + flight.attempt_timeout)
                            self._send(flight.payload)

    async def wait_pushed(self, timeout: float) -> None:
        """Wait up to `timeout` seconds for an unsolicited message, returning as soon as one came."""
        self._start_pump()
        assert self._pushed_more is not None
        self._pushed_more.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._pushed_more.wait(), timeout)


class AsyncGrooveClient(LearningCalls, BoardCalls, AsyncRunner):
    """A connection to a coordinator for asyncio programs: every operation of `GrooveClient`, awaited, with its
    retries and typed errors. One client serves any number of concurrent calls of one event loop.

        async with AsyncGrooveClient("tcp://127.0.0.1:5555") as client:
            hits = await client.search("flaky test under load")
    """

    def __init__(
        self,
        endpoint: str = "tcp://127.0.0.1:5555",
        timeout: float = 30.0,
        attempt_timeout: float = 2.0,
        context: zmq.asyncio.Context | None = None,
        curve: CurveClient | None = None,
        absent_after: float | None = None,
    ) -> None:
        """As `GrooveClient`'s (`context`: a `zmq.asyncio.Context`)."""
        self.transport = AsyncTransport(endpoint, timeout, attempt_timeout, context, curve, absent_after)

    async def __aenter__(self) -> AsyncGrooveClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection and wait for its reader to end (calls still waiting fail with GrooveError)."""
        await self.transport.aclose()

    def close(self) -> None:
        """Close the connection; calls still waiting fail with GrooveError."""
        self.transport.close()

    async def call(  # one request: what every operation's steps are run with
        self,
        op: str,
        body: dict[str, Any] | None = None,
        timeout: float | None = None,
        attempt_timeout: float | None = None,
        request_id: str | None = None,
    ) -> dict[str, Any]:
        """Any operation by name, with its body as a map; returns the reply body as a map."""
        return await self.transport.call(op, body or {}, timeout, attempt_timeout, request_id)

    async def call_many(
        self, calls: Iterable[tuple[str, dict[str, Any]]], window: int = 16, timeout: float | None = None
    ) -> list[Result]:
        """Up to `window` requests in flight at once; results in request order (errors included)."""
        room, batch = asyncio.Semaphore(window), time.monotonic()

        async def one(op: str, body: dict[str, Any]) -> Result:
            async with room:
                rid, began = uuid7(), time.monotonic()
                if (silent := self.transport.silence.unsent(batch)) is not None:
                    return Result(None, silent, 0.0, rid)
                try:
                    reply = await self.transport.call(op, body, timeout, request_id=rid)
                except GrooveError as exc:
                    return Result(None, exc, time.monotonic() - began, rid)
                return Result(reply, None, time.monotonic() - began, rid)

        return list(await asyncio.gather(*(one(op, body) for op, body in calls)))

    async def iter_learnings(
        self,
        scope_prefix: str | None = None,
        category: str | None = None,
        tier: str | None = None,
        page: int = C.MAX_LIST_LIMIT,
    ) -> AsyncIterator[LearningOut]:
        """Every learning matching the filters, fetched page by page."""
        cursor: str | None = None
        while True:
            reply = await self.list_learnings(scope_prefix, category, tier, page, cursor)
            for learning in reply.learnings:
                yield learning
            if reply.cursor is None:
                return
            cursor = reply.cursor

    async def pushed_nudges(self, wait: float = 0.0) -> list[Nudge]:
        """As `GrooveClient.pushed_nudges`, awaited."""
        if wait > 0 and not self.transport.pushed:
            await self.transport.wait_pushed(wait)
        return taken_nudges(self.transport.pushed)
