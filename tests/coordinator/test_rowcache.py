"""The search row cache never keeps a row older than a commit it has been told about."""

from __future__ import annotations

from groove.coordinator.search.rowcache import RowCache, Supersessions


def row(lid: str, version: int) -> list[object]:
    return [lid, version]


def test_rows_are_kept_and_evicted_least_recently_used_first() -> None:
    cache = RowCache(capacity=2)
    cache.fill("user", [row("a", 1), row("b", 1)], cache.stamp())
    assert cache.get("user", ["a"]) == {"a": row("a", 1)}  # a is now the most recently used
    cache.fill("user", [row("c", 1)], cache.stamp())
    assert set(cache.get("user", ["a", "b", "c"])) == {"a", "c"}
    assert cache.get("project:/x", ["a"]) == {}  # rows are per tier
    assert (cache.hits, cache.misses) == (3, 2)


def test_a_read_that_raced_a_commit_is_not_kept() -> None:
    cache = RowCache(capacity=10)
    stamp = cache.stamp()  # a reader starts its CozoDB query ...
    cache.invalidate("user", ["a"])  # ... a commit changes a, and invalidates it ...
    cache.fill("user", [row("a", 1), row("b", 1)], stamp)  # ... the reader offers what it read before
    assert cache.get("user", ["a", "b"]) == {"b": row("b", 1)}
    cache.fill("user", [row("a", 2)], cache.stamp())  # a read after the commit is kept
    assert cache.get("user", ["a"]) == {"a": row("a", 2)}


def test_invalidation_drops_cached_rows_and_old_stamps_once_forgotten() -> None:
    cache = RowCache(capacity=0)
    cache.fill("user", [row("a", 1)], cache.stamp())
    assert len(cache) == 0  # capacity 0 turns the cache off
    cache = RowCache(capacity=4)
    cache.fill("user", [row("a", 1)], cache.stamp())
    stamp = cache.stamp()
    cache.invalidate("user", ["a"])
    assert cache.get("user", ["a"]) == {}
    # more learnings invalidated than it remembers: a stamp from before them cannot be trusted at all
    cache.invalidate("user", [f"x{i}" for i in range(2000)])
    cache.fill("user", [row("z", 1)], stamp)
    assert cache.get("user", ["z"]) == {}
    cache.drop_tier("user")
    cache.fill("user", [row("z", 1)], cache.stamp())
    assert cache.get("user", ["z"]) == {"z": row("z", 1)}


def test_supersessions_follow_relations_per_tier() -> None:
    s = Supersessions()
    s.load("user", [("new", "old"), ("newer", "old")])
    s.apply("project:/p", added=[("p-new", "p-old")], removed=[])
    assert s.superseded(["user"], ["old", "new", "p-old"]) == {"old"}
    assert s.superseded(["user", "project:/p"], ["old", "p-old"]) == {"old", "p-old"}
    s.apply("user", added=[], removed=[("new", "old")])
    assert s.superseded(["user"], ["old"]) == {"old"}  # still superseded by `newer`
    s.apply("user", added=[], removed=[("newer", "old"), ("never", "stored")])
    assert s.superseded(["user"], ["old"]) == set()
