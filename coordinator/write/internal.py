"""The coordinator's own writes, queued through the batcher like any client's so that each relation keeps one
writer: the vectors the embedding pool computed, and the related_to relations the near-duplicate thread found.
No client waits for them, and their request ids are not recorded."""

from __future__ import annotations

import time

from coordinator.store.records import VectorBlob
from coordinator.write.batcher import Batcher
from coordinator.write.ops import RELATION, STORE_VECTORS, WriteItem
from coordinator.write.planning import StoreVectors
from protocol import constants as C
from protocol.ids import uuid7
from protocol.models import RelationPutRequest


def store_vectors(batcher: Batcher, tier: str, rows: list[tuple[str, VectorBlob]], notes: bool) -> bool:
    """Queue vectors for a tier's learnings (or notes); False when the write queue is full."""
    # built, not validated: the embedding pool made these rows (validating 384 floats a row cost its thread ms)
    body = StoreVectors.model_construct(tier=tier, rows=rows, notes=notes)
    return batcher.submit(WriteItem(uuid7(), STORE_VECTORS, body, internal=True))


# A client's write taken this recently: clients are writing, though too few to queue a quarter of a batch
_CLIENTS_RECENT_S = 0.1


def writer_busy(batcher: Batcher) -> bool:
    """Whether clients are writing: a quarter of a batch of writes is queued, or the writer took a client's write
    a moment ago. Derived writes then wait their turn (mostly: the embedding pool still stores a little, so that
    vectors never starve)."""
    recent = time.monotonic() - batcher.client_at < _CLIENTS_RECENT_S
    return recent or batcher.queue.qsize() >= max(1, batcher.max_batch // 4)


def relate(batcher: Batcher, pairs: list[tuple[str, str, float]]) -> int:
    """Queue a related_to relation for each (newer, older, cosine) pair; returns how many were queued before the
    write queue filled."""
    for queued, (newer, older, score) in enumerate(pairs):
        body = RelationPutRequest(
            from_id=newer, relation_type=C.RELATION_RELATED_TO, to_id=older, weight=min(1.0, score)
        )
        if not batcher.submit(WriteItem(uuid7(), RELATION, body, internal=True)):
            return queued
    return len(pairs)
