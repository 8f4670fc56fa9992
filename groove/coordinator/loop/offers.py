"""An injection's candidates as its chooser weighs them: from this coordinator's tiers, or offered by the
coordinator that owns some other tier of the session's context (`inject.candidates`, PROTOCOL.md section 11).

The chooser needs of a candidate only what `Pick` holds: its score and relevance, its confidence and usage,
and the line saying why it is there; the learning itself is rendered only if it is chosen. An offer is what
the owner of a tier would have put in the chooser's pool had it held that tier: its own best candidates (the
same pool and the same scoring), the `contradicts` relations stored there that start at one of them, and the
learnings of other tiers that a `supersedes` relation stored there hides.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from groove.coordinator.search.derived import Derived
from groove.coordinator.search.ranking import Candidate, find, stored_rows
from groove.coordinator.store.records import UsageRow, joined, learning_wire
from groove.coordinator.store.tiers import Tier
from groove.coordinator.store.tierset import TierSet
from groove.protocol import constants as C
from groove.protocol.loop import InjectCandidatesRequest, OfferedLearning
from groove.protocol.search import SearchContext, SearchRequest

POOL = C.MAX_OFFERED  # candidates considered per session: enough for the largest budget after the filters


@dataclass(frozen=True)
class Pick:
    """One candidate for an injection."""

    learning_id: str
    tier: str
    score: float
    relevance: float  # to the task; 0 without one
    confidence: float
    fresh: bool  # never injected yet
    harmful: bool  # contradicted more often than it helped
    reasoning: str
    wire: Callable[[], dict[str, Any]]  # the learning as on the wire


def held(tiers: TierSet, names: Collection[str]) -> dict[str, Tier]:
    """Those of these tiers this coordinator holds, by name."""
    return {name: t for name in names if (t := tiers.get(name, create=False)) is not None}


def local_picks(
    tiers: TierSet, derived: Derived, context: SearchContext, task: str | None, only: list[str]
) -> list[Pick]:
    """With a task, the best `POOL` search matches in these tiers of the context; without one, each tier's
    `POOL` most confident learnings. Superseded and archived learnings are left out."""
    if task is not None:
        search = SearchRequest(text=task, limit=POOL, context=context)
        return [_local(c, True) for c in find(tiers, derived, search, only)]
    return [_local(c, False) for c in _most_confident(derived, held(tiers, only))]


def offered_picks(offers: list[OfferedLearning]) -> list[Pick]:
    """Candidates another coordinator offered, as picks."""
    return [_offered(o) for o in offers]


def offer(tiers: TierSet, derived: Derived, body: InjectCandidatesRequest) -> dict[str, Any]:
    """The `inject.candidates` reply: what these tiers offer, and the relations stored there the chooser needs."""
    picks = local_picks(tiers, derived, body.context, body.task, body.tiers)
    ids = [p.learning_id for p in picks]
    contradicts: list[dict[str, str]] = []
    superseded: set[str] = set()
    for tier in held(tiers, body.tiers).values():
        if ids:
            pairs = tier.run(
                "?[a, b] := a in $ids, *learning_relations{from_id: a, relation_type: 'contradicts', to_id: b}",
                {"ids": ids},
            )
            contradicts += [{"from_id": a, "to_id": b} for a, b in pairs]
        # the targets this tier does not hold: learnings of other tiers (a relation to a learning deleted
        # here goes with it)
        rows = tier.run("?[to] := *learning_relations{relation_type: 'supersedes', to_id: to}, not *learning{id: to}")
        superseded.update(row[0] for row in rows)
    candidates = [
        {"learning": p.wire(), "score": p.score, "relevance": p.relevance, "reasoning": p.reasoning} for p in picks
    ]
    return {
        "offer": {
            "tiers": body.tiers,
            "candidates": candidates,
            "contradicts": contradicts,
            "superseded": sorted(superseded),
        }
    }


def _local(c: Candidate, matched: bool) -> Pick:
    usage = UsageRow.of(c.row)
    if matched:
        reasoning = f"{c.reasoning()}; relevance {c.relevance():.2f}"
    else:
        reasoning = f"among the most confident in tier {c.tier}; confidence {c.confidence:.2f}"
    return Pick(
        c.learning_id,
        c.tier,
        c.score,
        c.relevance() if matched else 0.0,
        c.confidence,
        usage.times_injected == 0,
        usage.times_contradicted > usage.times_helpful,
        reasoning,
        lambda: learning_wire(c.row, c.tier),
    )


def _offered(o: OfferedLearning) -> Pick:
    usage = o.learning.usage
    return Pick(
        o.learning.id,
        o.learning.tier,
        o.score,
        o.relevance,
        o.learning.confidence,
        usage.times_injected == 0,
        usage.times_contradicted > usage.times_helpful,
        o.reasoning,
        o.learning.model_dump,
    )


def _most_confident(derived: Derived, read: dict[str, Tier]) -> list[Candidate]:
    """Without a task: the most confident learnings of each tier read, superseded and archived ones left out.

    Only (id, confidence) pairs are read and ranked here; sorting whole joined rows in CozoDB took ≈ 60 ms
    per 5k learnings. The chosen few come from the row cache.
    """
    found = []
    for name, tier in read.items():
        pairs = tier.run("?[id, confidence] := *learning{id, confidence}")
        hidden = derived.archive.archived(name, [lid for lid, _ in pairs])
        ranked = heapq.nlargest(POOL + len(hidden), pairs, key=lambda pair: pair[1])
        best = [lid for lid, _ in ranked if lid not in hidden][:POOL]
        rows = stored_rows(derived, tier, best)
        found += [
            Candidate(lid, name, row=rows[lid], score=joined(rows[lid], "confidence")) for lid in best if lid in rows
        ]
    superseded = derived.supersessions.superseded(list(read), [c.learning_id for c in found])
    return [c for c in found if c.learning_id not in superseded]
