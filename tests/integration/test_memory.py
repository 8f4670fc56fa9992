"""Memory that follows a budget, in a real coordinator: idle tiers released and opened again by the next request,
and `stats` reporting memory by part that adds up to the process's RSS."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from groove.client import GrooveClient
from tests.helpers import RunningCoordinator, learning, wait_for


def test_an_idle_tier_is_released_and_the_next_request_opens_it_again_with_nothing_lost(
    coordinator_factory: Callable[..., RunningCoordinator], client_factory: Callable[..., GrooveClient]
) -> None:
    running = coordinator_factory("--tier-idle-s", "1")
    client = client_factory(running.endpoint, timeout=30)
    stored = [
        client.learn("project:/srv/idle", "solution", f"flaky socket test {i}", f"use port 0, {i}") for i in range(5)
    ]

    def released() -> bool:
        tiers = {t.tier: t for t in client.stats().tiers}
        return tiers["project:/srv/idle"].released and tiers["project:/srv/idle"].rocksdb_mb == 0

    wait_for(released, "the idle project tier released", 30)
    found = client.search("flaky socket test", project="/srv/idle", limit=10)  # opens it again
    assert {hit.learning.id for hit in found} == set(stored)
    again = client.learn("project:/srv/idle", "solution", "a write after the release", "is stored once")
    assert client.get(again).insight == "is stored once"
    tiers = {t.tier: t for t in client.stats().tiers}
    assert not tiers["project:/srv/idle"].released
    assert tiers["project:/srv/idle"].learnings == 6


def test_memory_by_part_adds_up_to_the_rss_and_follows_the_budget(
    coordinator_factory: Callable[..., RunningCoordinator], client_factory: Callable[..., GrooveClient]
) -> None:
    running = coordinator_factory("--memory-mb", "256")
    client = client_factory(running.endpoint, timeout=30)
    client.put_learnings([learning("project:/srv/memory", i) for i in range(200)])
    stats = client.stats()
    parts = stats.memory_mb
    assert stats.memory_budget_mb == 256
    expected = {"interpreter", "rocksdb", "vectors", "keywords", "row_cache", "reply_cache", "votes"}
    assert expected <= set(parts)
    assert parts["interpreter"] > 0
    assert parts["rocksdb"] > 0  # two open tiers, each with its own state at least
    assert sum(parts.values()) == pytest.approx(stats.rss_mb, abs=0.5)  # unaccounted is the rest
