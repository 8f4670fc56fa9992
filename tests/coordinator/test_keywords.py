"""The keyword index: every word first, the rarest words as a fallback, stop words, tiers, replacement, and a
batch of commits taken in one transaction."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from coordinator.search.derived import Derived, DerivedChanges
from coordinator.search.keywords import KeywordIndex, query_terms


def index(*entries: tuple[str, str, str]) -> KeywordIndex:
    built = KeywordIndex()
    for lid, tier, text in entries:
        built.upsert(tier, [(lid, text)])
    return built


def test_query_terms_drop_stop_words_and_repeats_but_keep_a_query_of_only_stop_words() -> None:
    assert query_terms("How do I fix the flaky flaky test?") == ["fix", "flaky", "test"]
    assert query_terms("what is it") == ["what", "is", "it"]
    assert query_terms("") == []


def test_learnings_with_every_word_come_before_those_with_some() -> None:
    kw = index(
        ("a", "user", "flaky socket test under load"),
        ("b", "user", "socket options for the proxy"),
        ("c", "user", "unrelated advice about logging"),
    )
    hits = kw.search("flaky socket", ["user"], 10)
    assert [h[0] for h in hits] == ["a", "b"]
    assert hits[0][3] == ["flaky", "socket"]
    assert hits[1][3] == ["socket"]


def test_the_any_word_fallback_uses_the_rarest_words() -> None:
    common = [(f"c{i}", "user", f"common words everywhere number {i}") for i in range(30)]
    kw = index(*common, ("rare", "user", "a zeppelin mooring guide"))
    # six query words: AND matches nothing, the fallback ORs the four rarest that occur at all
    hits = kw.search("common words everywhere zeppelin mooring nothing", ["user"], 3)
    assert hits[0][0] == "rare"
    assert kw._rarest(["common", "words", "everywhere", "zeppelin", "mooring", "absent"]) == [
        "zeppelin",
        "mooring",
        "common",
        "words",
    ]


def test_only_the_tiers_asked_for_are_searched() -> None:
    kw = index(("a", "user", "retry with backoff"), ("b", "project:/x", "retry with jitter"))
    assert [h[0] for h in kw.search("retry", ["project:/x"], 10)] == ["b"]
    assert kw.search("retry", [], 10) == []


def test_upsert_replaces_remove_and_drop_tier_forget() -> None:
    kw = index(("a", "user", "old words"), ("b", "project:/x", "other words"))
    kw.upsert("user", [("a", "new text")])
    assert kw.search("old", ["user"], 10) == []
    assert [h[0] for h in kw.search("new", ["user"], 10)] == ["a"]
    kw.remove(["a", "unknown"])
    assert kw.search("new", ["user"], 10) == []
    kw.drop_tier("project:/x")
    assert len(kw) == 0


def test_a_file_backed_index_starts_afresh_replaces_removes_and_drops_a_tier(tmp_path: Path) -> None:
    path = tmp_path / "data" / "keywords.sqlite"
    path.parent.mkdir()
    path.write_text("what a previous run left")
    kw = KeywordIndex(path)
    assert path.read_bytes().startswith(b"what")  # nothing touched before first use...
    kw.upsert("user", [("a", "retry with backoff"), ("b", "retry with jitter"), ("a", "pin the proxy")])
    assert path.read_bytes().startswith(b"SQLite format 3")  # ...then made afresh
    assert len(kw) == 2
    assert [h[0] for h in kw.search("retry", ["user"], 10)] == ["b"]  # an id twice in one call: its last text
    kw.upsert("project:/x", [("c", "retry later")])
    kw.upsert("user", [("b", "pin the version")])  # replaced, not added
    assert len(kw) == 3
    assert [h[0] for h in kw.search("retry", ["user", "project:/x"], 10)] == ["c"]
    kw.remove(["a", "missing"])
    assert [h[0] for h in kw.search("pin", ["user"], 10)] == ["b"]
    kw.drop_tier("user")
    assert len(kw) == 1
    assert kw.search("pin", ["user"], 10) == []
    assert kw.search("retry", ["project:/x"], 10)[0][:2] == ("c", "project:/x")


def _changes(texts: list[tuple[str, str]] = [], deleted: list[str] = []) -> DerivedChanges:  # noqa: B006
    return DerivedChanges(texts, [], deleted, [], [lid for lid, _ in texts] + deleted, [], [], [], [], [], [])


def test_a_batch_of_commits_reaches_the_keyword_index_as_its_last_commit_left_each_learning() -> None:
    derived = Derived(100, embeddings=False)
    derived.after_batch([("user", _changes([("a", "retry with backoff"), ("b", "pin the proxy")]))])
    derived.after_batch(
        [
            ("project:/x", _changes([("c", "retry later")])),
            ("user", _changes([("d", "retry at once")], deleted=["a"])),
            ("project:/x", _changes(deleted=["c"])),  # put and deleted by one batch (a retry one by one)
            ("user", _changes([("b", "retry the proxy")])),  # edited
        ]
    )
    assert {lid for lid, *_ in derived.keywords.search("retry", ["user", "project:/x"], 10)} == {"b", "d"}
    assert derived.keywords.search("pin", ["user"], 10) == []


def test_a_tier_whose_derived_update_fails_leaves_the_others_and_the_keyword_index_whole(
    caplog: pytest.LogCaptureFixture,
) -> None:
    derived = Derived(100, embeddings=False)
    bad = _changes([("a", "retry with backoff")])
    bad.touched = [["a"]]  # type: ignore[list-item]  # unhashable: the row cache cannot take it
    derived.after_batch([("user", bad), ("project:/x", _changes([("c", "retry later")]))])
    assert {lid for lid, *_ in derived.keywords.search("retry", ["user", "project:/x"], 10)} == {"a", "c"}
    assert [r.exc_info is not None for r in caplog.records if r.levelno == logging.ERROR] == [True]
