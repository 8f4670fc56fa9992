"""Request/reply over one DEALER socket, with deadlines, retries and many requests in flight.

A request keeps its id across every resend, so the coordinator applies a retried write once and answers
the retry with the original reply. A resend happens when an attempt times out (doubling the attempt
timeout each time), when the coordinator answers with a retryable error such as `busy` (after the
delay it suggests, with jitter), and at once when the connection comes back after it dropped: a coordinator
that died lost what it had not answered, and its restart should not wait out the attempt timeout.
"""

from __future__ import annotations

import contextlib
import random
import struct
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import zmq

from groove.client.errors import (
    BadEndpoint,
    CoordinatorAbsent,
    GrooveError,
    GrooveTimeout,
    RemoteError,
    RequestTooLarge,
    Stopped,
    from_wire,
)
from groove.protocol import constants as C
from groove.protocol.endpoints import EndpointError, check_endpoint
from groove.protocol.envelope import ReplyEnvelope, decode_reply, encode_request
from groove.protocol.errors import ProtocolError
from groove.protocol.frames import send_frames
from groove.protocol.ids import uuid7
from groove.protocol.keys import CurveClient

# the monitor's events that matter: the link dropped; it is back (ZMTP handshake done, CURVE included); a
# connection attempt failed (refused: nothing listens there) and will be retried
LINK_EVENTS = zmq.EVENT_DISCONNECTED | zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_CONNECT_RETRIED

STOPPED = "stopped: the time to finish ran out before the reply came"
_POLL_SLICE_S = 1.0  # the longest one poll waits
MIN_BACKOFF_S = 0.005
MAX_BACKOFF_S = C.MAX_BUSY_RETRY_MS / 1000
F = TypeVar("F")  # a transport's record of a call in flight


def checked(endpoint: str) -> str:
    """The endpoint, or BadEndpoint saying what is wrong with it (before any socket sees it)."""
    try:
        check_endpoint(endpoint)
    except EndpointError as exc:
        raise BadEndpoint(str(exc)) from None
    return endpoint


def configure(sock: zmq.Socket[bytes], curve: CurveClient | None) -> None:
    """A client DEALER's options: closed at once, reconnecting fast, CURVE when given."""
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RECONNECT_IVL, 50)
    sock.setsockopt(zmq.RECONNECT_IVL_MAX, 1000)
    if curve is not None:
        curve.apply(sock)


def absent_message(endpoint: str, after: float) -> str:
    """What a call says when nothing has listened at the endpoint for `after` seconds."""
    return (
        f"nothing is listening at {endpoint}: connecting was refused for {after:.1f} s "
        "(is the coordinator running? `groove serve` starts one)"
    )


class Silence:
    """When the coordinator last said anything (a reply, a push, a handshake). A call whose whole deadline passed
    with nothing heard finds it `absent`: the calls of that batch still waiting then fail at once, unsent, rather
    than wait a deadline each. The next word from the coordinator clears `absent`; the next batch is sent as usual.
    One per transport, sync or async."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.heard = time.monotonic()
        self.absent = False
        self._found = 0.0  # when `absent` was last found

    def hear(self) -> None:
        """The coordinator said something."""
        self.heard, self.absent = time.monotonic(), False

    def timed_out(self, first_sent: float, deadline: float) -> None:
        """A call sent at `first_sent` reached its `deadline` unanswered."""
        now = time.monotonic()
        if now - self.heard >= deadline - first_sent:
            self.absent, self._found = True, now

    def unsent(self, batch_began: float) -> CoordinatorAbsent | None:
        """What a call of the batch begun at `batch_began` fails with, unsent, if the coordinator was found silent
        since; None to send it."""
        if not (self.absent and self._found >= batch_began):
            return None
        return CoordinatorAbsent(
            f"nothing heard from {self.endpoint} for {time.monotonic() - self.heard:.1f} s, a whole deadline: the "
            "calls still queued were not sent (is the coordinator running?)"
        )


def too_large(op: str, size: int) -> RequestTooLarge:
    """A request over the message limit, never sent: the coordinator would refuse it, and over MAX_FRAME_BYTES it
    would drop the connection unanswered."""
    return RequestTooLarge(
        f"{op} request is {size:,} bytes encoded; the limit is {C.MAX_MESSAGE_BYTES:,} (1 MiB): split it into "
        "smaller requests"
    )


def backoff_s(error: RemoteError) -> float:
    """How long to wait before resending after a retryable error: the delay it suggests, jittered and bounded."""
    delay = (error.retry_after_ms or C.DEFAULT_BUSY_RETRY_MS) / 1000.0
    return min(MAX_BACKOFF_S, max(MIN_BACKOFF_S, delay)) * random.uniform(0.5, 1.5)


def addressed(reply: ReplyEnvelope, flights: dict[str, F]) -> F | None:
    """The call in flight a reply answers, or None (a late reply to an attempt already answered). An error about
    a request whose id the coordinator could not read has no id: with one call in flight, it is that one's."""
    if reply.id is None and not reply.ok and len(flights) == 1:
        return next(iter(flights.values()))
    return flights.get(reply.id) if isinstance(reply.id, str) else None


