"""Saved derived indexes at the unit level, on a real tier: a tier whose load failed has nothing saved, and a
tier's tokens go as it opens (the process tests are tests/integration/test_saved_indexes.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from groove.coordinator.search import saved
from groove.coordinator.search.derived import Derived
from groove.coordinator.store.tierset import TierSet


def test_a_tier_whose_load_failed_is_left_out_of_the_save(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    derived = Derived(10, embeddings=False, keyword_file=tmp_path / "keywords.sqlite")
    tiers = TierSet(tmp_path / "data")
    user = tiers.open_user()
    derived.load_tier(user)
    saved.record_tokens(user, {saved.KEYWORDS: "a token"}, now=1)

    def broken(*_: object) -> None:
        raise RuntimeError("the tier broke while it was read")

    monkeypatch.setattr(Derived, "_read_pages", broken)
    with pytest.raises(RuntimeError):
        derived.load_tier(user)  # a reindex, say, that fails halfway
    assert saved.take_tokens(user) == {}  # the load took them first: nothing can match the tier now
    assert user.name not in derived.loads
    assert user.name in derived.vectors  # a failed reindex keeps serving what it had read
    derived.save(build_wait_s=1)
    assert saved.take_tokens(user) == {}  # nothing of a half-loaded tier was vouched for
    tiers.close()
