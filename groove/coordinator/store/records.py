"""Stored learning rows and their wire shapes, derived from the declarations in `relations.py`.

The usage update here is seed 000's `UsageStats::record_outcome`, applied to stored rows.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from groove.coordinator.store.relations import JOINED_AT, LEARNING, USAGE
from groove.protocol import constants as C
from groove.protocol.models import LearningIn
from groove.protocol.portability import ExportedLearning

_USAGE_AT = len(LEARNING.cols)  # where the usage values start in a joined row

# A stored embedding: its float32 components, little-endian, as one `Bytes` value (see EMBEDDINGS in relations.py)
VectorBlob = bytes
_VECTOR_DTYPE = np.dtype("<f4")


def vector_blob(vector: npt.ArrayLike) -> VectorBlob:
    """One vector as it is stored."""
    return np.asarray(vector, dtype=_VECTOR_DTYPE).tobytes()


def blob_vectors(blobs: list[VectorBlob], dim: int = C.EMBEDDING_DIM) -> npt.NDArray[np.float32]:
    """Stored vectors as the rows of one float32 matrix."""
    # no copy where float32 is little-endian already (the indexes copy the rows into their own matrix)
    return np.frombuffer(b"".join(blobs), dtype=_VECTOR_DTYPE).reshape(len(blobs), dim).astype(np.float32, copy=False)


@functools.lru_cache(maxsize=4096)  # a batch asks twice per learning: what to look up, then while applying
def content_hash(description: str, insight: str) -> str:
    """What makes two learnings the same content: their description and insight, case and spacing aside."""
    normal = "\n".join(" ".join(text.lower().split()) for text in (description, insight))
    return hashlib.sha256(normal.encode()).hexdigest()


@dataclass(slots=True)
class UsageRow:
    """A mutable usage_stats row; its fields are the relation's value columns, in order."""

    times_injected: int
    times_helpful: int
    times_ignored: int
    times_contradicted: int
    last_used: int | None
    confidence_alpha: float
    confidence_beta: float

    @classmethod
    def prior(cls, confidence: float) -> UsageRow:
        """A new learning's stats: PRIOR_STRENGTH pseudo-observations split so alpha/(alpha+beta) = confidence."""
        return cls(0, 0, 0, 0, None, C.PRIOR_STRENGTH * confidence, C.PRIOR_STRENGTH * (1.0 - confidence))

    @classmethod
    def of(cls, joined: list[Any]) -> UsageRow:
        """The usage part of a joined learning row."""
        return cls(*joined[_USAGE_AT:])

    def record_outcome(self, outcome: str, now: int, injected: bool = False) -> None:
        """Seed 000 `UsageStats::record_outcome`, step for step.

        `injected`: the learning was given to the session by `inject.prepare`, which counted the injection
        already, so it is not counted twice.
        """
        if not injected:
            self.times_injected += 1
        self.last_used = now
        if outcome == C.OUTCOME_HELPFUL:
            self.times_helpful += 1
            self.confidence_alpha += C.HELPFUL_ALPHA_STEP
        elif outcome == C.OUTCOME_IGNORED:
            self.times_ignored += 1
            self.confidence_beta += C.IGNORED_BETA_STEP
        else:
            self.times_contradicted += 1
            self.confidence_beta += C.CONTRADICTED_BETA_STEP

    def reinforce(self) -> None:
        """The same content was learned again (seed 003's reinforcement upsert, as Beta evidence)."""
        self.confidence_alpha += C.REINFORCE_ALPHA_STEP

    def demote(self) -> None:
        """A newer learning superseded this one."""
        self.confidence_beta += C.SUPERSEDED_BETA_STEP

    def decay(self, factor: float) -> None:
        """Forget evidence: alpha and beta shrink toward the uniform prior (1, 1) by `factor`."""
        self.confidence_alpha = 1.0 + (self.confidence_alpha - 1.0) * factor
        self.confidence_beta = 1.0 + (self.confidence_beta - 1.0) * factor

    def touch(self, now: int) -> None:
        """Count as used now (a restored learning starts a fresh idle period)."""
        self.last_used = now

    def inject(self, now: int) -> None:
        """`inject.prepare` gave this learning to a session."""
        self.times_injected += 1
        self.last_used = now

    @property
    def confidence(self) -> float:
        """alpha / (alpha + beta); the prior guarantees the sum is positive."""
        return self.confidence_alpha / (self.confidence_alpha + self.confidence_beta)

    def row(self, learning_id: str) -> list[Any]:
        """The stored usage_stats row."""
        return [learning_id, *_usage_values(self)]


# UsageRow is built from and written as the relation's value columns: they must be the same, in order.
if tuple(f.name for f in fields(UsageRow)) != USAGE.values:
    raise TypeError(f"UsageRow's fields must be {USAGE.name}'s value columns {USAGE.values}")
_usage_values = attrgetter(*USAGE.values)  # one call for every field (dataclasses.astuple deep-copies: 7x slower)


def learning_row(
    item: LearningIn | ExportedLearning, learning_id: str, confidence: float, created_at: int, now: int
) -> list[Any]:
    """A stored learning row (from a client's learning, or an imported one)."""
    wire = {
        "id": learning_id,
        "scope": item.scope,
        "category": item.category,
        "description": item.description,
        "pattern": item.pattern,
        "insight": item.insight,
        "confidence": confidence,
        "created_at": created_at,
        "updated_at": now,
        "source": item.source,
    }
    return LEARNING.row(wire)


def learning_wire(row: list[Any], tier: str) -> dict[str, Any]:
    """A joined learning+usage row (`relations.JOINED_COLS`) as the wire's learning map."""
    wire = LEARNING.wire(row[:_USAGE_AT])
    wire["tier"] = tier
    wire["usage"] = dict(zip(USAGE.values, row[_USAGE_AT:], strict=True))
    return wire


def joined(row: list[Any], column: str) -> Any:
    """One column of a joined learning+usage row, by name."""
    return row[JOINED_AT[column]]
