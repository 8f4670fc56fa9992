"""How a search fuses meaning and words into one relevance, for learnings (ranking.py) and notes (notes.py).

    relevance = cosine + WORD_WEIGHT * strength * coverage ** COVERAGE_POWER

- `strength`: the learning's BM25 for the query (over its own tier's statistics) divided by ln of the tier's
  size, so that it reads alike in a tier of 500 learnings and of 100,000.
- `coverage`: the share of the query's IDF mass the learning holds. It is what makes the weight of the words
  follow how much they discriminate: a learning holding the query's rare words (a name, a date, an
  identifier, most of what the query asks) gets nearly the full BM25 weight; one that shares a single common
  word with a paraphrase gets almost none, and meaning decides.

The two constants were chosen by `benchmarks.relevance --fit`: a grid (WORD_WEIGHT 0.2-0.8, the power
0.5-2) scored on the five LoCoMo dev conversations and groove's coding-dev questions, each family weighing
alike; over all of them the grid's best is 0.4 and 1.5, which three of the five conversations' folds chose too
(leave one set out). Measured through a coordinator on the 2-core box, hit@1 / R@5 (the performance page has
the full table): LoCoMo dev, MiniLM alone 0.224 / 0.413, BM25 alone 0.345 / 0.524, this fusion 0.403 / 0.584
(0.388 / 0.563 with each conversation scored by the constants the other sets chose); the coding questions kept
aside, MiniLM alone 0.528 / 0.778, this fusion 0.556 / 0.778. The words still cost the coding-dev paraphrases
0.613 -> 0.525 of hit@1: no rule tried kept them and won LoCoMo (cosine + a fixed share of raw BM25, z-scored
signals, a gate on the best coverage, a pairwise logistic model over seven features: each gave LoCoMo back
what it kept of the paraphrases).

A candidate with no vector yet (not embedded so far, or no model) counts its coverage times KEYWORD_ONLY, so a
keyword match still ranks beside good semantic ones. Matches below a cosine of 0.15 say nothing (unrelated
MiniLM texts score around 0-0.1) and are not candidates: tiny indexes would otherwise return everything, and
noise would crowd expansion.
"""

from __future__ import annotations

WORD_WEIGHT = 0.4
COVERAGE_POWER = 1.5
KEYWORD_ONLY = 0.6
SEMANTIC_FLOOR = 0.15
MIN_POOL = 50  # candidates taken from each index: max(MIN_POOL, 5 * limit)


def pool(limit: int) -> int:
    """How many candidates to take from each index for `limit` results."""
    return max(MIN_POOL, 5 * limit)


def words_part(strength: float, coverage: float) -> float:
    """What a learning's words add to its cosine."""
    part: float = WORD_WEIGHT * strength * coverage**COVERAGE_POWER
    return part


def relevance(semantic: float | None, strength: float, coverage: float) -> float:
    """Cosine plus the words' part; the coverage alone (weighted) without a cosine."""
    if semantic is None:
        return KEYWORD_ONLY * coverage
    return semantic + words_part(strength, coverage)
