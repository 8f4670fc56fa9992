"""What derived data learns from each commit (`DerivedChanges`, which the writer fills per tier before the acks),
what waits for an embedding (`Pending`), and how the embedding pool hands vectors back (`StoreVectors`): the
shapes `derived.py`, the embedding pool and the write path share.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from groove.coordinator.store.records import VectorBlob


@dataclass(slots=True)
class DerivedChanges:
    """What derived data must learn from a commit (the writer reports it per tier, before the acks)."""

    texts: list[tuple[str, str]]  # learnings put: (id, text to embed)
    words: list[tuple[str, str]]  # ... and their texts as the keyword index takes them (`lexical.index_text`)
    vectors: list[tuple[str, VectorBlob]]  # vectors stored
    deleted: list[str]  # learnings gone
    stale: list[str]  # learnings whose stored vector was dropped because their text changed
    touched: list[str]  # learnings whose stored row or usage changed (or that are gone)
    archived: list[str]  # learnings archived by this commit
    unarchived: list[str]  # learnings restored (or purged) by it
    supersedes_put: list[tuple[str, str]]  # (from_id, to_id) of supersedes relations stored
    supersedes_gone: list[tuple[str, str]]  # ... and removed
    notes: list[dict[str, Any]]  # working-memory notes recorded (memory.note), as stored
    note_vectors: list[tuple[str, VectorBlob]]  # vectors of notes stored
    tasks: list[tuple[str, VectorBlob]] = field(default_factory=list)  # (injection id, its task's vector) stored
    ratings: list[tuple[str, str, str, int]] = field(default_factory=list)  # outcome_log: (id, outcome, injection, at)
    seq: int = 0  # the commit's entry in its tier's derived log (`store/journal.py`); 0: none


@dataclass(slots=True)
class Pending:
    """A learning (or a working memory's note) waiting for its embedding."""

    tier: str
    learning_id: str
    text: str
    note: bool = False
    queued_at: float = 0.0  # monotonic: how long the oldest has waited


# Receives (tier, [(id, vector)], whether the ids are notes) and commits it through the batcher; False if the
# write queue is full.
StoreVectors = Callable[[str, list[tuple[str, VectorBlob]], bool], bool]
