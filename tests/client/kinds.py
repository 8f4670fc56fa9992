"""Both clients behind one face, so that one test body checks each: `GrooveClient` as it is, and
`AsyncGrooveClient` driven from synchronous test code on an event loop of its own (a thread)."""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any

from groove.client import AsyncGrooveClient

KINDS = ["sync", "async"]


class Blocking:
    """An AsyncGrooveClient whose every awaitable method is run to its end on the facade's loop."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="async client", daemon=True)
        self.thread.start()
        self.client = AsyncGrooveClient(*args, **kwargs)

    def run(self, awaitable: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(awaitable, self.loop).result()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.client, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            result = attr(*args, **kwargs)
            if inspect.isasyncgen(result):
                return self.run(_listed(result))
            return self.run(result) if inspect.isawaitable(result) else result

        return call

    def __enter__(self) -> Blocking:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self.thread.is_alive():
            self.run(self.client.aclose())
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()


async def _listed(items: Any) -> list[Any]:
    return [item async for item in items]
