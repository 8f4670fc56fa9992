"""Checkpointed derived indexes at the unit level, on real tiers written through the real writer: a start after a
crash loads the last checkpoint and reads again only what the derived log says came after it; counts and content
hashes likewise; a checkpoint that fails or races a reindex vouches for nothing (the process tests are
tests/integration/test_saved_indexes.py)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from groove.coordinator.search import checkpoints, saved
from groove.coordinator.search.derived import Derived
from groove.coordinator.search.saved import VECTOR_DIR
from groove.coordinator.store import journal
from groove.coordinator.store.hashfilter import HASHES_FILE
from groove.coordinator.store.tiers import COUNTS_DIR, Tier
from groove.protocol import constants as C
from tests.coordinator.harness import Harness
from tests.helpers import learning


def _opened(data: Path) -> tuple[Derived, Harness]:
    """A start on `data`: the tiers with derived data the writes reach, as a coordinator's."""
    derived = Derived(10, embeddings=False, keyword_file=data / "keywords.sqlite")
    return derived, Harness(data, derived=derived)


def _vector(seed: int) -> list[float]:
    vector = np.random.default_rng(seed).standard_normal(C.EMBEDDING_DIM)
    return list(vector / np.linalg.norm(vector))


def _put(h: Harness, word: str, seed: int) -> str:
    body = learning(description=f"the {word} case", insight="x", embedding=_vector(seed))
    lid: str = h.ok(C.OP_LEARNING_PUT, {"learnings": [body]})["ids"][0]
    return lid


def _words(derived: Derived, word: str) -> list[str]:
    return [m.lid for m in derived.keywords.search(word, [C.TIER_USER], 5)]


def _nearest(derived: Derived, seed: int) -> str:
    return derived.vectors[C.TIER_USER].search(np.asarray(_vector(seed), dtype=np.float32), 1)[0][0]


def _checkpoint(derived: Derived, h: Harness) -> None:
    derived.checkpoint(h.batcher.held, derived.due(0.0, 0.0, 0))


def _rows(tier: Tier) -> list[tuple[int, list[str], int]]:
    """The tier's derived log: each entry's number, learnings and count change."""
    rows = tier.run("?[seq, ids_json, delta] := *derived_log{seq, ids_json, delta}")
    return sorted((seq, json.loads(ids), delta) for seq, ids, delta in rows)


def test_each_commit_that_changes_derived_data_logs_its_learnings_and_its_count_change(tmp_path: Path) -> None:
    h = Harness(tmp_path / "data")
    user = h.tiers.open_user()
    two = h.ok(C.OP_LEARNING_PUT, {"learnings": [learning(n=1), learning(n=2)]})["ids"]
    h.ok(C.OP_LEARNING_DELETE, {"id": two[0]})
    assert _rows(user) == [(1, two, 2), (2, [two[0]], -1)]
    assert user.journal_seq == 2
    h.tiers.close()


def test_a_start_after_a_crash_loads_the_checkpoint_and_reads_again_only_what_came_after(tmp_path: Path) -> None:
    data = tmp_path / "data"
    derived, h = _opened(data)
    alpha, beta = _put(h, "alpha", 1), _put(h, "beta", 2)
    _checkpoint(derived, h)
    assert _rows(h.tiers.open_user()) == []  # every index holds them: their entries went
    h.ok(C.OP_LEARNING_DELETE, {"id": alpha})
    gamma = _put(h, "gamma", 3)
    h.tiers.close()  # a crash, as far as derived data knows: nothing saved since the checkpoint

    derived, h = _opened(data)
    user = h.tiers.open_user()
    assert derived.loads[C.TIER_USER] == "kept, 2 read again"
    assert _words(derived, "alpha") == []
    assert (_words(derived, "beta"), _words(derived, "gamma")) == ([beta], [gamma])
    assert len(derived.vectors[C.TIER_USER]) == 2
    assert (_nearest(derived, 2), _nearest(derived, 3)) == (beta, gamma)
    assert user.counts_kept
    assert user.learnings == 2  # the count saved, plus the log's changes since
    assert _put(h, "gamma", 3) == gamma  # its content hash was read again too: known, not stored twice
    assert user.learnings == 2
    _checkpoint(derived, h)
    h.tiers.close()

    derived, h = _opened(data)
    assert derived.loads[C.TIER_USER] == "kept"  # nothing since: nothing read again
    assert _words(derived, "gamma") == [gamma]
    assert derived.due(0.0, 0.0, 0) == []  # nor anything to checkpoint again
    h.tiers.close()


def test_a_tier_is_due_once_enough_learnings_changed_or_enough_time_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    derived, h = _opened(data)
    monkeypatch.setattr(checkpoints, "CHANGED", 3)
    thread = checkpoints.Checkpoints(derived, h.batcher.held, every_s=60.0, stop=threading.Event())
    opened = time.monotonic()
    _put(h, "alpha", 1)
    assert thread.run_once(opened) == []  # one change, and no time: not yet
    assert thread.run_once(opened + 61.0) == [C.TIER_USER]  # a trickle is checkpointed all the same
    assert thread.run_once(opened + 200.0) == []  # nothing changed since
    for seed in range(2, 5):
        _put(h, f"word{seed}", seed)
    assert thread.run_once(time.monotonic()) == [C.TIER_USER]  # three changed: at once
    assert h.tiers.open_user().recorded[saved.VECTORS][1] == h.tiers.open_user().journal_seq
    h.tiers.close()


