"""A working memory's notes on a real coordinator (found by meaning with the real model, by words without one,
gone from results once expired, kept across a restart), `when_idle` nudges pushed to an idle agent, and
`nudge.list` for the board view."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from groove.client import BadRequest, GrooveClient, NotFound
from groove.protocol.ids import now_ms, uuid7
from tests.helpers import RunningCoordinator, wait_for

PROJECT = "/srv/shop"
NOTES = {
    "timeouts": "The payment provider's sandbox answers slowly: give its HTTP calls a 30 second deadline.",
    "grid": "The cart page lays out its items with CSS grid, not flexbox.",
    "fixtures": "Database fixtures for the orders tests live in tests/data/orders.sql.",
}


def memory_with_a_task(client: GrooveClient) -> str:
    memory = client.create_memory(PROJECT, "checkout", "ship the new checkout")
    client.add_tasks(memory, [{"id": "pay", "title": "wire the payment provider"}])
    return memory


@pytest.mark.slow
def test_notes_are_found_by_meaning_until_they_expire_and_after_a_restart(
    coordinator_factory: Callable[..., RunningCoordinator], client_factory: Callable[..., GrooveClient]
) -> None:
    coordinator = coordinator_factory(model=True)
    client = client_factory(coordinator.endpoint, timeout=60)
    memory = memory_with_a_task(client)
    other = client.create_memory(PROJECT, "search", "faster search")
    ids = {key: client.note(memory, text, "discovery", created_by="a1") for key, text in NOTES.items()}
    client.note(other, "Payment requests time out against the sandbox.", "discovery")  # another memory's
    # no word of the query is in the note it should find: only the model can find it
    query = "how long to wait for the billing gateway before giving up"
    found = wait_for(
        lambda: [h for h in client.search_notes(memory, query) if h.reasoning.startswith("semantic")],
        "the note embedded and found by meaning",
        timeout=120,
        every=0.2,
    )
    best = client.search_notes(memory, query, limit=5)
    assert best[0].note.id == ids["timeouts"], [h.note.content for h in best]
    assert found[0].note.id == ids["timeouts"]
    assert {h.note.memory_id for h in best} == {memory}
    short = client.note(memory, "The staging card reader is offline until noon.", "context", "pay", "a2",
                        expires_at=now_ms() + 2500)  # fmt: skip
    assert client.search_notes(memory, "card reader offline")[0].note.id == short
    assert [n.id for n in client.notes(memory, kind="context")] == [short]
    assert client.notes(memory, task_id="pay")[0].created_by == "a2"
    wait_for(lambda: short not in [h.note.id for h in client.search_notes(memory, "card reader offline")], "expiry")
    assert short not in [n.id for n in client.notes(memory)]
    assert short in [n.id for n in client.notes(memory, include_expired=True)]

    coordinator.stop()
    coordinator.restart()
    again = wait_for(  # once the model for queries has loaded again
        lambda: [h for h in client.search_notes(memory, query, limit=5) if h.reasoning.startswith("semantic")],
        "notes found by meaning after a restart",
        timeout=120,
        every=0.2,
    )
    assert again[0].note.id == ids["timeouts"]
    assert short not in [n.id for n in client.notes(memory)]


def test_notes_are_found_by_words_without_a_model_and_bad_notes_change_nothing(client: GrooveClient) -> None:
    memory = memory_with_a_task(client)
    other = client.create_memory(PROJECT, "other", "another goal")
    client.add_tasks(other, [{"id": "elsewhere", "title": "x"}])
    kept = client.note(memory, NOTES["fixtures"], "artifact_ref", "pay")
    (hit,) = client.search_notes(memory, "orders fixtures")
    assert (hit.note.id, hit.note.kind, hit.note.task_id) == (kept, "artifact_ref", "pay")
    assert hit.reasoning.startswith("words +")
    assert client.search_notes(other, "orders fixtures") == []
    with pytest.raises(NotFound):
        client.note(uuid7(), "x", "context")
    with pytest.raises(BadRequest):
        client.note(memory, "x", "context", task_id="elsewhere")  # a task of another memory
    with pytest.raises(BadRequest):
        client.note(memory, "x", "context", expires_at=now_ms() - 1)
    with pytest.raises(BadRequest):
        client.note(memory, "x", "gossip")
    with pytest.raises(BadRequest):
        client.note(memory, "   ", "context")
    with pytest.raises(NotFound):
        client.search_notes(uuid7(), "orders")
    with pytest.raises(BadRequest):
        client.call("search", {"memory_id": memory, "text": "orders", "category": "solution"})
    assert [n.id for n in client.notes(memory, include_expired=True)] == [kept]


def test_a_when_idle_nudge_is_pushed_once_when_the_agent_says_it_is_idle(
    coordinator: RunningCoordinator, client: GrooveClient, client_factory: Callable[..., GrooveClient]
) -> None:
    memory = memory_with_a_task(client)
    agent = client_factory(coordinator.endpoint)
    agent.hello("idler", role="docs", status="working", task_id="pay")
    nudge = client.send_nudge("role:docs", memory, "when you are free: update the changelog", "lead",
                              delivery="when_idle")  # fmt: skip
    agent.heartbeat("idler", status="working", task_id="pay")
    assert agent.pushed_nudges(wait=0.5) == []  # busy: it waits
    side = client_factory(coordinator.endpoint)  # a heartbeat thread's own connection, as the worker's
    sent = time.monotonic()
    side.heartbeat("idler", status="idle")
    (pushed,) = agent.pushed_nudges(wait=10)  # on the connection the agent said hello on
    assert time.monotonic() - sent < 5
    assert side.pushed_nudges() == []
    assert (pushed.id, pushed.delivery) == (nudge, "when_idle")
    agent.heartbeat("idler", status="idle")
    assert agent.pushed_nudges(wait=0.5) == []  # pushed once
    assert [n.id for n in agent.poll_nudges("idler", role="docs", idle=True)] == [nudge]  # until acknowledged
    agent.ack_nudges("idler", [nudge])
    late = client_factory(coordinator.endpoint)
    late.hello("late", role="docs", status="idle")  # another agent of the role, idle from the start
    assert [n.id for n in late.pushed_nudges(wait=10)] == [nudge]
    listed = wait_for(lambda: client.nudges(memory), "the nudge listed")
    assert [(n.id, n.acked_by) for n in listed] == [(nudge, ["idler"])]


def test_nudges_are_listed_newest_first_with_who_acknowledged_them(client: GrooveClient) -> None:
    memory = memory_with_a_task(client)
    first = client.send_nudge("a1", memory, "one", "lead")
    second = client.send_nudge("all", memory, "two", "lead", priority="high")
    client.poll_nudges("a1")
    client.ack_nudges("a1", [first, second])
    client.poll_nudges("a2")
    client.ack_nudges("a2", [second])
    assert [(n.id, n.acked_by) for n in client.nudges(memory)] == [(second, ["a1", "a2"]), (first, ["a1"])]
    assert [n.id for n in client.nudges(memory, target="a1")] == [first]
    assert [n.id for n in client.nudges(memory, limit=1)] == [second]
    with pytest.raises(NotFound):
        client.nudges(uuid7())
