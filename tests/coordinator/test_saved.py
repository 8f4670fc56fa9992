"""Saved derived indexes at the unit level, on a real tier: a tier whose load failed has nothing saved, a tier's
tokens go as it opens, and its count and content hashes are kept only for the token they were saved with (the
process tests are tests/integration/test_saved_indexes.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from groove.coordinator.errors import DiskFault, Rejected
from groove.coordinator.search import saved
from groove.coordinator.search.derived import Derived
from groove.coordinator.store.hashfilter import HASHES_FILE
from groove.coordinator.store.tiers import COUNTS, COUNTS_DIR, Tier
from groove.coordinator.store.tierset import TierSet
from groove.coordinator.write import tiercommit
from groove.protocol import constants as C
from groove.protocol.errors import ErrorCode
from tests.coordinator.harness import Harness
from tests.helpers import learning

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


class _ReadOnly:
    """A disk that refuses writes while `on`: the tier's removal of its tokens fails as RocksDB's would."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.on = True
        run = Tier.run

        def guarded(tier: Tier, script: str, params: dict[str, object] | None = None) -> list[list[object]]:
            if self.on and ":rm derived_saved" in script:
                raise DiskFault(ErrorCode.STORAGE_IO, f"tier {tier.name!r}: Read-only file system")
            return run(tier, script, params)

        monkeypatch.setattr(Tier, "run", guarded)
        monkeypatch.setattr(tiercommit, "probe", lambda _: (ErrorCode.STORAGE_IO, "read-only") if self.on else None)


def test_tokens_a_tier_cannot_remove_as_it_opens_are_trusted_by_nothing_and_hold_its_writes_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Were a write let through beside them, a crash after the disk mended would leave tokens vouching for saved
    # files that miss it
    _stopped_with_counts(tmp_path / "data", learnings=5)
    disk = _ReadOnly(monkeypatch)
    h = Harness(tmp_path / "data")
    user = h.tiers.open_user()
    assert user.tokens_left
    assert not user.counts_kept  # counted, not taken from the files the tokens vouch for
    assert _held(user) == [COUNTS]
    (refused,) = h.run(h.item(C.OP_LEARNING_PUT, {"learnings": [learning()]}))
    assert isinstance(refused, Rejected)
    assert refused.code == ErrorCode.STORAGE_IO
    assert user.learnings == 0
    disk.on = False  # mended: the next write removes them first, then commits
    h.ok(C.OP_LEARNING_PUT, {"learnings": [learning()]})
    assert _held(user) == []
    assert not user.tokens_left
    assert user.learnings == 1
    h.tiers.close()


def test_a_clean_stop_s_tokens_replace_every_one_a_tier_could_not_remove(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stopped_with_counts(tmp_path / "data", learnings=5)
    disk = _ReadOnly(monkeypatch)
    tiers = TierSet(tmp_path / "data")
    user = tiers.open_user()
    disk.on = False  # mended, and no write came before the stop: its next save names only what it saved
    saved.record_tokens(user, {"vectors": "t2"}, now=2)
    assert _held(user) == ["vectors"]
    assert not user.tokens_left
    tiers.close()
