"""Query vectors first: a search's or an injection's query is embedded before the request takes a reader thread.

A search by meaning needs its query's vector, which the embedding workers compute (`embedpool.py`) in tens of
milliseconds on an idle machine and in hundreds beside a write flood on two cores. A reader thread that waited
for it sat idle all that time, and with four readers the searches queued behind each other: six agents writing
with 8 requests in flight each saw search p50 at 692 ms with the default embedder against 313 ms without one,
the readers busy waiting (`benchmarks.queryfirst`, 2 vCPUs). So the socket thread asks for the vector as the
request arrives, and hands the request to a reader once the vector is back (or has failed: words then stand
in); the reader finds it here. Vectors are kept for the last `_KEPT` query texts: an agent's injection and its
searches for the same task embed it once.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Future

from pydantic import BaseModel

from groove.coordinator.metrics import summarize
from groove.coordinator.search.embedder import Vectors
from groove.protocol.loop import InjectCandidatesRequest, InjectPrepareRequest
from groove.protocol.search import SearchRequest

_KEPT = 1024  # query texts whose vectors are kept (1.5 KB each)
_WAITS = 2048  # recent waits summarised for `stats.query_embedding_ms`


def query_text(body: BaseModel) -> str | None:
    """The text a request will embed as its query, if it will embed one."""
    if isinstance(body, SearchRequest):
        wanted = body.text is not None and body.vector is None and body.mode != "keyword"
        return body.text if wanted else None
    if isinstance(body, InjectPrepareRequest | InjectCandidatesRequest):
        return body.task
    return None


class QueryVectors:
    """Query vectors computed ahead of their reads, and how long queries waited for them. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, Vectors] = OrderedDict()
        self._failed: set[str] = set()  # texts whose embedding failed since their request arrived: words stand in
        self._waits: deque[float] = deque(maxlen=_WAITS)

    def prefetch(self, text: str, pending: Future[Vectors], then: Callable[[], None]) -> None:
        """Run `then` once `pending` (the text's vector on its way) is done, the vector kept for the read."""
        started = time.monotonic()

        def done(result: Future[Vectors]) -> None:
            self.waited((time.monotonic() - started) * 1000)
            error = result.exception()
            with self._lock:
                if error is None:
                    self._keep(text, result.result())
                elif len(self._failed) < _KEPT:  # each is read once by its request's read
                    self._failed.add(text)
            then()

        pending.add_done_callback(done)

    def get(self, text: str) -> tuple[bool, Vectors | None]:
        """(known, its vector): known with None when its embedding failed as its request waited (once)."""
        with self._lock:
            vector = self._kept.get(text)
            if vector is not None:
                self._kept.move_to_end(text)
                return True, vector
            if text in self._failed:
                self._failed.discard(text)
                return True, None
        return False, None

    def kept(self, text: str) -> bool:
        """Whether this text's vector is at hand."""
        with self._lock:
            return text in self._kept

    def put(self, text: str, vector: Vectors) -> None:
        """Keep a vector computed by a read itself."""
        with self._lock:
            self._keep(text, vector)

    def _keep(self, text: str, vector: Vectors) -> None:
        self._kept[text] = vector
        self._kept.move_to_end(text)
        while len(self._kept) > _KEPT:
            self._kept.popitem(last=False)

    def waited(self, ms: float) -> None:
        """A query waited `ms` for its vector (or for its embedding to fail)."""
        with self._lock:
            self._waits.append(ms)

    def __len__(self) -> int:
        """Query vectors kept."""
        return len(self._kept)

    def summary(self) -> dict[str, float]:
        """How long recent queries waited for their vector, milliseconds."""
        with self._lock:
            return summarize(list(self._waits))
