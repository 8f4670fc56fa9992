"""Derived indexes checkpointed while serving, loaded at the next start and brought up to date from the tier's
derived log, crash or not.

A start used to rebuild every tier's keyword entries and vectors from CozoDB after a crash: at 100,000 learnings a
restarted coordinator found every learning again after 19 s and settled its graph after 35, at 300,000 after 55 and
127 s. Now a checkpoint (`checkpoint`: every few minutes, or after a few thousand learnings changed, and at a clean
stop) saves each tier's vector index into a new folder of `VECTOR_DIR` and its count and content hashes
(`Tier.save_counts`), syncs the keyword file (`KeywordIndex.mark`), and only then records their tokens in the
tier, each with the last entry of the tier's derived log it holds for certain (`store/journal.py`). A tier that
opens loads what its tokens name and reads again the learnings of the log entries past them (`catch_up`); an index
whose token names nothing whole (damaged, missing, a folder another data dir's) is rebuilt from the source.

Nothing is served from an index that does not hold what its tier holds: every commit that changes a learning's
derived data writes its log entry in the same transaction, and an entry goes only once a checkpoint holding it is
recorded. A checkpoint saves while writes go on, so what it saves may hold changes past its `through`; reading such
a learning again only makes its entry what it already is.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager

from groove.coordinator.errors import DamagedIndex
from groove.coordinator.search.embedder import embedding_text
from groove.coordinator.search.keywords import KeywordIndex
from groove.coordinator.search.vectors import VectorIndex
from groove.coordinator.store import journal, kept
from groove.coordinator.store.records import blob_vectors
from groove.coordinator.store.tiers import COUNTS, COUNTS_DIR, Tier
from groove.protocol.ids import now_ms

log = logging.getLogger(__name__)

KEYWORDS, VECTORS = "keywords", "vectors"  # the names of a tier's saved indexes
VECTOR_DIR = "derived-vectors"  # in a tier's directory, beside its database: one folder per checkpoint
_READ_CHUNK = 4096  # learnings read again per query while catching up

Held = Callable[[], AbstractContextManager[None]]  # every writer held: no commit runs inside


class Ledger:
    """Per tier, what checkpoints go by: the last log entry its indexes hold, the one the last checkpoint recorded
    them through (-1: none yet), learnings changed since, when it was last checkpointed (monotonic), and how many
    times it was loaded (a checkpoint that a load overtakes is not recorded)."""

    def __init__(self) -> None:
        self.journaled: dict[str, int] = {}
        self.checkpointed: dict[str, int] = {}
        self.unsaved: dict[str, int] = {}
        self.at: dict[str, float] = {}
        self.loads: dict[str, int] = {}

    def loading(self, name: str, seq: int) -> None:
        """A tier starts loading; its indexes will hold its log through `seq` (nothing writes an opening tier)."""
        self.loads[name] = self.loads.get(name, 0) + 1
        self.journaled[name] = seq

    def loaded(self, name: str, checkpointed: int, caught: int) -> None:
        """It loaded: as a checkpoint through `checkpointed` saved it, with `caught` learnings read again since."""
        self.checkpointed[name], self.unsaved[name], self.at[name] = checkpointed, caught, time.monotonic()

    def committed(self, name: str, seq: int, touched: int) -> None:
        """Its indexes took log entry `seq`, which changed `touched` learnings."""
        self.journaled[name] = max(self.journaled.get(name, 0), seq)
        self.unsaved[name] = self.unsaved.get(name, 0) + touched

    def due(self, names: list[str], now: float, every_s: float, changed: int) -> list[str]:
        """Those of these tiers with learnings changed since their last checkpoint, once `changed` of them have or
        `every_s` has passed (0: any change)."""
        return [
            name
            for name in names
            if self.journaled.get(name, 0) > self.checkpointed.get(name, -1)
            and (self.unsaved.get(name, 0) >= changed or now - self.at.get(name, 0.0) >= every_s)
        ]

    def saved(self, name: str, through: int, changed: int, whole: bool) -> None:
        """A checkpoint of it ended, recording every index through `through` if `whole`; `changed` learnings had
        changed when it began."""
        self.at[name] = time.monotonic()
        if whole:
            self.checkpointed[name] = through
            self.unsaved[name] = max(0, self.unsaved.get(name, 0) - changed)


def load_vectors(tier: Tier, saved: tuple[str, int] | None, exact_limit: int) -> VectorIndex | None:
    """The vector index a checkpoint saved for the tier, or None (then it is rebuilt)."""
    parent = tier.path / VECTOR_DIR
    token = saved[0] if saved is not None else None
    try:
        # checkpoints a crash interrupted, and older ones; never the one the tier records (a reindex takes none)
        kept.prune(parent, tier.recorded.get(VECTORS, ("", 0))[0])
        folder = kept.folder(parent, token)
        return None if folder is None else VectorIndex.load(folder, exact_limit)
    except (OSError, ValueError, RuntimeError, DamagedIndex) as exc:  # numpy: ValueError; usearch: RuntimeError
        log.warning("tier %s: its saved vectors cannot be loaded (%s); rebuilding them", tier.name, exc)
        return None


def how_loaded(words: bool, vectors: bool, caught: int) -> str:
    """What `stats.index_loads` says of a tier opened: which of its indexes were kept from the last checkpoint, and
    how many learnings were read again from its log."""
    again = f", {caught:,} read again" if caught else ""
    if words and vectors:
        return "kept" + again
    if words or vectors:
        return f"{'keywords' if words else 'vectors'} kept, {'vectors' if words else 'keywords'} rebuilt" + again
    return "rebuilt"


def catch_up(
    tier: Tier, through: int, keywords: KeywordIndex | None, index: VectorIndex | None
) -> tuple[int, list[tuple[str, str]]]:
    """Make what the loaded indexes hold of each learning the log touched past `through` what the tier holds now
    (`keywords` and `index`: those loaded, None for one rebuilt). Returns how many learnings were read again, and
    those of them with no vector (to embed)."""
    ids, _ = journal.since(tier.run, through)
    unembedded: list[tuple[str, str]] = []
    for start in range(0, len(ids), _READ_CHUNK):
        chunk = ids[start : start + _READ_CHUNK]
        rows = tier.run("?[id, d, i] := id in $ids, *learning{id, description: d, insight: i}", {"ids": chunk})
        texts = {lid: embedding_text(d, i) for lid, d, i in rows}
        if keywords is not None:
            keywords.remove(chunk)
            keywords.upsert(tier.name, list(texts.items()))
        if index is None:
            continue
        stored = tier.run(
            "?[id, v] := id in $ids, *learning_embeddings{learning_id: id, embedding: v}", {"ids": list(texts)}
        )
        vectored = {row[0] for row in stored}
        index.remove([lid for lid in chunk if lid not in vectored])
        if stored:
            index.upsert([lid for lid, _ in stored], blob_vectors([v for _, v in stored]), later=True)
        unembedded += [(lid, text) for lid, text in texts.items() if lid not in vectored]
    return len(ids), unembedded


def checkpoint(
    tiers: list[Tier],
    through: dict[str, int],
    vectors: dict[str, VectorIndex],
    keywords: KeywordIndex,
    held: Held,
    current: Callable[[str], bool],
    build_wait_s: float = 0.0,
) -> set[str]:
    """Save these tiers' derived indexes and record them in each tier; `through[tier]` is the last log entry that
    derived data has taken in (read before anything is saved). A tier is recorded only if `current` still says so
    once all is saved (it was not loaded again meanwhile). Returns the tiers whose every index was recorded; what
    cannot be saved now keeps its last checkpoint (and the log entries past it). A graph still being built after
    `build_wait_s` is not saved."""
    started = time.monotonic()
    with held():  # the counts are the writer's: read between its commits
        counts = {tier.name: tier.counts_now() for tier in tiers}
    saved: dict[str, journal.Saved] = {tier.name: {} for tier in tiers}
    for tier in tiers:
        index = vectors.get(tier.name)
        if index is not None and index.wait_built(max(0.0, started + build_wait_s - time.monotonic())):
            try:
                saved[tier.name][VECTORS] = (kept.write_folder(tier.path / VECTOR_DIR, index.save), through[tier.name])
            except Exception as exc:  # derived data: the last checkpoint's stays, with the log past it
                log.warning("tier %s: its vectors cannot be saved (%s); kept as last checkpointed", tier.name, exc)
        try:
            saved[tier.name][COUNTS] = tier.save_counts(counts[tier.name])
        except Exception as exc:  # as the vectors
            log.warning("tier %s: its counts cannot be saved (%s); kept as last checkpointed", tier.name, exc)
    for name, token in keywords.mark([tier.name for tier in tiers]).items():
        saved[name][KEYWORDS] = (token, through[name])
    whole: set[str] = set()
    with held():
        for tier in tiers:
            if not current(tier.name):
                continue
            try:
                tier.recorded = journal.record(tier.run, tier.recorded, saved[tier.name], now_ms())
            except Exception as exc:  # pycozo raises bare exceptions; the last checkpoint stays
                log.warning("tier %s: its checkpoint cannot be recorded (%s)", tier.name, exc)
                continue
            needed = (
                {COUNTS}
                | ({VECTORS} if tier.name in vectors else set())
                | ({KEYWORDS} if keywords.holds(tier.name) else set())
            )
            if needed <= set(saved[tier.name]):
                whole.add(tier.name)
    for tier in tiers:  # the folders no token names any more
        kept.prune(tier.path / VECTOR_DIR, tier.recorded.get(VECTORS, (None, 0))[0])
        kept.prune(tier.path / COUNTS_DIR, tier.recorded.get(COUNTS, (None, 0))[0])
    log.info("checkpointed the derived indexes of %d tiers in %.0f ms", len(tiers), (time.monotonic() - started) * 1000)
    return whole
