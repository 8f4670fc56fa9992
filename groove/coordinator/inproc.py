"""Hand-offs to the thread that owns a socket, over inproc. ZeroMQ sockets are not thread-safe, so each thread
that hands something over gets a PUSH socket of its own, made at its first hand-off; the owner closes them all
when it stops. The socket loop's outbox (acks, read replies) and the embedding pool's wake-up both use this."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import zmq


class Pushers:
    """One PUSH socket per calling thread, connected to one inproc endpoint."""

    def __init__(self, context: zmq.Context[Any], endpoint: str) -> None:
        self.context = context
        self.endpoint = endpoint
        self._local = threading.local()
        self._made: list[zmq.Socket[bytes]] = []
        self._lock = threading.Lock()

    def socket(self) -> zmq.Socket[bytes]:
        """The calling thread's socket (made the first time it asks)."""
        sock: zmq.Socket[bytes] | None = getattr(self._local, "sock", None)
        if sock is None:
            sock = self.context.socket(zmq.PUSH)
            sock.connect(self.endpoint)
            self._local.sock = sock
            with self._lock:
                self._made.append(sock)
        return sock

    def close(self) -> None:
        """Close every thread's socket (their threads are done handing over)."""
        with self._lock:
            for sock in self._made:
                sock.close(linger=0)


def queued(sock: zmq.Socket[bytes], limit: int) -> Iterator[list[bytes]]:
    """The messages already queued on `sock`, at most `limit` of them, without blocking."""
    for _ in range(limit):
        try:
            yield sock.recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            return
