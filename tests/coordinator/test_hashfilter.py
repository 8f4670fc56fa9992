"""The in-memory filter of content hashes a tier may hold: never a false "certainly new"."""

from __future__ import annotations

import hashlib

from groove.coordinator.store import hashfilter
from groove.coordinator.store.hashfilter import HashFilter


def digest(n: int) -> str:
    return hashlib.sha256(str(n).encode()).hexdigest()


def test_a_hash_loaded_or_added_may_be_held_and_one_never_seen_is_left_out() -> None:
    loaded, added, unseen = digest(1), digest(2), digest(3)
    hashes = HashFilter([loaded, loaded])
    hashes.add([added])
    assert hashes.maybe([unseen, added, loaded]) == [added, loaded]
    assert hashes.maybe([]) == []
    assert len(hashes) == 2


def test_an_empty_filter_leaves_out_everything() -> None:
    assert HashFilter().maybe([digest(1), digest(2)]) == []


def test_hashes_added_past_the_merge_point_stay_held() -> None:
    hashes = HashFilter([digest(0)])
    every = [digest(n) for n in range(1, 3 * hashfilter._MERGE_AT + 7)]
    for start in range(0, len(every), 1000):  # batches, as the writer adds them; merges happen on the way
        hashes.add(every[start : start + 1000])
    assert len(hashes._recent) < hashfilter._MERGE_AT  # merged into the sorted array at least once
    assert hashes.maybe(every) == every
    assert hashes.maybe([digest(-n) for n in range(1, 500)]) == []
    assert len(hashes) == len(every) + 1


def test_two_hashes_sharing_the_kept_prefix_are_both_looked_up() -> None:
    held = "ab" * 8 + "0" * 48
    twin = "ab" * 8 + "f" * 48  # the same first 64 bits, other content: a lookup, never a wrong answer
    assert HashFilter([held]).maybe([twin]) == [twin]
