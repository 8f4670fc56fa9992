"""A tier whose files are corrupt answers `tier_unavailable`; every other tier keeps serving (seed 002)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from groove.client import GrooveClient
from groove.client.errors import TierUnavailable
from groove.coordinator.store.tiers import DB_DIR, tier_dir
from tests.helpers import RunningCoordinator, learning


def corrupt_and_restart(running: RunningCoordinator, tier: str) -> None:
    """Stop the coordinator, break the tier's RocksDB files, start it again on the same data dir."""
    assert running.stop() == 0
    current = tier_dir(running.data_dir, tier) / DB_DIR / "data" / "CURRENT"
    current.write_bytes(b"\x00garbage")  # RocksDB can no longer find its manifest
    running.restart()


def test_a_corrupt_tier_is_isolated(
    coordinator_factory: Callable[..., RunningCoordinator], client_factory: Callable[..., GrooveClient]
) -> None:
    running = coordinator_factory()
    client = client_factory(running.endpoint)
    broken_ids = client.put_learnings([learning("project:/srv/broken", i) for i in range(3)]).ids
    healthy_ids = client.put_learnings([learning("project:/srv/healthy", i) for i in range(3)]).ids
    user_ids = client.put_learnings([learning("global", i) for i in range(3)]).ids
    corrupt_and_restart(running, "project:/srv/broken")
    client = client_factory(running.endpoint)

    with pytest.raises(TierUnavailable, match="project:/srv/broken"):
        client.put_learnings([learning("project:/srv/broken", 9)])
    with pytest.raises(TierUnavailable, match="Corruption"):
        client.list_learnings(tier="project:/srv/broken")
    assert client.get(healthy_ids[0]).tier == "project:/srv/healthy"
    assert client.get(user_ids[0]).tier == "user"
    more = client.put_learnings([learning("project:/srv/healthy", 9), learning("global", 9)]).ids
    listed = {item.id for item in client.iter_learnings()}
    assert listed == {*healthy_ids, *user_ids, *more}  # everything readable, nothing of the broken tier
    assert not listed & set(broken_ids)
    hits = client.search("learning", mode="keyword", limit=50)
    assert {h.learning.id for h in hits} <= listed

    stats = client.stats()
    (unavailable,) = stats.tiers_unavailable
    assert unavailable.tier == "project:/srv/broken"
    assert "Corruption" in unavailable.reason
    assert running.proc.poll() is None
    assert "tier project:/srv/broken is unavailable (other tiers keep serving)" in running.log()
    assert running.stop() == 0


def test_a_corrupt_user_tier_leaves_the_project_tiers_serving(
    coordinator_factory: Callable[..., RunningCoordinator], client_factory: Callable[..., GrooveClient]
) -> None:
    running = coordinator_factory()
    client = client_factory(running.endpoint)
    project_ids = client.put_learnings([learning("project:/srv/api", i) for i in range(2)]).ids
    client.put_learnings([learning("global", 1)])
    corrupt_and_restart(running, "user")
    client = client_factory(running.endpoint)

    assert "serving without the user tier" in running.log()
    with pytest.raises(TierUnavailable, match="'user'"):
        client.put_learnings([learning("global", 2)])
    assert {item.id for item in client.iter_learnings()} == set(project_ids)
    more = client.put_learnings([learning("project:/srv/api", 9)]).ids
    assert client.get(more[0]).tier == "project:/srv/api"
    assert [u.tier for u in client.stats().tiers_unavailable] == ["user"]
    assert running.stop() == 0