def no_reply_message(endpoint: str, waited: float, curve: CurveClient | None) -> str:
    """What a call that got no reply by its deadline says."""
    return f"no reply from {endpoint} within {waited:.1f} s " + (
        "(is the coordinator running, with this server key, and is this client's key authorized?)"
        if curve is not None
        else "(is the coordinator running? one started with --curve answers only CURVE clients)"
    )


@dataclass(slots=True)
class Result:
    """One pipelined call's outcome: `body` on success, else `error`; `latency_s` from first send to reply."""

    body: dict[str, Any] | None
    error: GrooveError | None
    latency_s: float
    request_id: str


@dataclass(slots=True)
class _Flight:
    index: int
    request_id: str
    payload: bytes
    first_sent: float
    resend_at: float
    deadline: float
    attempt_timeout: float
    last_error: GrooveError | None = None  # the coordinator's last retryable answer, said if the deadline passes


class Transport:
    """A DEALER connected to one coordinator endpoint. Not thread-safe: one per thread."""

    def __init__(
        self,
        endpoint: str,
        timeout: float = 30.0,
        attempt_timeout: float = 2.0,
        context: zmq.Context[zmq.Socket[bytes]] | None = None,
        curve: CurveClient | None = None,
        absent_after: float | None = None,
    ) -> None:
        """`absent_after`: fail every call with CoordinatorAbsent once connections to the endpoint have been
        refused for this many seconds with none ever made (a command line's quick answer); None: keep trying
        until each call's deadline (a worker outliving a coordinator's restart). A coordinator that accepts the
        connection and answers slowly is never called absent; one that says nothing for a whole deadline while a
        call waits is (`silence`): the calls of that batch still queued then fail at once, unsent."""
        self.endpoint = checked(endpoint)
        self.curve = curve
        self.timeout = timeout
        self.attempt_timeout = attempt_timeout
        self._context = context or zmq.Context.instance()
        self.sock: zmq.Socket[bytes] = self._context.socket(zmq.DEALER)
        configure(self.sock, curve)
        self._monitor = self.sock.get_monitor_socket(LINK_EVENTS)
        self._dropped = False  # the connection dropped and has not come back yet
        self.absent_after = absent_after
        self._reached = False  # a connection was ever made (its handshake done)
        self._refused = False  # a connection attempt failed
        self._created = time.monotonic()
        self.silence = Silence(self.endpoint)
        # when (monotonic) every request still waiting gives up with `Stopped`, whatever its deadline: a worker told
        # to stop gives one, read between polls (a signal handler may change it)
        self.cutoff: Callable[[], float] | None = None
        self.sock.connect(endpoint)
        # Unsolicited messages (immediate nudges) as (kind, body), oldest first, taken by `take_pushed`.
        self.pushed: deque[tuple[str, dict[str, Any]]] = deque(maxlen=10_000)
        # Pollers for the socket's life (Socket.poll() builds a new one on every call): one for replies alone,
        # one for replies and the link's events.
        self._replies = zmq.Poller()
        self._replies.register(self.sock, zmq.POLLIN)
        self._poller = zmq.Poller()
        self._poller.register(self.sock, zmq.POLLIN)
        self._poller.register(self._monitor, zmq.POLLIN)

    def wait_pushed(self, timeout: float) -> None:
        """Take in unsolicited messages for up to `timeout` seconds, returning as soon as one came (between
        calls nothing else reads the socket)."""
        deadline = time.monotonic() + timeout
        before = len(self.pushed)
        while len(self.pushed) == before and (left := deadline - time.monotonic()) > 0:
            self._poll(left, {}, {})

    def close(self) -> None:
        """Close the socket; unanswered requests are abandoned. Closing twice does nothing."""
        if self.sock.closed:
            return
        self.sock.disable_monitor()
        self._monitor.close(linger=0)
        self.sock.close(linger=0)

    def call(
        self,
        op: str,
        body: dict[str, Any],
        timeout: float | None = None,
        attempt_timeout: float | None = None,
        request_id: str | None = None,
    ) -> dict[str, Any]:
        """Send one request and return its reply body; raises a RemoteError subclass or GrooveTimeout.

        `attempt_timeout` overrides the transport's for this call (long operations that must not be resent);
        `request_id` sends it under an id chosen before (a write resent later is then applied once)."""
        ids = None if request_id is None else [request_id]
        result = self.call_many([(op, body)], 1, timeout, attempt_timeout, ids)[0]
        if result.error is not None:
            raise result.error
        assert result.body is not None
        return result.body

    def call_many(
        self,
        calls: Iterable[tuple[str, dict[str, Any]]],
        window: int = 16,
        timeout: float | None = None,
        attempt_timeout: float | None = None,
        request_ids: Sequence[str] | None = None,
    ) -> list[Result]:
        """Send requests with up to `window` in flight; results come back in request order.

        Each request has its own deadline of `timeout` seconds from its first send, and a new id unless
        `request_ids` gives them.
        """
        budget = self.timeout if timeout is None else timeout
        attempt = self.attempt_timeout if attempt_timeout is None else attempt_timeout
        pending = iter(enumerate(calls))
        results: dict[int, Result] = {}
        flights: dict[str, _Flight] = {}
        exhausted, began = False, time.monotonic()
        while flights or not exhausted:
            if (silent := self.silence.unsent(began)) is not None:
                self._fail_rest(silent, flights, pending, request_ids, results)
                break
            if self.cutoff is not None and time.monotonic() >= self.cutoff():
                self._fail_rest(Stopped(STOPPED), flights, pending, request_ids, results)
                break
            while not exhausted and len(flights) < window:
                nxt = next(pending, None)
                if nxt is None:
                    exhausted = True
                    break
                index, (op, body) = nxt
                rid = uuid7() if request_ids is None else request_ids[index]
                now = time.monotonic()
                payload = encode_request(rid, op, body)
                if len(payload) > C.MAX_MESSAGE_BYTES:
                    # the coordinator would refuse it; over MAX_FRAME_BYTES it would drop the connection unanswered
                    results[index] = Result(None, too_large(op, len(payload)), 0.0, rid)
                    continue
                flight = _Flight(index, rid, payload, now, now + attempt, now + budget, attempt)
                flights[rid] = flight
                self._send(flight.payload)
            if not flights:
                break
            now = time.monotonic()
            # a second at most: a stop's cutoff, set from a signal handler meanwhile, is looked at between polls
            wait = min(min(f.resend_at for f in flights.values()) - now, _POLL_SLICE_S)
            if self.absent_after is not None and not self._reached:
                wait = min(wait, self._created + self.absent_after - now)
            self._poll(max(0.0, wait), flights, results)
            if self._absent():
                self._fail_absent(flights, results)
                break
            self._resend_due(flights, results)
        return [results[i] for i in sorted(results)]

    @staticmethod
    def _fail_rest(
        error: GrooveError,
        flights: dict[str, _Flight],
        pending: Iterator[tuple[int, tuple[str, dict[str, Any]]]],
        request_ids: Sequence[str] | None,
        results: dict[int, Result],
    ) -> None:
        """Every call of the batch not answered yet, in flight or still queued (then never sent), fails with `error`."""
        now = time.monotonic()
        for flight in flights.values():
            results[flight.index] = Result(None, error, now - flight.first_sent, flight.request_id)
        flights.clear()
        for index, _ in pending:
            results[index] = Result(None, error, 0.0, uuid7() if request_ids is None else request_ids[index])

    def _absent(self) -> bool:
        """Whether nothing has listened at the endpoint for `absent_after` seconds."""
        if self.absent_after is None or self._reached or not self._refused:
            return False
        return time.monotonic() >= self._created + self.absent_after

    def _fail_absent(self, flights: dict[str, _Flight], results: dict[int, Result]) -> None:
        now = time.monotonic()
        absent = CoordinatorAbsent(absent_message(self.endpoint, self.absent_after or 0.0))
        for flight in flights.values():
            results[flight.index] = Result(None, absent, now - flight.first_sent, flight.request_id)
        flights.clear()

    def _send(self, payload: bytes) -> None:
        # No connection to queue it on (a refused CURVE handshake drops it) or the send buffer is full:
        # blocking here would outlive every deadline; the resend timer tries again.
        with contextlib.suppress(zmq.Again):
            send_frames(self.sock, (b"", payload), block=False)

    def _poll(self, wait: float, flights: dict[str, _Flight], results: dict[int, Result]) -> None:
        """Wait up to `wait` seconds for replies or a change of link, and take what came."""
        for sock, _ in self._poller.poll(int(wait * 1000) + 1):
            if sock is self.sock:
                self._receive(flights, results)
            else:
                self._link_changed(flights)

    def _link_changed(self, flights: dict[str, _Flight]) -> None:
        # Resent on the handshake, not on the drop: ZeroMQ keeps what is sent while disconnected, but not what
        # the dead peer had already taken. The copy ZeroMQ kept, if any, is answered once (same request id).
        while self._monitor.poll(0):
            # frame 1: the event (uint16) and its value (uint32), native order; frame 2: the endpoint. Read here,
            # not with zmq.utils.monitor, which imports asyncio and ssl (26 ms at every client's start)
            (event,) = struct.unpack_from("=H", self._monitor.recv_multipart()[0])
            if event == zmq.EVENT_CONNECT_RETRIED:
                self._refused = True
            elif event == zmq.EVENT_DISCONNECTED:
                self._dropped = True
            elif event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self._reached = True
                self.silence.hear()
            if event == zmq.EVENT_HANDSHAKE_SUCCEEDED and self._dropped:
                self._dropped = False
                now = time.monotonic()
                for flight in flights.values():
                    if flight.resend_at < flight.deadline:  # not a call that must never be resent
                        flight.resend_at = min(flight.deadline, now + flight.attempt_timeout)
                        self._send(flight.payload)

    def _receive(self, flights: dict[str, _Flight], results: dict[int, Result]) -> None:
        # Called when poll said a message is ready; takes every message already queued.
        received = False
        while True:
            if received and not self._replies.poll(0):
                return
            received = True
            frames = self.sock.recv_multipart()
            self.silence.hear()
            try:
                reply = decode_reply(frames[-1])
            except ProtocolError:
                continue  # not a reply to us; the request will time out and be resent
            if reply.push is not None:
                self.pushed.append((reply.push, reply.body))
                continue
            flight = addressed(reply, flights)
            if flight is None:
                continue  # a late reply to an attempt already answered, or an unreadable request's error
            now = time.monotonic()
            if reply.ok:
                del flights[flight.request_id]
                results[flight.index] = Result(reply.body, None, now - flight.first_sent, flight.request_id)
                continue
            assert reply.error is not None
            error = from_wire(reply.error)
            if error.retryable and now < flight.deadline:
                flight.last_error = error
                flight.resend_at = now + backoff_s(error)
                continue
            del flights[flight.request_id]
            results[flight.index] = Result(None, error, now - flight.first_sent, flight.request_id)

    def _resend_due(self, flights: dict[str, _Flight], results: dict[int, Result]) -> None:
        now = time.monotonic()
        for flight in list(flights.values()):
            if flight.resend_at > now:
                continue
            if now >= flight.deadline and flight.last_error is not None:  # it answered: say what, not "no reply"
                del flights[flight.request_id]
                results[flight.index] = Result(None, flight.last_error, now - flight.first_sent, flight.request_id)
                continue
            if now >= flight.deadline:
                del flights[flight.request_id]
                waited = flight.deadline - flight.first_sent
                self.silence.timed_out(flight.first_sent, flight.deadline)
                timeout: GrooveError = GrooveTimeout(no_reply_message(self.endpoint, waited, self.curve))
                results[flight.index] = Result(None, timeout, now - flight.first_sent, flight.request_id)
                continue
            flight.attempt_timeout = min(flight.attempt_timeout * 2, 10.0)
            flight.resend_at = min(flight.deadline, now + flight.attempt_timeout)
            self._send(flight.payload)