def test_a_checkpoint_that_cannot_be_recorded_leaves_the_last_one_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    derived, h = _opened(data)
    first = _put(h, "alpha", 1)
    _checkpoint(derived, h)
    user = h.tiers.open_user()
    recorded = dict(user.recorded)
    second = _put(h, "beta", 2)

    def refused(*_: object) -> None:
        raise RuntimeError("the disk refused the record")

    monkeypatch.setattr(journal, "record", refused)
    _checkpoint(derived, h)
    assert user.recorded == recorded
    # the new folders are gone, the last checkpoint's stay
    assert [p.name for p in (user.path / VECTOR_DIR).iterdir()] == [recorded[saved.VECTORS][0]]
    assert [p.name for p in (user.path / COUNTS_DIR).iterdir()] == [recorded["counts"][0]]
    monkeypatch.undo()
    h.tiers.close()

    derived, h = _opened(data)
    assert derived.loads[C.TIER_USER] == "kept, 1 read again"
    assert (_words(derived, "alpha"), _words(derived, "beta")) == ([first], [second])
    h.tiers.close()


def test_a_tier_whose_load_failed_is_left_out_of_checkpoints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    derived, h = _opened(data)
    user = h.tiers.open_user()
    _put(h, "alpha", 1)

    def broken(*_: object) -> None:
        raise RuntimeError("the tier broke while it was read")

    monkeypatch.setattr(Derived, "_read_pages", broken)
    with pytest.raises(RuntimeError):
        derived.load_tier(user)  # a reindex, say, that fails halfway
    assert user.name in derived.vectors  # a failed reindex keeps serving what it had read
    assert derived.due(0.0, 0.0, 0) == []
    derived.checkpoint(h.batcher.held, [C.TIER_USER])
    assert user.recorded == {}  # nothing of a half-loaded tier was vouched for
    h.tiers.close()


def test_a_checkpoint_that_a_reindex_overtakes_is_not_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    derived, h = _opened(data)
    user = h.tiers.open_user()
    _put(h, "alpha", 1)
    mark = derived.keywords.mark

    def reindexed_meanwhile(tiers: list[str]) -> dict[str, str]:
        derived.load_tier(user)  # what was saved so far may be half of what the tier now derives
        return mark(tiers)

    monkeypatch.setattr(derived.keywords, "mark", reindexed_meanwhile)
    _checkpoint(derived, h)
    assert user.recorded == {}
    h.tiers.close()


@pytest.mark.parametrize("damage", ["garbage", "unsorted", "missing"])
def test_damaged_saved_counts_are_counted_again(tmp_path: Path, damage: str) -> None:
    data = tmp_path / "data"
    derived, h = _opened(data)
    _put(h, "alpha", 1)
    _checkpoint(derived, h)
    user = h.tiers.open_user()
    hashes = user.path / COUNTS_DIR / user.recorded["counts"][0] / HASHES_FILE
    h.tiers.close()
    if damage == "garbage":
        hashes.write_bytes(b"not an array")
    elif damage == "unsorted":
        np.save(hashes, np.array([3, 1], dtype=np.uint64))
    else:
        hashes.unlink()
    _, h = _opened(data)
    user = h.tiers.open_user()
    assert not user.counts_kept
    assert user.learnings == 1
    h.tiers.close()


def test_a_reindex_rebuilds_but_leaves_the_recorded_checkpoint_for_the_next_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    derived, h = _opened(data)
    alpha = _put(h, "alpha", 1)
    _checkpoint(derived, h)
    user = h.tiers.open_user()
    derived.load_tier(user)  # `index.rebuild`: made again from the tier, whatever was saved
    assert derived.loads[C.TIER_USER] == "rebuilt"
    assert (user.path / VECTOR_DIR / user.recorded[saved.VECTORS][0]).is_dir()
    h.tiers.close()
    derived, h = _opened(data)
    assert derived.loads[C.TIER_USER] == "vectors kept, keywords rebuilt"  # the reindex dropped the keyword entries
    assert _nearest(derived, 1) == alpha
    h.tiers.close()


def test_saved_indexes_that_cannot_be_brought_up_to_date_are_rebuilt_and_the_tier_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    derived, h = _opened(data)
    alpha = _put(h, "alpha", 1)
    _checkpoint(derived, h)
    beta = _put(h, "beta", 2)
    h.tiers.close()  # a crash: beta is past the checkpoint, in the log

    def broken(*_: object) -> None:
        raise KeyError(1)  # as the keyword file's label bug did (docs/performance-history.md)

    monkeypatch.setattr(saved, "catch_up", broken)
    derived, h = _opened(data)
    h.tiers.open_user()  # not refused: its rows are whole
    assert derived.loads[C.TIER_USER] == "rebuilt"
    assert (_words(derived, "alpha"), _words(derived, "beta")) == ([alpha], [beta])
    assert (_nearest(derived, 1), _nearest(derived, 2)) == (alpha, beta)
    assert derived.due(0.0, 0.0, 0) == [C.TIER_USER]  # nothing rebuilt is vouched for until it is checkpointed
    h.tiers.close()
