"""The `search` operation: semantic and keyword candidates fused, weighed by confidence, filtered,
optionally expanded over relations, each result with a line saying why it is there.

Ranking. Candidates come from the vector index (cosine similarity) and the keyword index (BM25), each cut to
a pool of `max(50, 5 * limit)`; every candidate is scored by both (its cosine, and how it holds the query's
words) and gets one relevance (fusion.py, chosen and measured by benchmarks/relevance.py). The score is the
relevance times `0.8 + 0.4 * confidence`: proven learnings rise, never past a clearly more relevant one.
Only the tiers the context allows are read.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from groove.coordinator.errors import EmbeddingUnavailable
from groove.coordinator.search import votes
from groove.coordinator.search.derived import Derived
from groove.coordinator.search.embedder import Vectors, normalise
from groove.coordinator.search.fusion import SEMANTIC_FLOOR, pool, relevance
from groove.coordinator.search.wordquery import WordMatch
from groove.coordinator.store.records import learning_wire
from groove.coordinator.store.relations import JOINED_AT, JOINED_BODY, JOINED_HEAD, NOTES
from groove.coordinator.store.tiers import Tier
from groove.coordinator.store.tierset import TierSet
from groove.protocol import constants as C
from groove.protocol.ids import now_ms
from groove.protocol.search import SearchRequest

_HOP_DECAY = 0.5


@dataclass
class Candidate:
    """One learning on its way to the results."""

    learning_id: str
    tier: str
    semantic: float | None = None  # cosine similarity to the query
    words: WordMatch | None = None  # how it holds the query's words
    votes: float = 0.0  # past tasks near the query that it helped (+) or failed (-), weighed (votes.py)
    via: str | None = None  # "related_to from <id>" for learnings reached by expansion
    score: float = 0.0
    row: list[Any] = field(default_factory=list)  # the stored row (JOINED_HEAD order), decoded only if returned

    @property
    def confidence(self) -> float:
        """The learning's stored confidence."""
        value: float = self.row[JOINED_AT["confidence"]]
        return value

    def relevance(self) -> float:
        """Cosine plus the words' part (the words' coverage alone for a learning without a vector), plus the
        outcome votes' part."""
        voted = votes.part(self.votes) if self.votes else 0.0
        if self.words is None:
            return relevance(self.semantic, 0.0, 0.0, False) + voted
        return relevance(self.semantic, self.words.strength, self.words.coverage, self.words.specific) + voted

    def reasoning(self) -> str:
        """One short line: each signal's part in its relevance."""
        parts = []
        if self.semantic is not None:
            parts.append(f"semantic {self.semantic:.2f}")
        if self.words is not None:
            held = ", ".join(f"'{w}'" for w in self.words.matched[:3])
            part = self.relevance() if self.semantic is None else self.words.part()
            parts.append(f"words +{part:.2f} ({held})" if held else f"words +{part:.2f}")
        if self.votes:
            parts.append(f"outcomes {votes.part(self.votes):+.2f}")
        line = ", ".join(parts)
        if self.via is not None:
            line = f"{line}; via {self.via}" if line else f"via {self.via}"
        return f"{line}; confidence {self.confidence:.2f}"


def search(tiers: TierSet, derived: Derived, body: SearchRequest) -> dict[str, Any]:
    """The `search` reply body."""
    found = find(tiers, derived, body)
    by_meaning = body.mode != "keyword"
    return {
        "results": [
            {"learning": learning_wire(c.row, c.tier), "score": c.score, "tier": c.tier, "reasoning": c.reasoning()}
            for c in found
        ],
        # asked by meaning, found by words alone: the learning (or the query) had no vector yet
        "words_only": sum(1 for c in found if by_meaning and c.semantic is None and c.via is None),
    }


def search_notes(tier: Tier, derived: Derived, body: SearchRequest, now: int) -> dict[str, Any]:
    """The `search` reply body for a search of a working memory's notes (`body.memory_id`, held by `tier`)."""
    hits = derived.notes.find(body, _query_vector(derived, body), now)
    rows = {}
    if hits:
        read = tier.run(NOTES.by_keys("ids"), {"ids": [h.note_id for h in hits]})
        rows = {row[0]: NOTES.wire(row) for row in read}
    return {
        "results": [],
        "notes": [
            {"note": rows[h.note_id], "score": h.score(), "reasoning": h.reasoning()} for h in hits if h.note_id in rows
        ],
    }


