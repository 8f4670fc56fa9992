"""Search scoring and fusion (pure): relevance from cosine and the words' strength and coverage, the
confidence weight, the keyword-only rule, filters and the reasoning line."""

from __future__ import annotations

from typing import Any

import pytest

from groove.coordinator.search.ranking import Candidate, _passes
from groove.coordinator.search.wordquery import WordMatch
from groove.coordinator.store.records import UsageRow
from groove.coordinator.store.relations import LEARNING
from groove.protocol.search import SearchRequest


def row(
    confidence: float = 0.5, scope: str = "global", category: str = "solution", created_at: int = 1000
) -> list[Any]:
    wire = {
        "id": "l1",
        "scope": scope,
        "category": category,
        "description": "d",
        "pattern": None,
        "insight": "i",
        "confidence": confidence,
        "created_at": created_at,
        "updated_at": created_at,
        "source": {"type": "user_created"},
    }
    return LEARNING.row(wire) + UsageRow.prior(confidence).row("l1")[1:]


def words(strength: float, coverage: float, *matched: str, named: bool = True) -> WordMatch:
    return WordMatch("l1", "user", strength, coverage, list(matched), named)


def test_relevance_is_cosine_plus_the_words_strength_weighed_by_their_coverage_when_they_name_something() -> None:
    c = Candidate("l1", "user", semantic=0.7, words=words(2.0, 0.5, "Caroline"), row=row())
    assert c.relevance() == pytest.approx(0.7 + 1.2 * 2.0 * 0.5**1.5)
    # a word that covers nothing of the query's IDF mass adds nothing, however strong its BM25
    assert Candidate("l1", "user", semantic=0.7, words=words(3.0, 0.0), row=row()).relevance() == pytest.approx(0.7)
    # plain words (no name, number or identifier among them): meaning decides
    plain = Candidate("l1", "user", semantic=0.7, words=words(2.0, 0.5, "busy", named=False), row=row())
    assert plain.relevance() == pytest.approx(0.7)
    assert Candidate("l1", "user", semantic=0.7, row=row()).relevance() == pytest.approx(0.7)


def test_a_learning_without_a_vector_ranks_by_its_coverage_times_0_6() -> None:
    c = Candidate("l1", "user", words=words(1.5, 1.0, "flaky", "socket"), row=row())
    assert c.relevance() == pytest.approx(0.6)


def test_confidence_weighs_a_score_between_0_8_and_1_2_of_its_relevance() -> None:
    for confidence, factor in ((0.0, 0.8), (0.5, 1.0), (1.0, 1.2)):
        c = Candidate("l1", "user", semantic=0.5, row=row(confidence))
        assert c.relevance() * (0.8 + 0.4 * c.confidence) == pytest.approx(0.5 * factor)


def test_the_reasoning_says_which_signals_found_it() -> None:
    c = Candidate(
        "l1", "user", semantic=0.82, words=words(1.0, 1.0, "flaky", "socket"), via="related_to from x", row=row(0.7)
    )
    assert c.reasoning() == "semantic 0.82, words +1.20 ('flaky', 'socket'); via related_to from x; confidence 0.70"
    assert Candidate("l1", "user", via="related_to from x", row=row()).reasoning().startswith("via related_to")


def test_filters() -> None:
    body = SearchRequest(text="q", scope_prefix="project:/a", category="solution", since=500, until=1500)
    assert _passes(body, row(scope="project:/a/b"))
    assert not _passes(body, row(scope="global"))
    assert not _passes(body, row(scope="project:/a", category="preference"))
    assert not _passes(body, row(scope="project:/a", created_at=400))
    assert not _passes(body, row(scope="project:/a", created_at=1600))
    assert not _passes(SearchRequest(text="q", min_confidence=0.6), row(0.5))
    assert _passes(SearchRequest(text="q", min_confidence=0.5), row(0.5))
