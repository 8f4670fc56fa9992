"""What only the async client has to show: every operation gives what the sync client's gives, many calls share
one client, and a cancelled call leaves nothing behind for the next one."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import msgpack
import pytest

from groove.client import AsyncGrooveClient, GrooveClient, NotFound
from groove.client.board import BoardCalls
from groove.client.calls import operation
from groove.client.client import LearningCalls
from groove.coordinator.wire.codec import encode_ok
from tests.client.test_client import _peer
from tests.helpers import RunningCoordinator, learning


def _script(client: GrooveClient, n: int) -> list[Any]:
    """A session's worth of operations, learnings to board; what each returned, with ids and times left out."""
    out: list[Any] = []
    lid = client.learn("global", "solution", f"retry the flaky socket test {n}", "bind to port 0 and wait")
    out.append(client.get(lid).description)
    out.append([h.learning.id == lid for h in client.search(f"flaky socket test {n}", mode="keyword", limit=1)])
    out.append(sorted(x.description for x in client.iter_learnings(scope_prefix="global", page=1)))
    given = client.inject(f"session-{n}", task=f"fix the flaky socket test {n}")
    out.append(client.close_session([(lid, "helpful")], injection_id=given.injection_id).applied)
    out.append((client.get(lid).usage.times_helpful, len(client.history(lid).outcomes)))
    memory = client.create_memory(f"/tmp/p{n}", "plan", "ship it")
    ids = client.add_plan(memory, [{"id": "a", "title": "first"}, {"id": "b", "title": "then", "depends_on": ["a"]}])
    claimed = client.claim_task(memory, "worker", 60_000)
    out.append(claimed is not None and claimed.id == ids[0])
    out.append(client.complete_task(ids[0], "worker", "done").status)
    out.append([t.status for t in client.tasks(memory)])
    try:
        client.get("01a20000-0000-7000-8000-000000000000")
    except NotFound as exc:
        out.append(type(exc).__name__)
    return out


def test_every_operation_is_one_method_that_both_clients_run() -> None:
    written = {name for cls in (LearningCalls, BoardCalls) for name, v in vars(cls).items() if isinstance(v, operation)}
    assert len(written) >= 60
    blocking, awaited = GrooveClient("tcp://127.0.0.1:1"), AsyncGrooveClient("tcp://127.0.0.1:1")
    for name in written:  # the sync client blocks for the result, the async one is awaited for it
        assert not asyncio.iscoroutinefunction(getattr(blocking, name))
        assert asyncio.iscoroutinefunction(getattr(awaited, name))
    blocking.close()
    awaited.close()


def test_a_session_s_operations_answer_alike_on_both_clients(
    coordinator: RunningCoordinator, make_client: Callable[..., GrooveClient], request: pytest.FixtureRequest
) -> None:
    n = 0 if "sync" in request.node.name else 1  # each kind its own learnings: the answers must still agree
    got = _script(make_client(coordinator.endpoint, timeout=30), n)
    assert got == [
        f"retry the flaky socket test {n}",
        [True],
        [f"retry the flaky socket test {n}"],
        1,
        (1, 1),
        True,
        "completed",
        ["completed", "pending"],
        "NotFound",
    ]


def test_many_calls_in_flight_on_one_client_each_get_their_own_reply(coordinator: RunningCoordinator) -> None:
    async def run() -> None:
        async with AsyncGrooveClient(coordinator.endpoint, timeout=30) as client:
            ids = (await client.put_learnings([learning(n=i) for i in range(32)])).ids
            got = await asyncio.gather(*(client.get(lid) for lid in ids))
            assert [g.id for g in got] == ids
            pings = await asyncio.gather(*(client.ping() for _ in range(32)))
            assert all(p.version for p in pings)

    asyncio.run(run())


def test_a_cancelled_call_leaves_no_reply_for_the_next_one() -> None:
    router, endpoint = _peer()
    held: list[tuple[bytes, str]] = []

    def answer_late() -> None:
        for _ in range(2):  # the first request (cancelled while it waits), then the second
            peer, _, payload = router.recv_multipart()
            held.append((peer, msgpack.unpackb(payload)["id"]))
        for peer, request_id in held:  # the cancelled one's reply first: it must reach no one
            router.send_multipart([peer, b"", encode_ok(request_id, {"for": request_id})])

    answering = threading.Thread(target=answer_late)
    answering.start()

    async def run() -> tuple[dict[str, Any], str]:
        async with AsyncGrooveClient(endpoint, timeout=30, attempt_timeout=30) as client:
            first = asyncio.create_task(client.call("ping", {}, request_id="first"))
            await asyncio.sleep(0.2)
            first.cancel()
            with pytest.raises(asyncio.CancelledError):
                await first
            return await client.call("ping", {}, request_id="second"), "second"

    try:
        reply, rid = asyncio.run(run())
    finally:
        answering.join(10)
        router.close()
    assert [request_id for _, request_id in held] == ["first", "second"]
    assert reply == {"for": rid}
