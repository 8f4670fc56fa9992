"""Live updates: server-sent events, one poll per topic however many pages watch it.

A topic (`overview`, `board:<memory id>`) is rendered to an HTML fragment once a second while at least one
page listens, in a worker thread; a page gets the fragment only when it changed. Five open dashboards cost
the coordinator what one does. A topic that takes long to render (a 20,000-task board: 150 ms) is rendered
less often, `SHARE` of the time at most, so that watching a swarm does not slow it down. A coordinator that
stops answering is sent as a `down` event with the reason, and the next fragment that renders again clears it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import anyio.to_thread

from groove.protocol.board import WorkingMemory
from groove.ui.source import CoordinatorDown, Source, UiError

log = logging.getLogger(__name__)

_BROKEN = "broken"  # the event a page gets when its part cannot be drawn (a bug)
KEEPALIVE_S = 15.0  # a comment line this often keeps proxies from closing a quiet stream
SHARE = 0.1  # of one core's time, at most, that rendering a topic takes (measured: benchmarks/ui.py)


def sse(event: str, data: str) -> str:
    """One server-sent event; every line of `data` gets its own `data:` field."""
    lines = "".join(f"data: {line}\n" for line in data.split("\n"))
    return f"event: {event}\n{lines}\n"


@dataclass
class _Topic:
    listeners: int = 0
    version: int = 0
    event: str = ""
    payload: str = ""
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    task: asyncio.Task[None] | None = None


class Hub:
    """Topics rendered by `render(topic)` (blocking; run in a thread) every `interval` seconds."""

    def __init__(self, render: Callable[[str], str], interval: float = 1.0) -> None:
        self._render = render
        self.interval = max(1.0, interval)  # no page is updated more often than once a second
        self._topics: dict[str, _Topic] = {}

    async def listen(self, topic: str) -> AsyncIterator[str]:
        """The topic's events for one page, as SSE text, until the page goes away."""
        state = self._topics.get(topic)
        if state is None:
            state = self._topics[topic] = _Topic()
        state.listeners += 1
        if state.task is None:
            state.task = asyncio.create_task(self._poll(topic, state))
        seen = 0
        try:
            yield ": connected\n\n"
            while True:
                async with state.changed:
                    if state.version == seen:
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(state.changed.wait(), KEEPALIVE_S)
                if state.version == seen:
                    yield ": keep-alive\n\n"
                    continue
                seen = state.version
                yield sse(state.event, state.payload)
        finally:
            state.listeners -= 1
            if state.listeners == 0 and state.task is not None:
                state.task.cancel()
                state.task = None
                self._topics.pop(topic, None)

    async def _poll(self, topic: str, state: _Topic) -> None:
        while True:
            started = time.monotonic()
            took = 0.0  # a failure is tried again after `interval`: its time is the time-out, not rendering
            try:
                event, payload = "fragment", await anyio.to_thread.run_sync(self._render, topic)
                took = time.monotonic() - started
            except CoordinatorDown as exc:
                event, payload = "down", str(exc)
            except UiError as exc:
                event, payload = "gone", str(exc)
            except Exception:  # a bug in a page: logged when it starts, said on the page, and the poll goes on
                if state.event != _BROKEN:
                    log.exception("rendering %s failed", topic)
                event, payload = _BROKEN, "the dashboard failed to draw this part (see its log)"
            if (event, payload) != (state.event, state.payload):
                async with state.changed:
                    state.event, state.payload = event, payload
                    state.version += 1
                    state.changed.notify_all()
            await asyncio.sleep(max(self.interval, took / SHARE) - (time.monotonic() - started))

    def watched(self) -> list[str]:
        """Topics with a page listening now."""
        return sorted(self._topics)


def tasks_by_status(memories: list[WorkingMemory]) -> dict[str, int]:
    """Tasks by status, summed over these working memories."""
    total: Counter[str] = Counter()
    for memory in memories:
        total.update(memory.tasks)
    return dict(total)


@dataclass(frozen=True)
class Sample:
    """The coordinator's figures at one moment, for the overview's last hour."""

    at: float
    writes_per_s: float
    queue_depth: int
    commit_p99_ms: float
    embedding_lag_ms: float
    rss_mb: float
    agents_alive: int


class Recorder:
    """Samples `stats` every `every` seconds in a thread of its own, keeping an hour of samples."""

    def __init__(self, source: Source, every: float = 5.0, keep_s: float = 3600.0) -> None:
        self._source = source
        self.every = every
        self.samples: deque[Sample] = deque(maxlen=max(2, int(keep_s / every)))
        # tasks by status over every working memory, as of the last sample (None before the first): counting
        # a 20,000-task board takes the coordinator 13 ms, too long to do at each /metrics scrape
        self.tasks: dict[str, int] | None = None
        self._last: tuple[float, int] | None = None
        self._stop = asyncio.Event()

    def sample(self) -> None:
        """Take one sample now (blocking)."""
        stats, memories = self._source.call(lambda c: (c.stats(), c.memories()))
        self.tasks = tasks_by_status(memories)
        now = time.time()
        rate = 0.0
        if self._last is not None and now > self._last[0]:
            rate = max(0, stats.writes_committed - self._last[1]) / (now - self._last[0])
        self._last = (now, stats.writes_committed)
        self.samples.append(
            Sample(
                now,
                rate,
                stats.write_queue_depth,
                stats.commit_ms.p99,
                stats.visibility_lag_ms.p99,
                stats.rss_mb,
                stats.agents_alive,
            )
        )

    async def run(self) -> None:
        """Sample until stopped; a coordinator that is down leaves a gap, not an error."""
        while not self._stop.is_set():
            with contextlib.suppress(UiError):
                await anyio.to_thread.run_sync(self.sample)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.every)

    def stop(self) -> None:
        self._stop.set()
