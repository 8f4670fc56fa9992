"""Derived indexes of working memories' notes (`memory.note`): per memory, its notes' vectors and words.

Notes are embedded like learnings: the embedding worker takes their texts from the same queue and stores the
vectors in `note_embeddings` through the batcher, and a tier's notes and vectors are reloaded when it opens.
A search names one memory, so each memory has its own small vector index (exact search: a memory holds
hundreds of notes, not millions) and its own label in the keyword index. Expired notes are dropped from the
indexes the first time a search meets them; their rows stay (`note.list` with `include_expired` shows them).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from groove.coordinator.search.embedder import Vectors
from groove.coordinator.search.fusion import SEMANTIC_FLOOR, pool, relevance
from groove.coordinator.search.keywords import KeywordIndex
from groove.coordinator.search.vectors import VectorIndex
from groove.coordinator.search.wordquery import WordMatch
from groove.coordinator.store.records import VectorBlob, blob_vectors
from groove.coordinator.store.relations import NOTE_EMBEDDINGS, NOTES
from groove.coordinator.store.tiers import Tier
from groove.protocol.search import SearchRequest

Wire = dict[str, Any]


@dataclass(frozen=True, slots=True)
class NoteMeta:
    """What a search filters a note by before reading its row."""

    memory_id: str
    tier: str
    created_at: int
    expires_at: int | None

    def expired(self, now: int) -> bool:
        """Whether the note has expired at `now`."""
        return self.expires_at is not None and self.expires_at <= now


@dataclass(slots=True)
class NoteMatch:
    """A note found by a search, before its row is read."""

    note_id: str
    semantic: float | None = None
    words: WordMatch | None = None

    def score(self) -> float:
        """Its relevance, fused as a learning's is (fusion.py)."""
        if self.words is None:
            return relevance(self.semantic, 0.0, 0.0, False)
        return relevance(self.semantic, self.words.strength, self.words.coverage, self.words.specific)

    def reasoning(self) -> str:
        """Each signal's part in its relevance."""
        parts = [] if self.semantic is None else [f"semantic {self.semantic:.2f}"]
        if self.words is not None:
            held = ", ".join(f"'{w}'" for w in self.words.matched[:3])
            part = self.score() if self.semantic is None else self.words.part()
            parts.append(f"words +{part:.2f} ({held})" if held else f"words +{part:.2f}")
        return ", ".join(parts)


class NoteIndex:
    """The notes of every open tier's working memories, by memory. Thread-safe."""

    def __init__(self) -> None:
        self.keywords = KeywordIndex()  # labelled by memory id, not by tier
        self._vectors: dict[str, VectorIndex] = {}  # memory id -> its notes' vectors
        self._meta: dict[str, NoteMeta] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._meta)

    def load_tier(self, tier: Tier) -> list[tuple[str, str]]:
        """Index a tier's stored notes and vectors afresh; returns the notes lacking a vector, as (id, text)."""
        with self._lock:
            gone = {m.memory_id for m in self._meta.values() if m.tier == tier.name}
            self._meta = {nid: m for nid, m in self._meta.items() if m.tier != tier.name}
            for memory_id in gone:
                self._vectors.pop(memory_id, None)
                self.keywords.drop_tier(memory_id)
        texts = dict(self.add(tier.name, [NOTES.wire(row) for row in tier.run(NOTES.scan())]))
        self.store([(nid, vector) for nid, vector in tier.run(NOTE_EMBEDDINGS.scan())])
        with self._lock:
            return [(nid, text) for nid, text in texts.items() if not self._has_vector(nid)]

    def add(self, tier: str, notes: list[Wire]) -> list[tuple[str, str]]:
        """Index committed notes by their words; returns (id, text) for the embedding queue."""
        by_memory: dict[str, list[tuple[str, str]]] = {}
        with self._lock:
            for note in notes:
                self._meta[note["id"]] = NoteMeta(note["memory_id"], tier, note["created_at"], note["expires_at"])
                by_memory.setdefault(note["memory_id"], []).append((note["id"], note["content"]))
        for memory_id, entries in by_memory.items():
            self.keywords.upsert(memory_id, entries)
        return [entry for entries in by_memory.values() for entry in entries]

    def store(self, rows: list[tuple[str, VectorBlob]]) -> None:
        """Vectors of notes (stored by the embedding worker, or loaded); unknown notes are ignored."""
        by_memory: dict[str, list[tuple[str, VectorBlob]]] = {}
        with self._lock:
            for nid, vector in rows:
                meta = self._meta.get(nid)
                if meta is not None:
                    by_memory.setdefault(meta.memory_id, []).append((nid, vector))
            for memory_id, found in by_memory.items():
                index = self._vectors.setdefault(memory_id, VectorIndex())
                index.upsert([nid for nid, _ in found], blob_vectors([v for _, v in found]))

    def _has_vector(self, note_id: str) -> bool:
        meta = self._meta.get(note_id)
        return meta is not None and note_id in self._vectors.get(meta.memory_id, ())

    def find(self, body: SearchRequest, query: Vectors | None, now: int) -> list[NoteMatch]:
        """The best live notes of `body.memory_id` for a search (by meaning with a query vector, by words with
        text), best first, at most `body.limit`. Notes found expired are dropped from the indexes."""
        assert body.memory_id is not None
        wanted = pool(body.limit)
        hits: dict[str, NoteMatch] = {}
        with self._lock:
            index = self._vectors.get(body.memory_id)
        if query is not None and index is not None:
            for nid, score in index.search(query, wanted):
                if score >= SEMANTIC_FLOOR:
                    hits[nid] = NoteMatch(nid, semantic=score)
        if body.text is not None and (body.mode != "semantic" or query is None):
            for match in self.keywords.search(body.text, [body.memory_id], wanted, also=list(hits)):
                hit = hits.get(match.lid)
                if hit is None:
                    cosine = index.similarity(match.lid, query) if index is not None and query is not None else None
                    hit = hits[match.lid] = NoteMatch(match.lid, semantic=cosine)
                hit.words = match
        with self._lock:
            metas = {nid: self._meta.get(nid) for nid in hits}
        expired = [nid for nid, meta in metas.items() if meta is None or meta.expired(now)]
        if expired:
            self.forget(expired)
        live = [
            hit
            for nid, hit in hits.items()
            if (meta := metas[nid]) is not None
            and not meta.expired(now)
            and (body.since is None or meta.created_at >= body.since)
            and (body.until is None or meta.created_at <= body.until)
            and hit.score() > 0
        ]
        return sorted(live, key=lambda h: (-h.score(), h.note_id))[: body.limit]

    def forget(self, note_ids: list[str]) -> None:
        """Drop notes from the indexes (expired ones: their rows stay)."""
        with self._lock:
            metas = [(nid, self._meta.pop(nid)) for nid in note_ids if nid in self._meta]
            for nid, meta in metas:
                index = self._vectors.get(meta.memory_id)
                if index is not None:
                    index.remove([nid])
        self.keywords.remove([nid for nid, _ in metas])
