"""The write load the fault tests inject their faults under."""

from __future__ import annotations

import threading
import time
from types import TracebackType

from groove.client import GrooveClient, GrooveError
from tests.helpers import learning, wait_for

Call = tuple[float, float, list[str] | GrooveError]  # (sent, answered, the acked ids or the error)


class WriteLoad:
    """One client on a thread writing one learning a request back to back, from entering the block until it
    ends; call n writes `learning(n=n)`, and each call is recorded in `calls`."""

    def __init__(self, endpoint: str, timeout: float = 10.0, attempt_timeout: float = 2.0) -> None:
        self.endpoint, self.timeout, self.attempt_timeout = endpoint, timeout, attempt_timeout
        self.calls: list[Call] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._write)

    def __enter__(self) -> WriteLoad:
        self._thread.start()
        wait_for(lambda: len(self.calls) > 20, "the load going")
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()

    def _write(self) -> None:
        with GrooveClient(self.endpoint, timeout=self.timeout, attempt_timeout=self.attempt_timeout) as client:
            n = 0
            while not self._stop.is_set():
                sent = time.monotonic()
                try:
                    got: list[str] | GrooveError = client.put_learnings([learning(n=n)]).ids
                except GrooveError as exc:
                    got = exc
                self.calls.append((sent, time.monotonic(), got))
                n += 1
