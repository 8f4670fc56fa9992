"""The front process: it owns the public ROUTER socket (and CURVE's handshakes) and relays whole batches of
requests to the coordinator, and of replies back, over one PAIR socket.

Why a process of its own: every ZeroMQ call lets go of the GIL, and beside the coordinator's busy writer
thread getting it back costs 30-110 µs per call (measured on 2 vCPUs: a non-blocking receive 29 µs, a send
46 µs, a zero-timeout poll 111 µs beside one spinning thread, against 0.6-4 µs alone). A request cost the
socket thread about six such calls. Here they run in a process with no writer beside them, and the coordinator
makes one receive per batch of requests and one send per batch of replies.

The link (ipc, in a private temporary directory; one frame per message, msgpack):

    coordinator -> front   ["G"]                                go: bind now (the data dir is the coordinator's)
    front -> coordinator   ["H", endpoint]                      bound: the endpoint clients reach
                           ["E", errno, message]                the bind failed; the front exits
                           ["B", refused, dropped, entries, checked, built]
                                                                a batch: each entry [user id or nil, frames...],
                                                                a client message's frames, its routing id first;
                                                                with --checks, the writes the front decoded and
                                                                validated are in `checked` instead, and the puts
                                                                it built in `built` (`checks.py`)
    coordinator -> front   ["C", n]                             credit: n more batches may be sent
                           ["R", [[routing id, payload], ...]]  replies, sent as [id, "", payload]
                           ["S"]                                stop: send what is queued, then exit

The coordinator starts the front first thing, so that the front's imports run beside its own, and says "go"
once it holds its data dir: the public endpoint is never bound by a coordinator that cannot serve.
`refused` and `dropped` are running totals: CURVE handshakes refused, replies a client could not take (at its
high-water mark, or gone; it retries). The front reads clients only while it has credit, and the coordinator
gives one back per batch it has handled: requests wait in ZeroMQ's per-connection queues, which it reads
fairly (a `ping` from an idle connection is in the next batch however many writes other connections queued),
and a flood is held back by each connection's high-water mark as before. It exits when told, when its
parent process is gone, or on SIGTERM; it ignores SIGINT (a terminal's Ctrl-C reaches the whole process
group: the coordinator decides when the front stops).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import msgpack
import zmq

from groove.coordinator.net.auth import Gate, load_authorized, server_keys
from groove.coordinator.procs import die_with_parent
from groove.protocol import constants as C
from groove.protocol.frames import send_frames

GO, HELLO, FAILED, BATCH, CREDIT, REPLIES, STOP = "G", "H", "E", "B", "C", "R", "S"
_DRAIN = 64  # client messages per batch
_PARENT_CHECK_MS = 1000
_LINGER_MS = 2000
_RECONNECT_MS = 5  # between tries to connect the link
_Check = Callable[[str | None, list[bytes]], tuple[int, list[Any]] | None]


class Front:
    """The relay between the public ROUTER and the coordinator's link."""

    def __init__(
        self, link: zmq.Socket[bytes], router: zmq.Socket[bytes], gate: Gate | None, check: _Check | None = None
    ) -> None:
        self.link = link
        self.router = router
        self.gate = gate
        self.check = check  # with --checks: `checks.check`, which says which list an entry goes to
        self.credit = 0  # batches the coordinator is ready for
        self.dropped = 0
        self.stopping = False

    def serve(self, parent: int) -> None:
        """Relay until told to stop or the parent is gone."""
        poller = zmq.Poller()
        poller.register(self.link, zmq.POLLIN)
        reading = False
        while not self.stopping:
            want = self.credit > 0
            if want != reading:
                if want:
                    poller.register(self.router, zmq.POLLIN)
                else:
                    poller.unregister(self.router)
                reading = want
            events = dict(poller.poll(_PARENT_CHECK_MS))
            if self.link in events:
                self._from_coordinator()
            if self.router in events and self.credit > 0:
                self._from_clients()
            if os.getppid() != parent:  # the coordinator died (kill -9): nobody would answer
                return

    def _from_clients(self) -> None:
        entries: list[list[Any]] = []
        lists: tuple[list[list[Any]], list[list[Any]]] = ([], [])  # checked writes, built puts (checks.py)
        signed = self.gate is not None
        for _ in range(_DRAIN):
            try:
                if not signed:  # bytes at once: 4.0 µs a message against 5.2 for frames (copy=False)
                    user_id, frames = None, self.router.recv_multipart(zmq.NOBLOCK)
                else:
                    parts = self.router.recv_multipart(zmq.NOBLOCK, copy=False)
                    user_id, frames = str(parts[-1].get("User-Id")), [part.bytes for part in parts]
            except zmq.Again:
                break
            found = self.check(user_id, frames) if self.check is not None else None
            if found is not None:
                lists[found[0]].append(found[1])
            else:
                entries.append([user_id, *frames])
        if entries or lists[0] or lists[1]:
            self.credit -= 1
            refused = self.gate.refused if self.gate is not None else 0
            _tell(self.link, [BATCH, refused, self.dropped, entries, *lists])

    def _from_coordinator(self) -> None:
        while True:
            try:
                message = msgpack.unpackb(self.link.recv(zmq.NOBLOCK))
            except zmq.Again:
                return
            if message[0] == STOP:
                self.stopping = True
                return
            if message[0] == CREDIT:
                self.credit += message[1]
                continue
            for peer, payload in message[1]:
                self._reply(peer, payload)

    def _reply(self, peer: bytes, payload: bytes) -> None:
        try:
            send_frames(self.router, (peer, b"", payload), block=False)
        except zmq.Again:
            self.dropped += 1  # the client is at its high-water mark; it will retry
        except zmq.ZMQError as exc:
            if exc.errno != errno.EHOSTUNREACH:
                raise
            self.dropped += 1  # the client disconnected; a retry arrives as a new peer


