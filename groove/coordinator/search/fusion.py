"""How a search fuses meaning and words into one relevance, for learnings (ranking.py) and notes (notes.py).

    relevance = cosine + weight * strength * coverage ** COVERAGE_POWER

- `strength`: the learning's BM25 for the query (over its own tier's statistics) divided by ln of the tier's
  size, so that it reads alike in a tier of 500 learnings and of 100,000.
- `coverage`: the share of the query's IDF mass the learning holds: a learning holding the query's rare words
  gets nearly the full BM25 weight, one sharing a single common word almost none.
- `weight`: WORD_WEIGHT when the learning holds a word of the query that names something (a name, a word in
  capitals, a number, an identifier: `lexical.specific`), else PLAIN_WEIGHT. Such words carry the answer when a
  learning holds them (who said it, which function, which port); a paraphrase's plain words mostly mislead.

The constants were chosen by `benchmarks.relevance --fit`: a grid (WORD_WEIGHT 0.4-4, PLAIN_WEIGHT 0-0.4, the
power 1-2) scored on the five LoCoMo dev conversations and groove's coding-dev questions, each family weighing
alike. Over all of them the grid's best is 1.2, 0 and 1.5; leaving one set out, every conversation's fold chose a
plain weight of 0, a power of 1.5 and a word weight of 1.2-1.6, and the coding set's (LoCoMo alone) 1.2, 0.1 and
1.5. Measured in one process on the 2-core box (hit@1 / R@5; the performance page has the figures through a
coordinator): LoCoMo dev, MiniLM alone 0.224 / 0.413, BM25 alone 0.345 / 0.524, this fusion 0.442 / 0.620 (0.437 / 0.620
with each conversation scored by the constants the other sets chose);
coding-dev 0.613 / 0.875 and the coding questions kept aside 0.528 / 0.778, as MiniLM alone. Tried before and
dropped, on the same data: one word weight for every learning (0.4, power 1.5: LoCoMo 0.403 / 0.584 but
coding-dev hit@1 0.525), cosine + 0.06 x raw BM25, z-scored signals, a gate on the best coverage, a pairwise
logistic model over seven features.

A candidate with no vector yet (not embedded so far, or no model) counts its coverage times KEYWORD_ONLY, so a
keyword match still ranks beside good semantic ones. Matches below a cosine of 0.15 say nothing (unrelated
MiniLM texts score around 0-0.1) and are not candidates: tiny indexes would otherwise return everything, and
noise would crowd expansion.
"""

from __future__ import annotations

WORD_WEIGHT = 1.2
PLAIN_WEIGHT = 0.0
COVERAGE_POWER = 1.5
KEYWORD_ONLY = 0.6
SEMANTIC_FLOOR = 0.15
MIN_POOL = 50  # candidates taken from each index: max(MIN_POOL, 5 * limit)


def pool(limit: int) -> int:
    """How many candidates to take from each index for `limit` results."""
    return max(MIN_POOL, 5 * limit)


def words_part(strength: float, coverage: float, named: bool) -> float:
    """What a learning's words add to its cosine: `named`, it holds a word of the query that names something."""
    part: float = (WORD_WEIGHT if named else PLAIN_WEIGHT) * strength * coverage**COVERAGE_POWER
    return part


def relevance(semantic: float | None, strength: float, coverage: float, named: bool) -> float:
    """Cosine plus the words' part; the coverage alone (weighted) without a cosine."""
    if semantic is None:
        return KEYWORD_ONLY * coverage
    return semantic + words_part(strength, coverage, named)
