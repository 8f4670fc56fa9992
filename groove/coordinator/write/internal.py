"""The coordinator's own writes, queued through the batcher like any client's so that each relation keeps one
writer: the vectors the embedding pool computed, and the related_to relations the near-duplicate thread found.
No client waits for them, and their request ids are not recorded."""

from __future__ import annotations

import itertools
import time
from operator import itemgetter

from groove.coordinator.store.records import VectorBlob
from groove.coordinator.write.batcher import Batcher
from groove.coordinator.write.bodies import StoreRelated, StoreVectors
from groove.coordinator.write.ops import STORE_RELATED, STORE_VECTORS, WriteItem
from groove.protocol.ids import uuid7

_RELATED_CHUNK = 256  # near-duplicate pairs to a write: one commit's worth, not one write each as before
# A client's write taken this recently: clients are writing, though too few to queue a quarter of a batch
_CLIENTS_RECENT_S = 0.1


def store_vectors(batcher: Batcher, tier: str, rows: list[tuple[str, VectorBlob]], notes: bool) -> bool:
    """Queue vectors for a tier's learnings (or notes); False when the write queue is full."""
    # built, not validated: the embedding pool made these rows (validating 384 floats a row cost its thread ms)
    body = StoreVectors.model_construct(tier=tier, rows=rows, notes=notes)
    return batcher.submit(WriteItem(uuid7(), STORE_VECTORS, body, internal=True))


def writer_busy(batcher: Batcher) -> bool:
    """Whether clients are writing: a quarter of a batch of writes is queued, or the writer took a client's write
    a moment ago. Derived writes then wait their turn (mostly: the embedding pool still stores a little, so that
    vectors never starve)."""
    recent = time.monotonic() - batcher.client_at < _CLIENTS_RECENT_S
    return recent or batcher.depth() >= max(1, batcher.max_batch // 4)


def relate(batcher: Batcher, pairs: list[tuple[str, str, str, float]]) -> int:
    """Queue a related_to relation for each (tier, newer, older, cosine) pair, in tier order, up to _RELATED_CHUNK of a
    tier's to a write; returns how many pairs, from the first, were queued before the write queue filled."""
    queued = 0
    while queued < len(pairs):
        tier, same_tier = next(itertools.groupby(pairs[queued : queued + _RELATED_CHUNK], key=itemgetter(0)))
        chunk = list(same_tier)
        # built, not validated: the near-duplicate thread made these pairs from ids it read in the index
        body = StoreRelated.model_construct(tier=tier, pairs=[(new, old, min(1.0, s)) for _, new, old, s in chunk])
        if not batcher.submit(WriteItem(uuid7(), STORE_RELATED, body, internal=True)):
            return queued
        queued += len(chunk)
    return queued