def find(tiers: TierSet, derived: Derived, body: SearchRequest, only: Collection[str] | None = None) -> list[Candidate]:
    """The best candidates for a search, scored, with their stored rows, best first; `only`: of the context's
    tiers, read just these (the others are another coordinator's)."""
    names = [n for n in body.context.tiers() if only is None or n in only]
    read = [t for name in names if (t := tiers.get(name, create=False)) is not None]
    by_name = {t.name: t for t in read}
    wanted = pool(body.limit)
    found: dict[str, Candidate] = {}
    query = _query_vector(derived, body)
    semantic = query is not None and body.mode != "keyword"
    if semantic:
        assert query is not None
        hits = [
            (lid, score, t.name)
            for t in read
            if t.name in derived.vectors
            for lid, score in derived.vectors[t.name].search(query, wanted)
            if score >= SEMANTIC_FLOOR
        ]
        hits.sort(key=lambda h: -h[1])
        for lid, score, tier in hits[:wanted]:
            found[lid] = Candidate(lid, tier, semantic=score)
        # what helped (or was contradicted in) past tasks near this one, offered by neither index or by both
        for lid, (tier, total) in derived.votes.for_query(list(by_name), query, now_ms()).items():
            if lid not in found:
                index = derived.vectors.get(tier)
                found[lid] = Candidate(lid, tier, semantic=index.similarity(lid, query) if index is not None else None)
            found[lid].votes = total
    # Keywords run in hybrid and keyword mode, and stand in for semantic search when no vector is to be had.
    if body.text is not None and (body.mode != "semantic" or query is None):
        # one pass finds the keyword pool and how the candidates found otherwise hold the words
        for match in derived.keywords.search(body.text, list(by_name), wanted, also=list(found)):
            candidate = found.get(match.lid)
            if candidate is None:
                candidate = found[match.lid] = Candidate(match.lid, match.tier)
                index = derived.vectors.get(match.tier)
                if semantic and index is not None:
                    # outside the semantic pool but embedded: its own cosine, not the keyword-only rule
                    candidate.semantic = index.similarity(match.lid, query) if query is not None else None
            candidate.words = match
    results = _best(derived, by_name, body, list(found.values()))
    if body.depth:
        results += _expand(tiers, derived, by_name, body, results, {c.learning_id for c in found.values()})
        results.sort(key=_order)
        results = results[: body.limit]
    return results


def _order(c: Candidate) -> tuple[float, str]:
    """Best score first; equal scores by id, so that results merged from several coordinators, each scored
    alike, come in the order one coordinator holding every tier gives them."""
    return -c.score, c.learning_id


def _query_vector(derived: Derived, body: SearchRequest) -> Vectors | None:
    if body.vector is not None:
        given: Vectors = normalise(body.vector)[0]
        return given
    embedder = derived.embedder
    if body.text is None or body.mode == "keyword":
        return None
    known, ready = derived.queries.get(body.text)  # embedded as the request arrived (queries.py)
    if known or embedder is None:
        return ready
    started = time.monotonic()
    try:
        vector: Vectors = embedder.encode([body.text])[0]
    except EmbeddingUnavailable:  # its worker died, or none answered in time: words stand in
        return None
    finally:
        derived.queries.waited((time.monotonic() - started) * 1000)
    derived.queries.put(body.text, vector)
    return vector


def _best(
    derived: Derived, by_name: dict[str, Tier], body: SearchRequest, candidates: list[Candidate]
) -> list[Candidate]:
    """The `limit` best admitted candidates by score.

    Rows are fetched most relevant first, a few at a time: confidence scales a relevance by 0.8 to 1.2, so
    once the limit is filled and the next candidate's relevance times 1.2 cannot beat the weakest score
    kept, no later candidate can either, and the rest are never read.
    """
    candidates.sort(key=lambda c: -c.relevance())
    kept: list[Candidate] = []
    step = 2 * body.limit + 8
    for start in range(0, len(candidates), step):
        if len(kept) >= body.limit and candidates[start].relevance() * 1.2 <= kept[body.limit - 1].score:
            break
        for c in _admit(derived, by_name, body, candidates[start : start + step]):
            c.score = c.relevance() * (0.8 + 0.4 * c.confidence)
            kept.append(c)
        kept.sort(key=_order)
    return kept[: body.limit]


