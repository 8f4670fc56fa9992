"""The keyword index: identifiers split, stems, BM25 and coverage over each tier's own statistics, stop words,
tiers, replacement, and a batch of commits taken in one transaction."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from groove.coordinator.search import wordquery
from groove.coordinator.search.changes import DerivedChanges
from groove.coordinator.search.derived import Derived
from groove.coordinator.search.keywords import KeywordIndex
from groove.coordinator.search.lexical import Stemmer, index_text, query_terms, specific, stemming_to, words
from groove.swarm.corpus import load


def index(*entries: tuple[str, str, str]) -> KeywordIndex:
    built = KeywordIndex()
    for lid, tier, text in entries:
        built.upsert(tier, [(lid, text)])
    return built


def test_query_terms_drop_stop_words_and_repeats_but_keep_a_query_of_only_stop_words() -> None:
    assert query_terms("How do I fix the flaky flaky test?") == ["fix", "flaky", "test"]
    assert query_terms("what is it") == ["what", "is", "it"]
    assert query_terms("") == []


def test_the_words_that_name_something_are_names_capitals_numbers_and_identifiers() -> None:
    assert specific("When did Caroline go to the LGBTQ group? She met Mel there.") == {"caroline", "lgbtq", "mel"}
    assert specific("fix test_socket_roundtrip on port 8080 in parseConfig") == {
        "test_socket_roundtrip", "test", "socket", "roundtrip", "8080", "parseconfig", "parse", "config",
    }  # fmt: skip
    assert specific("network test fails randomly when the machine is busy") == set()


def test_identifiers_keep_their_name_and_add_their_parts() -> None:
    assert words("fix test_socket_roundtrip in getUserName") == [
        "fix", "test_socket_roundtrip", "test", "socket", "roundtrip", "in", "getusername", "get", "user", "name",
    ]  # fmt: skip
    assert words("HTTPServer at coordinator/search.py v2.13.0") == [
        "httpserver", "http", "server", "at", "coordinator", "search", "py", "v2", "13", "0",
    ]  # fmt: skip
    assert index_text("plain words") == "plain words"
    assert index_text("call parseConfig") == "call parseConfig\nparse Config"


def test_a_name_matches_by_its_parts_and_whole_and_words_match_by_their_stems() -> None:
    kw = index(
        ("a", "user", "test_socket_roundtrip is flaky under load"),
        ("b", "user", "the parseConfig helper rejects unknown keys"),
        ("c", "user", "Caroline went to the support groups"),
        ("d", "user", "unrelated advice about logging"),
    )
    assert [m.lid for m in kw.search("socket roundtrip", ["user"], 10)] == ["a"]
    assert [m.lid for m in kw.search("test_socket_roundtrip", ["user"], 10)] == ["a"]
    assert [m.lid for m in kw.search("config parsing", ["user"], 10)] == ["b"]
    [found] = kw.search("support group", ["user"], 10)
    assert (found.lid, found.matched) == ("c", ["support", "group"])
    assert found.coverage == pytest.approx(1.0)
    assert not found.specific  # plain words
    assert kw.search("where did Caroline go", ["user"], 10)[0].specific  # a name


def test_strength_is_bm25_over_the_tier_and_coverage_the_share_of_the_query_s_idf_mass() -> None:
    texts = [(f"c{i}", "user", f"common words number {i}") for i in range(40)]
    texts += [(f"z{i}", "user", f"a zeppelin of the fleet, number {i}") for i in range(2)]
    kw = index(*texts, ("rare", "user", "a zeppelin mooring guide with common words"), ("x", "project:/x", "mooring"))
    hits = kw.search("zeppelin mooring common", ["user"], 40)
    assert [h.lid for h in hits[:3]] == ["rare", "z0", "z1"]
    assert len(hits) == 40  # the 40 asked for: "common" is searched for too (in a tier this small its list is short)
    assert hits[0].matched == ["zeppelin", "mooring", "common"]
    assert hits[0].coverage == pytest.approx(1.0)
    assert hits[1].matched == ["zeppelin"]
    assert 0.3 < hits[1].coverage < 0.5
    assert hits[3].matched == ["common"]
    assert hits[3].coverage < 0.05  # held by 41 of 43 texts: next to no IDF
    assert hits[0].strength > 2 * hits[1].strength
    # a learning found otherwise (by meaning) gets its words from the same pass, scored alike
    assert kw.search("zeppelin mooring common", ["user"], 0, also=["z1", "nope"]) == [hits[2]]
    # another tier's texts change nothing of this one's statistics
    kw.upsert("project:/x", [(f"m{i}", "mooring") for i in range(30)])
    assert kw.search("zeppelin mooring common", ["user"], 1)[0] == hits[0]


def test_the_best_k_come_first_then_those_found_otherwise_as_their_scores_put_them() -> None:
    texts = [(f"t{i}", "user", "retry " * (1 + i % 4) + f"filler text {i}") for i in range(12)]
    kw = index(*texts, ("other", "user", "nothing to see"))
    every = kw.search("retry", ["user"], 12)
    assert [h.lid for h in kw.search("retry", ["user"], 3)] == [h.lid for h in every[:3]]
    also = [every[9].lid, "other", every[5].lid, every[1].lid]  # one among the best, one holding no word
    assert kw.search("retry", ["user"], 3, also=also) == [*every[:3], every[5], every[9]]


def test_porter_keeps_a_word_s_first_letter_so_only_words_that_could_are_stemmed() -> None:
    # the claim `stemming_to` finds words by: every ASCII word of the corpus, and some made up
    found = {w for e in load().entries for w in words(f"{e.description} {e.insight}")}
    found |= {"sensibility", "relational", "happy", "ies", "sses", "eing", "ytterbium", "a", "zz"}
    pairs = zip(sorted(found), Stemmer().stems(sorted(found)), strict=True)
    assert [(w, s) for w, s in pairs if w.isascii() and s[:1] != w[:1]] == []
    stems = {"zebra", "graze", "elan"}
    text = "zebras, 482913 grazing élans in session-7 (agent_zed)"
    assert stemming_to(stems).findall(text) == ["zebras", "grazing", "élans"]  # not the number, nor agent_zed
    stemmer = Stemmer()
    assert stemmer.among(stemming_to(stems).findall(text), stems) == stems
    assert "482913" not in stemmer._cache  # not asked of the tokenizer
    assert stemming_to(["42"]).findall("4 42nd 7") == ["4", "42nd"]


def test_threads_search_a_file_backed_index_side_by_side_each_finding_what_was_staged_before(tmp_path: Path) -> None:
    kw = KeywordIndex(tmp_path / "keywords.sqlite")
    kw.upsert("user", [(f"c{i}", f"common zeppelin words {i}") for i in range(300)])
    failures: list[str] = []

    def agent(n: int) -> None:
        for i in range(40):
            lid = f"a{n}x{i}"
            kw.stage({lid: ("user", f"zeppelin marker{lid} noted")})  # as a commit stages it before its ack
            if [h.lid for h in kw.search(f"marker{lid}", ["user"], 5)] != [lid]:
                failures.append(lid)
            if len(kw.search("common zeppelin", ["user"], 50)) != 50:
                failures.append(f"{lid}: common")

    threads = [threading.Thread(target=agent, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert len(kw) == 300 + 4 * 40


def test_a_search_meeting_its_tier_dropped_midway_finds_nothing_and_a_table_gone_otherwise_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kw = KeywordIndex(tmp_path / "keywords.sqlite")
    kw.upsert("user", [("a", "retry with backoff")])
    reading = kw._reading

    @contextlib.contextmanager
    def dropped_meanwhile() -> Iterator[sqlite3.Connection]:
        kw.drop_tier("user")  # a reindex, between the search's look at the tables and its read
        with reading() as db:
            yield db

    monkeypatch.setattr(kw, "_reading", dropped_meanwhile)
    assert kw.search("retry", ["user"], 5) == []
    monkeypatch.setattr(kw, "_reading", reading)
    kw.upsert("user", [("a", "retry with backoff")])
    with kw._reading() as db:
        db.execute("DROP TABLE kw_1")  # the table gone under the index, not by a drop: an error, not silence
    with pytest.raises(sqlite3.OperationalError):
        kw.search("retry", ["user"], 5)


def test_a_tier_too_small_for_a_rare_word_covers_by_the_share_of_words() -> None:
    [hit] = index(("a", "user", "Slow Docker builds")).search("docker builds are slow today", ["user"], 5)
    assert hit.coverage == pytest.approx(1.0)  # 'today' is in no text of the tier: it weighs nothing


def test_only_the_tiers_asked_for_are_searched() -> None:
    kw = index(("a", "user", "retry with backoff"), ("b", "project:/x", "retry with jitter"))
    assert [h.lid for h in kw.search("retry", ["project:/x"], 10)] == ["b"]
    assert kw.search("retry", [], 10) == []


def test_upsert_replaces_remove_and_drop_tier_forget() -> None:
    kw = index(("a", "user", "old words"), ("b", "project:/x", "other words"))
    kw.upsert("user", [("a", "new text")])
    assert kw.search("old", ["user"], 10) == []
    assert [h.lid for h in kw.search("new", ["user"], 10)] == ["a"]
    kw.remove(["a", "unknown"])
    assert kw.search("new", ["user"], 10) == []
    kw.drop_tier("project:/x")
    assert len(kw) == 0


def test_staged_texts_are_found_by_the_next_search_and_a_removal_or_a_dropped_tier_unstages_them() -> None:
    kw = index(("a", "user", "retry with backoff"))
    kw.stage({"b": ("user", index_text("retry with jitter")), "c": ("project:/x", "retry later")})
    assert len(kw) == 1  # staged: not written yet...
    assert {h.lid for h in kw.search("retry", ["user", "project:/x"], 10)} == {"a", "b", "c"}  # ...until a search
    kw.stage({"d": ("user", "pin the proxy"), "e": ("project:/x", "pin the version")})
    kw.remove(["d"])
    kw.drop_tier("project:/x")
    kw.flush()
    assert kw.search("pin", ["user", "project:/x"], 10) == []
    assert len(kw) == 2


def test_a_file_backed_index_starts_afresh_replaces_removes_and_drops_a_tier(tmp_path: Path) -> None:
    path = tmp_path / "data" / "keywords.sqlite"
    path.parent.mkdir()
    path.write_text("what a previous run left")
    kw = KeywordIndex(path)
    assert path.read_bytes().startswith(b"what")  # nothing touched before first use...
    kw.upsert("user", [("a", "retry with backoff"), ("b", "retry with jitter"), ("a", "pin the proxy")])
    assert path.read_bytes().startswith(b"SQLite format 3")  # ...then made afresh
    assert len(kw) == 2
    assert [h.lid for h in kw.search("retry", ["user"], 10)] == ["b"]  # an id twice in one call: its last text
    kw.upsert("project:/x", [("c", "retry later")])
    kw.upsert("user", [("b", "pin the version")])  # replaced, not added
    assert len(kw) == 3
    assert [h.lid for h in kw.search("retry", ["user", "project:/x"], 10)] == ["c"]
    kw.remove(["a", "missing"])
    assert [h.lid for h in kw.search("pin", ["user"], 10)] == ["b"]
    kw.drop_tier("user")
    assert len(kw) == 1
    assert kw.search("pin", ["user"], 10) == []
    hit = kw.search("retry", ["project:/x"], 10)[0]
    assert (hit.lid, hit.tier) == ("c", "project:/x")


def _changes(texts: list[tuple[str, str]] = [], deleted: list[str] = []) -> DerivedChanges:  # noqa: B006
    words = [(lid, index_text(text)) for lid, text in texts]
    return DerivedChanges(texts, words, [], deleted, [], [lid for lid, _ in texts] + deleted, [], [], [], [], [], [])


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
    assert {h.lid for h in derived.keywords.search("retry", ["user", "project:/x"], 10)} == {"b", "d"}
    assert derived.keywords.search("pin", ["user"], 10) == []


def test_a_tier_whose_derived_update_fails_leaves_the_others_and_the_keyword_index_whole(
    caplog: pytest.LogCaptureFixture,
) -> None:
    derived = Derived(100, embeddings=False)
    bad = _changes([("a", "retry with backoff")])
    bad.touched = [["a"]]  # type: ignore[list-item]  # unhashable: the row cache cannot take it
    derived.after_batch([("user", bad), ("project:/x", _changes([("c", "retry later")]))])
    assert {h.lid for h in derived.keywords.search("retry", ["user", "project:/x"], 10)} == {"a", "c"}
    assert [r.exc_info is not None for r in caplog.records if r.levelno == logging.ERROR] == [True]


def test_texts_that_could_not_be_written_wait_and_are_written_with_the_next_newer_text_winning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kw = index(("a", "user", "retry with backoff"))
    failing = KeywordIndex._index

    def full(self: KeywordIndex, db: object, entries: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(KeywordIndex, "_index", full)
    kw.upsert("user", [("b", "pin the proxy"), ("c", "old words")])
    assert len(kw) == 1  # nothing written, nothing lost
    kw.stage({"c": ("user", "new words")})
    monkeypatch.setattr(KeywordIndex, "_index", failing)
    kw.flush()  # the disk mended: what waited and what came since, in one go
    assert len(kw) == 3
    assert [h.lid for h in kw.search("pin", ["user"], 10)] == ["b"]
    assert [h.lid for h in kw.search("new", ["user"], 10)] == ["c"]
    assert kw.search("old", ["user"], 10) == []


def test_a_marked_file_keeps_a_tier_s_entries_for_its_token_and_drops_them_otherwise(tmp_path: Path) -> None:
    path = tmp_path / "keywords.sqlite"
    index = KeywordIndex(path)
    index.upsert("user", [("a", "flaky tests under load")])
    index.upsert("project:x", [("b", "flaky deploys")])
    tokens = index.mark(["user", "project:x", "never-opened"])
    assert set(tokens) == {"user", "project:x"}
    index.upsert("user", [("z", "written after the mark")])
    assert index.mark(["user"]) == {"user": tokens["user"]}  # entries keep their token until they are dropped
    again = KeywordIndex(path)
    assert again.adopt("user", tokens["user"])
    assert sorted(m.lid for m in again.search("flaky written", ["user"], 5)) == ["a", "z"]
    assert not again.adopt("project:x", "another token")  # not what the tier says: dropped, to be indexed again
    assert again.search("flaky", ["project:x"], 5) == []
    again.upsert("project:x", [("c", "flaky deploys again")])
    assert [m.lid for m in again.search("flaky", ["user", "project:x"], 5)] == ["a", "c"]
    renewed = again.mark(["project:x"])["project:x"]
    assert renewed != tokens["project:x"]  # made again: a new token, so the old one vouches for nothing
    third = KeywordIndex(path)
    assert third.adopt("user", tokens["user"])  # a crash after the mark: the tier's log says what came since
    assert not third.adopt("project:x", tokens["project:x"])
    assert KeywordIndex().mark(["user"]) == {}  # an index in memory is never saved


def test_a_word_most_texts_hold_ranks_its_newest_holders_and_still_finds_those_found_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(wordquery, "_WALK", 4)  # ten texts hold "deploy": more than a search ranks
    index = KeywordIndex()
    index.upsert("t", [(f"d{i}", "deploy " + "filler " * i) for i in range(10)])  # the shortest, d0, is the oldest
    assert [m.lid for m in index.search("deploy", ["t"], 2)] == ["d6", "d7"]  # the best of the newest four
    found = index.search("deploy", ["t"], 2, also={"d0"})  # found by meaning: its words are still read
    assert [m.lid for m in found] == ["d0", "d6", "d7"]
    assert found[0].matched == ["deploy"]


def test_a_dropped_tier_s_token_goes_with_its_entries(tmp_path: Path) -> None:
    path = tmp_path / "keywords.sqlite"
    index = KeywordIndex(path)
    index.upsert("user", [("a", "flaky tests under load")])
    tokens = index.mark(["user"])
    index.drop_tier("user")  # a reindex, say, that a crash interrupts halfway
    index.upsert("user", [("b", "half of it again")])
    after_a_crash = KeywordIndex(path)
    assert not after_a_crash.adopt("user", tokens["user"])
    assert len(after_a_crash) == 0


def _marked_file(tmp_path: Path) -> Path:
    """A keyword file holding one text of the user tier, marked as a clean stop leaves it: label 1, kw_1, kw_1_v."""
    path = tmp_path / "keywords.sqlite"
    index = KeywordIndex(path)
    index.upsert("user", [("a", "flaky tests under load")])
    index.mark(["user"])
    return path


def test_a_tier_s_table_made_halfway_is_made_again_at_its_first_use(tmp_path: Path) -> None:
    path = _marked_file(tmp_path)
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("DROP TABLE kw_1_v")  # as a stop between the two CREATEs would leave it
    again = KeywordIndex(path)
    assert not again.adopt("user", "any token")
    again.upsert("user", [("b", "flaky tests again")])
    assert [m.lid for m in again.search("flaky", ["user"], 5)] == ["b"]


def test_a_tier_s_first_index_cut_short_leaves_none_of_it_and_the_next_flush_makes_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # cut short after its table was made, as a kill there would: the rows, the table and the label all go back
    path = tmp_path / "keywords.sqlite"
    kw = KeywordIndex(path)
    whole = KeywordIndex._index

    def cut_short(self: KeywordIndex, db: sqlite3.Connection, entries: list[tuple[str, tuple[str, str]]]) -> None:
        whole(self, db, entries)
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(KeywordIndex, "_index", cut_short)
    kw.upsert("user", [("a", "flaky tests under load")])
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT (SELECT count(*) FROM doc), (SELECT count(*) FROM label)").fetchone() == (0, 0)
    monkeypatch.setattr(KeywordIndex, "_index", whole)
    kw.flush()  # the disk mended: what waited is written, its table made again
    assert [m.lid for m in kw.search("flaky", ["user"], 5)] == ["a"]
    assert len(kw) == 1


def test_rows_left_under_a_label_the_file_does_not_name_are_dropped_when_it_is_opened(tmp_path: Path) -> None:
    path = _marked_file(tmp_path)
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        # what an older run killed between its rows' commit and its label's left (its first index of the tier)
        db.execute("DELETE FROM label")
        db.execute("DROP TABLE kw_1_v")
        db.execute("DROP TABLE kw_1")
    again = KeywordIndex(path)
    assert not again.adopt("user", None)
    again.upsert("user", [("a", "flaky tests under load")])
    assert [m.lid for m in again.search("flaky", ["user"], 5)] == ["a"]
    assert len(again) == 1
