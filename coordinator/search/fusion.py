"""How a search fuses its two signals into one relevance, for learnings (ranking.py) and notes (notes.py) alike.

A candidate's relevance is its cosine to the query plus 0.1 times the share of the query's words it holds, so
the meaning decides and exact words break near-ties; one with no vector yet (not embedded so far, or no model)
counts its word share times 0.6 instead, so a keyword match still ranks beside good semantic ones. Matches
below a cosine of 0.15 say nothing (unrelated MiniLM texts score around 0-0.1) and are not candidates: tiny
indexes would otherwise return everything, and noise would crowd expansion.
"""

from __future__ import annotations

KEYWORD_BONUS = 0.1
KEYWORD_ONLY = 0.6
SEMANTIC_FLOOR = 0.15
MIN_POOL = 50  # candidates taken from each index: max(MIN_POOL, 5 * limit)


def pool(limit: int) -> int:
    """How many candidates to take from each index for `limit` results."""
    return max(MIN_POOL, 5 * limit)


def relevance(semantic: float | None, share: float) -> float:
    """Cosine plus the keyword bonus; the keyword share alone (weighted) without a cosine."""
    if semantic is None:
        return KEYWORD_ONLY * share
    return semantic + KEYWORD_BONUS * share
