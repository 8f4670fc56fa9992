"""The embedding queue as the pool sees it, and the figures `stats` gives of it: a backlog shows as lag."""

from __future__ import annotations

import time

from groove.coordinator.search.derived import Derived


def test_the_visibility_lag_counts_what_is_still_queued_at_its_age_so_far() -> None:
    derived = Derived(10, embeddings=True)
    assert derived.lag_summary()["samples"] == 0
    assert derived.oldest_ms() == 0.0
    derived.enqueue("user", [("a", "text a"), ("b", "text b")], since=time.monotonic() - 2.0)
    lag = derived.lag_summary()
    assert lag["samples"] == 2
    assert lag["p50"] >= 2000  # committed 2 s ago and not yet searchable by meaning: 2 s of lag, not none
    assert 0 <= derived.oldest_ms() < 1000  # queued just now
    assert derived.queue_depth() == 2


def test_the_oldest_wait_counts_what_a_worker_holds_as_well_as_what_is_queued() -> None:
    derived = Derived(10, embeddings=True)
    assert derived.oldest_ms(held_since=time.monotonic() - 3.0) >= 3000  # a worker holds the only texts left
    derived.enqueue("user", [("a", "text a")], since=None)
    assert derived.oldest_ms(held_since=time.monotonic() - 3.0) >= 3000  # the held ones waited longer
    assert derived.oldest_ms(held_since=None) < 1000


def test_a_share_taken_and_put_back_is_first_in_line_again() -> None:
    derived = Derived(10, embeddings=True)
    derived.enqueue("user", [(f"id{i}", f"text {i}") for i in range(5)], since=None)
    taken = derived.take(3)
    assert [p.learning_id for p in taken] == ["id0", "id1", "id2"]
    derived.put_back(taken)  # its worker died
    assert [p.learning_id for p in derived.take(10)] == ["id0", "id1", "id2", "id3", "id4"]
    derived.count_embedded(5)
    assert derived.embedded == 5


def test_with_no_model_to_load_nothing_more_is_queued() -> None:
    derived = Derived(10, embeddings=True)
    derived.enqueue("user", [("a", "text")], since=time.monotonic())
    derived.disable()
    assert derived.queue_depth() == 0
    assert derived.lag_summary()["samples"] == 0
    derived.enqueue("user", [("b", "text")], since=time.monotonic())
    assert derived.queue_depth() == 0
    assert derived.status() == "none"
