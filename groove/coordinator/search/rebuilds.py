"""`index.rebuild` and `embeddings.rebuild`: a tier's derived data made again from CozoDB, or every learning of
it queued for a new embedding (after a model change)."""

from __future__ import annotations

from typing import Any

from groove.coordinator.errors import Rejected
from groove.coordinator.search.derived import Derived
from groove.coordinator.store.tierset import TierSet
from groove.protocol.errors import ErrorCode
from groove.protocol.search import RebuildRequest


def rebuild_index(tiers: TierSet, derived: Derived, body: RebuildRequest) -> dict[str, Any]:
    """`index.rebuild`: rebuild keyword entries and vectors of the named tiers (default all) from CozoDB."""
    chosen = tiers.named(body.tiers)
    for tier in chosen:
        derived.load_tier(tier)
    return {"tiers": [t.name for t in chosen], "count": sum(len(derived.vectors[t.name]) for t in chosen)}


def reembed(tiers: TierSet, derived: Derived, body: RebuildRequest) -> dict[str, Any]:
    """`embeddings.rebuild`: queue every learning of the named tiers (default all) for a new embedding."""
    if not derived.embeddings:
        raise Rejected(ErrorCode.BAD_REQUEST, "this coordinator runs without an embedder (--embedder none)")
    chosen = tiers.named(body.tiers)
    return {"tiers": [t.name for t in chosen], "count": sum(derived.requeue(t) for t in chosen)}
