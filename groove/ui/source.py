"""Where the dashboard's data comes from: one coordinator client, shared by every request of the web server.

A ZeroMQ socket belongs to one thread at a time, so calls take turns under a lock; each is short (a read the
coordinator serves from its reader threads), and the live streams poll once a second per topic, not per page.
A coordinator that does not answer shows as `CoordinatorDown`, which every page turns into a banner.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from groove.client import GrooveClient, GrooveError, GrooveTimeout, NotFound, RemoteError
from groove.client.errors import Busy
from groove.protocol.keys import CurveClient

T = TypeVar("T")

_ATTEMPT_S = 1.0


class UiError(Exception):
    """The dashboard's own errors."""


class CoordinatorDown(UiError):
    """The coordinator did not answer within the time-out (stopped, restarting, or unreachable)."""


class Missing(UiError):
    """What a page names does not exist (a 404)."""


class Refused(UiError):
    """The coordinator refused an action (bad input, a conflict, not allowed): its message is shown."""


class Source:
    """The dashboard's client of one coordinator."""

    def __init__(self, endpoint: str, curve: CurveClient | None, timeout: float) -> None:
        self.endpoint = endpoint
        self._curve = curve
        self._timeout = timeout
        self._lock = threading.Lock()
        self._client: GrooveClient | None = None

    def call(self, fn: Callable[[GrooveClient], T]) -> T:
        """Run `fn` with the client; a time-out becomes CoordinatorDown, not_found Missing, other refusals
        Refused. A client whose request timed out is replaced, so a late reply never answers the next one."""
        with self._lock:
            if self._client is None:
                attempt = min(_ATTEMPT_S, self._timeout)
                self._client = GrooveClient(
                    self.endpoint, timeout=self._timeout, attempt_timeout=attempt, curve=self._curve
                )
            try:
                return fn(self._client)
            except GrooveTimeout as exc:
                self._client.close()
                self._client = None
                raise CoordinatorDown(f"the coordinator at {self.endpoint} is not answering ({exc})") from None
            except NotFound as exc:
                raise Missing(str(exc)) from None
            except Busy as exc:
                raise CoordinatorDown(f"the coordinator is busy: {exc}") from None
            except RemoteError as exc:
                raise Refused(str(exc)) from None
            except GrooveError as exc:
                raise Refused(str(exc)) from None

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
