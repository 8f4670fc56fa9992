"""The coordinator's side of its front process (`front.py`): start it, take batches of requests from it, hand it
batches of replies, stop it.

The link is a PAIR socket on an ipc endpoint in a temporary directory only this user can enter, so nothing
else on the host can speak to the coordinator past the front (and past CURVE).
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import msgpack
import zmq

from groove.coordinator.errors import CoordinatorError
from groove.coordinator.net import front
from groove.coordinator.net.config import Settings
from groove.coordinator.net.front import BATCH, CREDIT, FAILED, GO, HELLO, REPLIES, STOP
from groove.coordinator.procs import Child, private_dir

_START_S = 30.0  # a front that has not bound its socket by then is not going to
_STOP_S = 10.0
_FLUSH_AT = 64  # replies held before they go out without waiting for the end of the batch
_CREDIT = 2  # batches the front may send ahead: one being handled, one waiting
# a batch from the front: the messages as they came, the writes it checked, the puts it built
Relayed = tuple[list[tuple[str | None, list[bytes]]], list[list[Any]], list[list[Any]]]


class FrontLink:
    """One front process and the socket to it; a front that dies is started again on the same endpoint."""

    def __init__(self, context: zmq.Context[Any]) -> None:
        self.context = context  # the coordinator's, for its other sockets too
        self._sock: zmq.Socket[bytes] | None = None  # made by `launch`, after the front is forked
        self._dir: Path | None = None  # made by `launch`: a start that fails earlier leaves nothing behind
        self._bind = ""
        self._args: list[str] = []  # the front's options but its link and its bind
        self._runs = 0  # runs of the front started: each gets its own link endpoint
        self.child: Child | None = None
        self._serving = False  # the front said it listens
        self.refused = 0  # CURVE handshakes the front refused
        self.dropped = 0  # replies the front could not hand to their client
        self._out: list[list[bytes]] = []

    @property
    def sock(self) -> zmq.Socket[bytes]:
        assert self._sock is not None, "launch first"
        return self._sock

    def _pair(self) -> zmq.Socket[bytes]:
        sock: zmq.Socket[bytes] = self.context.socket(zmq.PAIR)
        sock.setsockopt(zmq.SNDHWM, 0)  # bounded by the credit the front is given
        sock.setsockopt(zmq.RCVHWM, 0)
        return sock

    def launch(self, settings: Settings) -> None:
        """Start the front process; it waits for `go` before it binds. Called before this process has a socket or
        a thread, with the modules the front needs imported (`groove serve` imports the coordinator first), it is
        forked from this one and starts at once; else (and when it is restarted) it starts afresh and imports."""
        self._dir = private_dir()
        self._args = ["--hwm", str(settings.peer_hwm), "--log-level", settings.log_level]
        if settings.front_checks:
            self._args.append("--checks")
        if settings.curve:
            assert settings.authorized_keys is not None  # Settings checks this
            self._args += ["--authorized-keys", str(settings.authorized_keys)]
            self._args += ["--curve-key", str(settings.server_key_path())]
        self._bind = settings.bind
        self.child = Child("front", [])
        self._start(self.child.start)

    def _start(self, start: Callable[[], None]) -> None:
        # each run of the front gets a link endpoint of its own: a PAIR socket pairs with one peer for good
        assert self._dir is not None
        assert self.child is not None
        self._runs += 1
        endpoint = f"ipc://{self._dir / f'front-{self._runs}'}"
        options = ["--link", endpoint, "--bind", self._bind, *self._args]
        self.child.argv = [sys.executable, "-m", "groove.coordinator.net.front", *options]
        self.child.fork = partial(front.main.main, options, standalone_mode=False)
        start()  # before the socket: a fork must come before this process's first socket (its threads)
        self._sock = self._pair()
        self._sock.bind(endpoint)  # the front retries its connect until this is bound

    def restart(self) -> bool:
        """Start the front again after it died, on the endpoint it had bound (`ready`'s answer), with a fresh link;
        False while it is not yet due (it died moments after its last start). Replies queued for the dead front
        are dropped: their clients resend, and are answered from the reply cache. Raises like `go`/`ready`
        when the new front cannot listen."""
        assert self.child is not None
        if not self.child.due(time.monotonic()):
            return False
        self.dropped += len(self._out)
        self._out = []
        self.sock.close(linger=0)
        self._serving = False
        self._start(self.child.restart)  # afresh: this process has threads by now
        self.go()
        self.ready()
        return True

    def go(self) -> None:
        """Let the front bind, once the caller knows it will serve; it binds while the caller opens its tiers
        (`ready` waits for it). CoordinatorError when the front is gone or never connects."""
        assert self.child is not None, "launch first"
        deadline = time.monotonic() + _START_S
        while not self.sock.poll(100, zmq.POLLOUT):  # writable once the front has connected
            self._check(deadline)
        self._send([GO])

    def _check(self, deadline: float) -> None:
        assert self.child is not None
        status = self.child.exited()
        if status is not None:
            raise CoordinatorError(f"the front process exited with status {status} before listening")
        if time.monotonic() > deadline:
            raise CoordinatorError(f"the front process did not listen on {self._bind} within {_START_S:.0f} s")

    def ready(self) -> str:
        """Wait until the launched front listens; returns the endpoint clients reach. Raises zmq.ZMQError when it
        cannot bind (the port taken, say), CoordinatorError when it does not start at all. Either way the front
        and the link directory are gone."""
        try:
            self._bind = self._started()  # a restarted front binds what this one got (port 0 resolved)
            return self._bind
        except BaseException:
            self.stop()
            raise

    def _started(self) -> str:
        deadline = time.monotonic() + _START_S
        while True:
            if self.sock.poll(100):
                message: list[Any] = msgpack.unpackb(self.sock.recv())
                if message[0] == HELLO:
                    self._serving = True
                    self._send([CREDIT, _CREDIT])
                    return str(message[1])
                if message[0] == FAILED:
                    raise zmq.ZMQError(message[1], message[2])
            self._check(deadline)

    def alive(self) -> bool:
        """Whether the front process is still running."""
        return self.child is not None and self.child.alive()

    def batches(self, limit: int) -> Iterator[Relayed]:
        """Batches of client messages the front has relayed, up to `limit`, without blocking. Each batch: the
        messages as they came, each as (the sender's CURVE User-Id or None, its frames, routing id first), the
        writes a checking front decoded and validated, and the puts it built (`checks.py`, one list each). The
        front is given credit for another batch as each is taken up, once the caller asks for the next."""
        for _ in range(limit):
            try:
                raw = self.sock.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            kind, self.refused, self.dropped, entries, checked, built = msgpack.unpackb(raw)
            assert kind == BATCH
            yield [(entry[0], entry[1:]) for entry in entries], checked, built
            self.flush()
            self._send([CREDIT, 1])

    def send(self, peer: bytes, payload: bytes) -> None:
        """Queue a reply; it goes out at the next `flush` (or once enough are queued)."""
        self._out.append([peer, payload])
        if len(self._out) >= _FLUSH_AT:
            self.flush()

    def flush(self) -> None:
        """Hand every queued reply to the front in one message."""
        if self._out:
            self._send([REPLIES, self._out], len(self._out))
            self._out = []

    def _send(self, message: list[Any], replies: int = 0) -> None:
        # A PAIR socket with no peer cannot queue: a send to a front that is gone would wait for ever. With a
        # peer it never waits (no high-water mark), so `Again` means the front is gone; the loop sees it die.
        try:
            self.sock.send(msgpack.packb(message), zmq.NOBLOCK)
        except zmq.Again:
            self.dropped += replies

    def stop(self) -> None:
        """Send what is queued, tell the front to stop, wait for it, and remove the link."""
        if self.child is not None and self.child.alive():
            if not self._serving:
                self.child.stop(_STOP_S)  # still importing, or waiting for `go`: nothing of it to finish
            else:
                self.flush()
                self._send([STOP])
                self.child.wait(_STOP_S)
        if self._sock is not None:
            self._sock.close(linger=0)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)

    def directory(self) -> Path:
        """The private directory of this coordinator's ipc endpoints (its other children's too)."""
        assert self._dir is not None, "launch first"
        return self._dir

    def report(self) -> dict[str, Any]:
        """The front process for `stats`."""
        return self.child.report() if self.child is not None else {}
