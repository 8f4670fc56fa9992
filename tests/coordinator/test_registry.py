"""The agent registry: hello, last-seen refresh by peer and by heartbeat, alive window with an injected clock."""

from __future__ import annotations

from groove.coordinator.net.registry import MAX_AGENTS, AgentRegistry
from groove.protocol import constants as C


def test_agents_are_alive_while_they_keep_talking() -> None:
    registry = AgentRegistry()
    registry.hello(b"peer-1", "a1", "worker", 11, "host-a", now=1000.0)
    registry.hello(b"peer-2", "a2", "worker", 12, "host-b", now=1000.0)
    assert registry.counts(now=1000.0) == (2, 2)
    registry.touch(b"peer-1", now=1000.0 + C.AGENT_ALIVE_WINDOW_S)
    assert registry.counts(now=1000.0 + C.AGENT_ALIVE_WINDOW_S + 1) == (2, 1)
    registry.touch(b"unknown-peer", now=2000.0)  # a client that never said hello is not an agent
    assert registry.counts(now=2000.0) == (2, 0)


def test_hello_again_from_a_new_connection_rebinds_the_agent() -> None:
    registry = AgentRegistry()
    registry.hello(b"old", "a1", "worker", 11, "host-a", now=0.0)
    registry.hello(b"new", "a1", "worker", 99, "host-a", now=5.0)
    registry.touch(b"new", now=30.0)
    assert registry.counts(now=30.0) == (1, 1)
    registry.touch(b"old", now=60.0)  # the old connection no longer speaks for it: peers do not pile up
    assert registry.counts(now=60.0) == (1, 0)


def test_heartbeats_keep_an_agent_alive_without_counting_as_requests() -> None:
    registry = AgentRegistry()
    registry.hello(b"p1", "a1", "worker", 11, "host-a", now=0.0)
    for t in range(5, 60, 5):
        assert registry.beat("a1", now=float(t))
    assert registry.counts(now=60.0) == (1, 1)
    assert registry.listed(now=60.0)[0]["requests"] == 0
    assert not registry.beat("never-said-hello", now=60.0)  # the caller answers not_found: say hello again


def test_listed_agents_say_their_state_most_recently_seen_first() -> None:
    registry = AgentRegistry()
    registry.hello(b"p1", "quiet", "worker", 11, "host-a", now=0.0)
    registry.hello(b"p2", "busy", "orchestrator", 12, "host-b", now=0.0)
    registry.touch(b"p2", now=10.0)
    registry.touch(b"p2", now=20.0)
    listed = registry.listed(now=20.0)
    assert [(a["agent_id"], a["state"], a["requests"]) for a in listed] == [("busy", "alive", 2), ("quiet", "gone", 0)]
    assert listed[0]["role"] == "orchestrator"
    assert [a["agent_id"] for a in registry.listed("gone", now=20.0)] == ["quiet"]
    assert [a["agent_id"] for a in registry.listed("alive", now=20.0 + C.AGENT_ALIVE_WINDOW_S + 1)] == []


def test_a_flood_of_made_up_agents_is_bounded() -> None:
    registry = AgentRegistry()
    for n in range(MAX_AGENTS + 50):
        registry.hello(f"p{n}".encode(), f"agent-{n}", "worker", n, "host", now=float(n))
    known, _ = registry.counts(now=float(MAX_AGENTS + 50))
    assert known <= MAX_AGENTS
    ids = {a["agent_id"] for a in registry.listed(now=float(MAX_AGENTS + 50))}
    assert f"agent-{MAX_AGENTS + 49}" in ids  # the most recent are kept, the longest silent forgotten
    assert "agent-0" not in ids