def _tell(link: zmq.Socket[bytes], message: list[Any]) -> None:
    """Send to the coordinator. The link has no high-water mark, so this waits only when the coordinator is
    gone: then the message is dropped, and the front ends at its next look at its parent."""
    with contextlib.suppress(zmq.Again):
        link.send(msgpack.packb(message), zmq.NOBLOCK)


def _told_to_go(link: zmq.Socket[bytes], parent: int) -> bool:
    """Wait for the coordinator's go; False if it says stop instead, or is gone."""
    while os.getppid() == parent:
        if link.poll(_PARENT_CHECK_MS):
            return bool(msgpack.unpackb(link.recv())[0] == GO)  # or STOP: nothing else comes first
    return False


def _router(context: zmq.Context[Any], hwm: int) -> zmq.Socket[bytes]:
    router: zmq.Socket[bytes] = context.socket(zmq.ROUTER)
    router.setsockopt(zmq.ROUTER_MANDATORY, 1)
    router.setsockopt(zmq.SNDHWM, hwm)
    router.setsockopt(zmq.RCVHWM, hwm)
    router.setsockopt(zmq.MAXMSGSIZE, C.MAX_FRAME_BYTES)
    router.setsockopt(zmq.LINGER, _LINGER_MS)
    return router


@click.command()
@click.option("--link", required=True, help="The coordinator's PAIR endpoint.")
@click.option("--bind", required=True, help="The public endpoint to bind.")
@click.option("--hwm", type=int, required=True, help="ZeroMQ high-water mark per client, each way.")
@click.option("--authorized-keys", type=click.Path(path_type=Path), help="With CURVE: the admitted keys.")
@click.option("--curve-key", type=click.Path(path_type=Path), help="With CURVE: the server's secret key file.")
@click.option("--log-level", default="info", help="As the coordinator's.")
@click.option("--checks", is_flag=True, help="Decode and validate write requests here, and build puts (`checks.py`).")
def main(
    link: str, bind: str, hwm: int, authorized_keys: Path | None, curve_key: Path | None, log_level: str, checks: bool
) -> None:
    """Run the front of one coordinator (started by it, never by hand)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()
    die_with_parent(parent)
    logging.basicConfig(  # forced: forked from the coordinator, it has the coordinator's handler already
        level=log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s (front): %(message)s",
        force=True,
    )
    check: _Check | None = None
    if checks:  # before the go (started afresh, beside the coordinator's own work; forked, imported already)
        from groove.coordinator.net import checks as checking  # noqa: PLC0415

        check = checking.check
    context: zmq.Context[Any] = zmq.Context()
    pair: zmq.Socket[bytes] = context.socket(zmq.PAIR)
    pair.setsockopt(zmq.SNDHWM, 0)  # bounded by the coordinator's credit instead
    pair.setsockopt(zmq.RCVHWM, 0)
    # forked, it connects before the coordinator has bound the link (ZeroMQ retries): soon, not 100 ms on
    pair.setsockopt(zmq.RECONNECT_IVL, _RECONNECT_MS)
    pair.connect(link)
    if not _told_to_go(pair, parent):
        pair.close(linger=0)
        context.term()
        return
    router = _router(context, hwm)
    gate = None
    if authorized_keys is not None and curve_key is not None:
        gate = Gate(context, load_authorized(authorized_keys))
        public, secret = server_keys(curve_key)
        router.curve_server = True
        router.curve_publickey = public
        router.curve_secretkey = secret
    try:
        router.bind(bind)
    except zmq.ZMQError as exc:
        _tell(pair, [FAILED, exc.errno, str(exc)])
        pair.close(linger=_LINGER_MS)
        router.close(linger=0)
        if gate is not None:
            gate.stop()
        context.term()  # with a socket left open, the interpreter's exit would wait on it for ever
        sys.exit(1)
    front = Front(pair, router, gate, check)
    signal.signal(signal.SIGTERM, lambda *_: setattr(front, "stopping", True))
    _tell(pair, [HELLO, router.getsockopt_string(zmq.LAST_ENDPOINT)])
    try:
        front.serve(parent)
    finally:
        router.close(linger=_LINGER_MS)  # replies already handed to ZeroMQ still go out
        pair.close(linger=0)
        if gate is not None:
            gate.stop()
        context.term()


if __name__ == "__main__":
    main()
