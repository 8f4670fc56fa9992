"""Saved derived indexes at the unit level, on a real tier: a tier whose load failed has nothing saved, a tier's
tokens go as it opens, and its count and content hashes are kept only for the token they were saved with (the
process tests are tests/integration/test_saved_indexes.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from groove.coordinator.search import saved
from groove.coordinator.search.derived import Derived
from groove.coordinator.store.hashfilter import HASHES_FILE
from groove.coordinator.store.tiers import COUNTS, COUNTS_DIR, Tier
from groove.coordinator.store.tierset import TierSet

_HASH = "ab" * 32


def _held(tier: Tier) -> list[str]:
    """The index names whose tokens the tier holds in its database."""
    return [row[0] for row in tier.run("?[name] := *derived_saved{name}")]


def _stopped_with_counts(data: Path, learnings: int) -> None:
    """A tier that a clean stop left with these counts (and one content hash) saved."""
    tiers = TierSet(data)
    user = tiers.open_user()
    user.learnings = learnings
    user.content_hashes.add([_HASH])
    saved.record_tokens(user, {COUNTS: user.save_counts()}, now=1)
    tiers.close()


def test_a_clean_stops_counts_are_kept_once_then_counted_again(tmp_path: Path) -> None:
    _stopped_with_counts(tmp_path / "data", learnings=5)
    tiers = TierSet(tmp_path / "data")
    user = tiers.open_user()
    assert user.counts_kept
    assert user.learnings == 5
    assert user.content_hashes.maybe([_HASH]) == [_HASH]
    assert _held(user) == []  # taken as it opened: a write from now on is not in what was saved
    tiers.close()
    tiers = TierSet(tmp_path / "data")
    user = tiers.open_user()
    assert not user.counts_kept
    assert user.learnings == 0
    assert user.content_hashes.maybe([_HASH]) == []
    tiers.close()


@pytest.mark.parametrize("damage", ["garbage", "unsorted", "missing"])
def test_damaged_saved_counts_are_counted_again(tmp_path: Path, damage: str) -> None:
    _stopped_with_counts(tmp_path / "data", learnings=5)
    hashes = tmp_path / "data" / "user" / COUNTS_DIR / HASHES_FILE
    if damage == "garbage":
        hashes.write_bytes(b"not an array")
    elif damage == "unsorted":
        np.save(hashes, np.array([3, 1], dtype=np.uint64))
    else:
        hashes.unlink()
    tiers = TierSet(tmp_path / "data")
    user = tiers.open_user()
    assert not user.counts_kept
    assert user.learnings == 0
    tiers.close()


def test_a_tier_whose_load_failed_is_left_out_of_the_save(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    derived = Derived(10, embeddings=False, keyword_file=tmp_path / "keywords.sqlite")
    tiers = TierSet(tmp_path / "data")
    user = tiers.open_user()
    derived.load_tier(user)

    def broken(*_: object) -> None:
        raise RuntimeError("the tier broke while it was read")

    monkeypatch.setattr(Derived, "_read_pages", broken)
    with pytest.raises(RuntimeError):
        derived.load_tier(user)  # a reindex, say, that fails halfway
    assert user.name not in derived.loads
    assert user.name in derived.vectors  # a failed reindex keeps serving what it had read
    derived.save(build_wait_s=1)
    assert _held(user) == []  # nothing of a half-loaded tier was vouched for
    tiers.close()