def _admit(
    derived: Derived, by_name: dict[str, Tier], body: SearchRequest, candidates: list[Candidate]
) -> list[Candidate]:
    """The candidates that exist and pass the filters, with their stored rows filled in."""
    admitted = []
    for tier_name, tier in by_name.items():
        mine = {c.learning_id: c for c in candidates if c.tier == tier_name}
        if not mine:
            continue
        rows = stored_rows(derived, tier, list(mine))
        hidden = set() if body.include_archived else derived.archive.archived(tier_name, list(rows))
        for lid, row in rows.items():
            if lid not in hidden and _passes(body, row):
                candidate = mine[lid]
                candidate.row = row
                admitted.append(candidate)
    if not body.include_superseded and admitted:
        # a supersedes relation lives in the tier of the newer learning: any tier read may hold one
        superseded = derived.supersessions.superseded(list(by_name), [c.learning_id for c in admitted])
        admitted = [c for c in admitted if c.learning_id not in superseded]
    return admitted


def stored_rows(derived: Derived, tier: Tier, ids: list[str]) -> dict[str, list[Any]]:
    """The joined rows (JOINED_HEAD order) of those of these learnings that exist: cached, else read."""
    rows = derived.rows.get(tier.name, ids)
    missing = [lid for lid in ids if lid not in rows]
    if missing:
        stamp = derived.rows.stamp()
        read = tier.run(f"?[{JOINED_HEAD}] := id in $ids, {JOINED_BODY}", {"ids": missing})
        derived.rows.fill(tier.name, read, stamp)
        rows.update((row[0], row) for row in read)
    return rows


def _passes(body: SearchRequest, row: list[Any]) -> bool:
    if body.scope_prefix is not None and not row[JOINED_AT["scope"]].startswith(body.scope_prefix):
        return False
    if body.category is not None and row[JOINED_AT["category"]] != body.category:
        return False
    created_at = row[JOINED_AT["created_at"]]
    if body.since is not None and created_at < body.since:
        return False
    if body.until is not None and created_at > body.until:
        return False
    return body.min_confidence is None or row[JOINED_AT["confidence"]] >= body.min_confidence


def _expand(
    tiers: TierSet,
    derived: Derived,
    by_name: dict[str, Tier],
    body: SearchRequest,
    hits: list[Candidate],
    seen: set[str],
) -> list[Candidate]:
    """Learnings up to `depth` hops from the hits over related_to, derived_from and specializes, either way."""
    added: list[Candidate] = []
    frontier = list(hits)
    seen = seen | {c.learning_id for c in hits}
    types = list(C.EXPANSION_RELATIONS)
    for _ in range(body.depth):
        if not frontier:
            break
        parents = {c.learning_id: c for c in frontier}
        links: dict[str, tuple[str, str]] = {}  # reached id -> (parent id, relation)
        reached: dict[str, Candidate] = {}
        for tier in by_name.values():
            rows = tier.run(
                "?[a, t, b] := a in $ids, t in $types, "
                "*learning_relations{from_id: a, relation_type: t, to_id: b}\n"
                "?[a, t, b] := a in $ids, t in $types, "
                "*learning_relations:by_to{to_id: a, from_id: b, relation_type: t}",
                {"ids": list(parents), "types": types},
            )
            for parent_id, relation, other in rows:
                if other not in seen:
                    links.setdefault(other, (parent_id, relation))
        # where each reached learning lives, in one lookup; those outside the context's tiers are left out
        for other, tier in tiers.locate_open(list(links)).items():
            if tier.name in by_name:
                parent_id, relation = links[other]
                reached[other] = Candidate(
                    other, tier.name, via=f"{relation} from {parent_id}", score=parents[parent_id].score * _HOP_DECAY
                )
        admitted = _admit(derived, by_name, body, list(reached.values()))
        seen |= set(reached)
        added += admitted
        frontier = admitted
    return added
