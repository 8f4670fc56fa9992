"""The bodies of the coordinator's own writes, which never come over the wire: vectors the embedding pool computed,
near-duplicate pairs it found, and an export file read on a reader thread on its way to the batcher.
"""

from __future__ import annotations

from pydantic import BaseModel

from groove.coordinator.store.records import VectorBlob
from groove.protocol.portability import ExportedTier


class StoreVectors(BaseModel):
    """Vectors computed by the embedding worker for learnings (or notes) of one tier (an internal write)."""

    tier: str
    rows: list[tuple[str, VectorBlob]]
    notes: bool = False


class StoreRelated(BaseModel):
    """Near-duplicate pairs the coordinator found among one tier's learnings (an internal write)."""

    tier: str
    pairs: list[tuple[str, str, float]]  # (newer, older, weight)


class ImportRecord(BaseModel):
    """An export file read and validated on a reader thread, on its way to the batcher (never on the wire)."""

    tiers: list[ExportedTier]
    embeds: bool  # whether the coordinator embeds what it stores (the reply counts what is queued)
