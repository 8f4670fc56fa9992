"""Which tiers give their RocksDB back (`store/idle.py`), and a real tier released and used again."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from groove.coordinator.store.idle import MIN_IDLE_S, TIER_CEILING_MB, IdleTiers, to_release
from groove.coordinator.store.tiers import Tier
from groove.coordinator.store.tierset import TierSet
from groove.protocol import constants as C


@dataclass
class _Seen:
    name: str
    last_used: float
    released: bool = False


def _names(tiers: list[_Seen], idle_s: float, allowed_mb: float, now: float) -> list[str]:
    return [t.name for t in to_release(cast(list[Tier], tiers), idle_s, allowed_mb, now)]


def test_tiers_idle_past_the_limit_are_released_and_busy_ones_kept() -> None:
    tiers = [_Seen("old", 0.0), _Seen("busy", 99.5), _Seen("gone", 10.0, released=True)]
    assert _names(tiers, idle_s=60.0, allowed_mb=1e9, now=100.0) == ["old"]


def test_over_the_budget_the_least_recently_used_go_first_but_never_a_busy_one() -> None:
    tiers = [_Seen(f"t{i}", float(i)) for i in range(6)] + [_Seen("now", 100.0)]
    allowed = 3 * TIER_CEILING_MB  # room for three of the seven
    assert _names(tiers, idle_s=1e6, allowed_mb=allowed, now=100.0) == ["t0", "t1", "t2", "t3"]
    busy = [_Seen(f"b{i}", 100.0 - MIN_IDLE_S / 2) for i in range(5)]
    assert _names(busy, idle_s=1e6, allowed_mb=0.0, now=100.0) == []  # all in use: closing would only thrash


def test_a_released_tier_opens_again_at_its_next_use_with_everything_in_it(tmp_path: Path) -> None:
    tiers = TierSet(tmp_path)
    tiers.lock()
    try:
        user = tiers.open_user()
        user.run("?[k, v] <- [['a', 1]] :create probe {k: String => v: Int}")
        sweeper = IdleTiers(tiers, idle_s=0.0, allowed_mb=1e9, stop=threading.Event())
        assert sweeper.sweep(now=user.last_used + 1) == 1
        assert user.released
        assert user.run("?[v] := *probe{k: 'a', v}") == [[1]]  # opened again, nothing lost
        assert not user.released
        assert user.reopened == 1
        with user.using():  # in use: never closed under a query
            assert sweeper.sweep(now=user.last_used + 10) == 0
        assert tiers.opened() == [user]
        assert user.name == C.TIER_USER
    finally:
        tiers.close()
