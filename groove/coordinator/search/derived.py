"""Derived data: the keyword index, one vector index per tier, the notes' indexes, and the embedding queue that
feeds them.

CozoDB stays the source of truth. When a tier opens, its keyword entries and vectors are loaded as the last
checkpoint saved them and brought up to date from the tier's derived log (`saved.py`), else rebuilt from `learning`
and `learning_embeddings`; learnings without an embedding are queued for the worker. A thread checkpoints them while
serving (`checkpoints.py`). After
each batch the batcher reports what its commits changed (`after_batch`) before the acks go out: keyword entries
are staged, and written once the acks are out (`settle`) or by the next search, whichever comes first; new texts
go to the embedding queue, which the embedding pool (`embedpool.py`, worker processes) drains in batches, handing
the vectors back to the batcher as an internal write, so `learning_embeddings` keeps one writer. A failure here
never touches a source write: it only delays when a learning becomes findable by meaning.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from pathlib import Path

from groove.coordinator.metrics import summarize
from groove.coordinator.search import saved
from groove.coordinator.search.changes import DerivedChanges, Pending
from groove.coordinator.search.embedder import Embedder, embedding_text
from groove.coordinator.search.keywords import KeywordIndex
from groove.coordinator.search.neighbours import NearDuplicates
from groove.coordinator.search.notes import NoteIndex
from groove.coordinator.search.pages import learning_texts, pages
from groove.coordinator.search.queries import QueryVectors
from groove.coordinator.search.rowcache import Archive, RowCache, Supersessions
from groove.coordinator.search.vectors import VectorIndex, WorkCost
from groove.coordinator.search.votes import KEPT as VOTES_KEPT
from groove.coordinator.search.votes import Votes
from groove.coordinator.store.journal import Saved
from groove.coordinator.store.records import blob_vectors
from groove.coordinator.store.relations import JOINED_AT, JOINED_BODY, JOINED_HEAD
from groove.coordinator.store.tiers import Tier
from groove.protocol.constants import RELATION_SUPERSEDES

log = logging.getLogger(__name__)

_DESCRIPTION, _INSIGHT = JOINED_AT["description"], JOINED_AT["insight"]
_LAG_WINDOW = 2048
_PROGRESS_EVERY = 20_000  # vectors between progress lines while a large tier loads
# Learnings queued for embedding at most. Writes can outpace the model (≈ 250 texts/s here) for as long as
# they like: past this bound new entries are not queued, and once the queue drains the worker looks up the
# learnings still without a vector in CozoDB. Memory stays bounded and nothing is forgotten.
_QUEUE_LIMIT = 50_000
KEYWORD_FILE = "keywords.sqlite"  # in the data dir: the learnings' keyword index (kept by checkpoints)


class Derived:
    """Keyword and vector indexes of the open tiers, and the embedding queue."""

    def __init__(
        self,
        exact_limit: int,
        embeddings: bool,
        keyword_file: Path | None = None,
        row_cache: int = 100_000,
        votes_per_tier: int = VOTES_KEPT,
    ) -> None:
        self.keywords = KeywordIndex(keyword_file)  # in memory without a file (tools and tests)
        self.rows = RowCache(row_cache)
        self.vectors: dict[str, VectorIndex] = {}
        self.near = NearDuplicates(self.vectors)
        self.upsert_cost = WorkCost()  # seconds per vector put into a tier's index (a graph insert past the limit)
        self.supersessions = Supersessions()
        self.archive = Archive()
        self.notes = NoteIndex()
        self.embeddings = embeddings  # whether a worker will embed what is queued
        self.exact_limit = exact_limit
        self.embedder: Embedder | None = None  # for queries: the embedding pool, while a worker of it is ready
        self._queue: deque[Pending] = deque()
        self._ready = threading.Condition()
        self._lags: deque[float] = deque(maxlen=_LAG_WINDOW)
        self.queries = QueryVectors()  # query vectors computed before their reads, and the waits for them
        self.votes = Votes(votes_per_tier)  # past tasks' ratings, for the searches near them
        self._since: dict[str, float] = {}  # learning id -> commit time, while its vector is pending
        self.embedded = 0
        self._rate: deque[tuple[float, int]] = deque(maxlen=64)
        self._tiers: dict[str, Tier] = {}
        self._behind: set[str] = set()  # tiers with learnings left out of a full queue
        self.loads: dict[str, str] = {}  # tier -> how its indexes came to be at its opening (`stats.index_loads`)
        self._half: set[str] = set()  # tiers whose last load, or an update since, failed partway: never saved
        self.ledger = saved.Ledger()  # what checkpoints go by
        self._checkpointing = threading.Lock()  # one checkpoint at a time: the stop's waits for the thread's

    # --- loading and change tracking ---------------------------------------------------------------

    def load_tier(self, tier: Tier) -> None:
        """Load a tier's keyword entries and vectors as the last checkpoint saved them where the tier holds their
        tokens, brought up to date from its derived log, else rebuild them from CozoDB; queue learnings lacking a
        vector. What a checkpoint saved that cannot be brought up to date is rebuilt from the tier instead."""
        started = time.monotonic()
        self.ledger.loading(tier.name, tier.journal_seq)  # a checkpoint meanwhile goes unrecorded
        self._half.add(tier.name)
        self._tiers[tier.name] = tier
        self.loads[tier.name] = "opening"
        tokens = tier.take_saved()
        try:
            try:
                self._load(tier, tokens, started)
            except Exception as exc:
                if not tokens:
                    raise
                # the tier's rows are whole (it opened): what was derived from them can be derived again
                log.warning(
                    "tier %s: its saved indexes cannot be loaded (%r); rebuilding them", tier.name, exc, exc_info=True
                )
                self._load(tier, {}, started)
        except BaseException:
            # what it holds now is half read: never saved (a reindex that failed keeps serving what it had read)
            self.loads.pop(tier.name, None)
            raise
        self._half.discard(tier.name)

    def _load(self, tier: Tier, tokens: Saved, started: float) -> None:
        words = tokens.get(saved.KEYWORDS)
        kept_words = self.keywords.adopt(tier.name, words[0] if words is not None else None)
        loaded = saved.load_vectors(tier, tokens.get(saved.VECTORS), self.exact_limit)
        self.rows.drop_tier(tier.name)
        pairs = tier.run(
            "?[from_id, to_id] := *learning_relations{from_id, relation_type, to_id}, relation_type = $type",
            {"type": RELATION_SUPERSEDES},
        )
        self.supersessions.load(tier.name, [(f, t) for f, t in pairs])
        self.archive.load(tier.name, tier.archived())
        self.votes.load_tier(tier)
        index = loaded or VectorIndex(self.exact_limit)
        self.vectors[tier.name] = index
        texts: dict[str, str] = {}
        held = {saved.KEYWORDS: kept_words, saved.VECTORS: loaded is not None}
        marks = [tokens[name][1] for name, kept in held.items() if kept]
        caught, unembedded = 0, list[tuple[str, str]]()
        if marks:  # what was committed after the checkpoint, read again
            caught, unembedded = saved.catch_up(tier, min(marks), self.keywords if kept_words else None, loaded)
            self.enqueue(tier.name, unembedded, since=None)
        whole = kept_words and loaded is not None
        # nothing read again: the indexes hold what the tier holds, as the last checkpoint recorded
        through = -1 if not whole or not tier.counts_kept else min(marks) if caught else tier.journal_seq
        self.ledger.loaded(tier.name, through, caught)
        if whole:
            # Both saved: no page of the tier is read. Learnings still without a vector are looked up in CozoDB
            # when the embedding queue is next empty, and the row cache fills as learnings are read.
            with self._ready:
                if self.embeddings:
                    self._behind.add(tier.name)
        else:
            self._read_pages(tier, index, texts, kept_words, loaded is not None)
        missing = index.missing(list(texts))
        self.enqueue(tier.name, [(lid, texts[lid]) for lid in missing], since=None)
        self.loads[tier.name] = saved.how_loaded(kept_words, loaded is not None, caught)
        notes = self.notes.load_tier(tier)
        self.enqueue(tier.name, notes, since=None, note=True)
        log.info(
            "derived data for tier %s: keyword entries %s, %d vectors (%s, %s), %d learnings read again from its "
            "log, %d to embed (and %d notes), %.0f ms",
            tier.name,
            "kept" if kept_words else f"{len(texts)} indexed",
            len(index),
            "hnsw" if index.uses_hnsw else "exact",
            "kept" if loaded is not None else "read",
            caught,
            len(missing) + len(unembedded),
            len(notes),
            (time.monotonic() - started) * 1000,
        )

    def _read_pages(self, tier: Tier, index: VectorIndex, texts: dict[str, str], words: bool, vectors: bool) -> None:
        """Rebuild from CozoDB what was not kept: keyword entries unless `words` were, vectors unless `vectors`
        were. One pass over the learnings fills `texts`, feeds the keyword index and, as far as it has room, the
        row cache."""
        room = self.rows.capacity - len(self.rows)
        stamp = self.rows.stamp()  # before reading: a commit meanwhile keeps its learnings out of the cache
        for page in pages(tier, f"?[{JOINED_HEAD}] := {JOINED_BODY}"):
            entries = [(row[0], embedding_text(row[_DESCRIPTION], row[_INSIGHT])) for row in page]
            if not words:
                self.keywords.upsert(tier.name, entries)
            texts.update(entries)
            self.loads[tier.name] = f"rebuilding: {len(texts):,} learnings read"
            if room > 0:
                self.rows.fill(tier.name, page[:room], stamp)
                room -= len(page)
        if vectors:
            return
        for page in pages(tier, "?[id, embedding] := *learning_embeddings{learning_id: id, embedding}"):
            live = [(lid, v) for lid, v in page if lid in texts]
            if live:
                index.upsert([lid for lid, _ in live], blob_vectors([v for _, v in live]))
            if len(index) % _PROGRESS_EVERY < len(live):
                log.info("tier %s: %d of %d vectors loaded", tier.name, len(index), len(texts))
                self.loads[tier.name] = f"rebuilding: {len(index):,} of {len(texts):,} vectors read"

    def due(self, now: float, every_s: float, changed: int) -> list[str]:
        """The tiers to checkpoint now: those with learnings changed since their last checkpoint, once `changed`
        of them have or `every_s` has passed (0: any change)."""
        whole = [name for name in list(self._tiers) if name not in self._half]  # a tier may open meanwhile
        return self.ledger.due(whole, now, every_s, changed)

    def checkpoint(self, held: saved.Held, names: list[str], build_wait_s: float = 0.0) -> None:
        """Save these tiers' derived data and record it in each (`saved.checkpoint`); `held` holds every writer."""
        with self._checkpointing:
            self._checkpoint(held, names, build_wait_s)

    def _checkpoint(self, held: saved.Held, names: list[str], build_wait_s: float) -> None:
        chosen = [self._tiers[name] for name in names if name in self._tiers and name not in self._half]
        if not chosen:
            return
        ledger = self.ledger
        through = {tier.name: ledger.journaled.get(tier.name, 0) for tier in chosen}
        changed = {tier.name: ledger.unsaved.get(tier.name, 0) for tier in chosen}
        loads = {tier.name: ledger.loads.get(tier.name, 0) for tier in chosen}

        def current(name: str) -> bool:  # not loaded again since (a reindex): what was saved may be half of it
            return name not in self._half and ledger.loads.get(name, 0) == loads[name]

        whole = saved.checkpoint(chosen, through, self.vectors, self.keywords, held, current, build_wait_s)
        for tier in chosen:
            ledger.saved(tier.name, through[tier.name], changed[tier.name], tier.name in whole)

    def after_batch(self, commits: list[tuple[str, DerivedChanges]]) -> None:
        """What a batch's commits changed, tier by tier in commit order: rows, new or edited texts, vectors stored
        with them, learnings deleted. A failure in one tier's update is logged and leaves the others whole."""
        # The keyword index takes the whole batch in one transaction: each of its transactions writes a segment,
        # and one per tier made it cost 21 µs a learning against 13 (a batch spans seven tiers in the benchmark).
        gone: list[str] = []
        words: dict[str, tuple[str, str]] = {}  # learning id -> (tier, its indexed text), as the last commit left it
        for tier, changes in commits:
            try:
                self._after_commit(tier, changes)
            except Exception:  # derived data must never fail a committed source write
                log.exception("updating derived data for tier %s failed", tier)
                self._half.add(tier)  # its indexes miss this commit until a reindex: never checkpointed
            for lid in changes.deleted:
                words.pop(lid, None)
            gone += changes.deleted
            words.update((lid, (tier, text)) for lid, text in changes.words)
        self.keywords.remove(gone)
        self.keywords.stage(words)  # written once the acks are out (`settle`), or by the next search
        for tier, changes in commits:  # only now: a checkpoint that reads these flushes what was staged first
            if changes.seq:
                self.ledger.committed(
                    tier, changes.seq, len(changes.texts) + len(changes.vectors) + len(changes.deleted)
                )

    def settle(self) -> None:
        """After a batch's acks: write the keyword entries its commits staged."""
        self.keywords.flush()

    def _after_commit(self, tier: str, changes: DerivedChanges) -> None:
        """One commit's changes to everything but the keyword index."""
        # first, so that no later failure here can leave a stale row to be read after the acks
        self.rows.invalidate(tier, changes.touched)
        self.supersessions.apply(tier, changes.supersedes_put, changes.supersedes_gone)
        self.archive.apply(tier, changes.archived, changes.unarchived)
        index = self.vectors.get(tier)
        with self._ready:
            for lid in changes.deleted:
                self._since.pop(lid, None)
        if index is not None:
            index.remove(changes.deleted + changes.stale)
        if changes.vectors and index is not None:
            ids = [lid for lid, _ in changes.vectors]
            started = time.perf_counter()
            index.upsert(ids, blob_vectors([v for _, v in changes.vectors]))
            self.upsert_cost.add(time.perf_counter() - started, len(ids))
            self._landed(ids)
            self.near.note(tier, ids)
        given = {lid for lid, _ in changes.vectors}
        waiting = [(lid, text) for lid, text in changes.texts if lid not in given]
        self.enqueue(tier, waiting, since=time.monotonic())
        self.enqueue(tier, self.notes.add(tier, changes.notes), since=time.monotonic(), note=True)
        self.notes.store(changes.note_vectors)
        self.votes.apply(tier, changes.tasks, changes.ratings)

    def enqueue(self, tier: str, entries: list[tuple[str, str]], since: float | None, note: bool = False) -> None:
        """Queue learnings (or notes) for embedding (a no-op without an embedder configured).

        `since` is when their write committed; their visibility lag is measured from it (None: not measured).
        """
        if not entries or not self.embeddings:
            return
        with self._ready:
            room = _QUEUE_LIMIT - len(self._queue)
            if room < len(entries):
                self._behind.add(tier)
            now = time.monotonic()
            for lid, text in entries[: max(0, room)]:
                self._queue.append(Pending(tier, lid, text, note, now))
                if since is not None:
                    self._since[lid] = since
            self._ready.notify()

    def _landed(self, ids: list[str]) -> None:
        now = time.monotonic()
        with self._ready:
            for lid in ids:
                since = self._since.pop(lid, None)
                if since is not None:
                    self._lags.append((now - since) * 1000)

    # --- the embedding pool's side ----------------------------------------------------------------------

    def take(self, limit: int) -> list[Pending]:
        """Up to `limit` queued texts, oldest first; when the queue is empty, first the learnings of tiers that a
        full queue left out, looked up in CozoDB."""
        with self._ready:
            behind = sorted(self._behind) if not self._queue else []
            self._behind.difference_update(behind)
        for name in behind:
            self._catch_up(self._tiers[name])
        with self._ready:
            return [self._queue.popleft() for _ in range(min(limit, len(self._queue)))]

    def put_back(self, batch: list[Pending]) -> None:
        """Texts taken but not embedded (their worker died): first in line again."""
        with self._ready:
            self._queue.extendleft(reversed(batch))

    def count_embedded(self, count: int) -> None:
        """`count` more texts embedded (their vectors on their way to the batcher)."""
        with self._ready:
            self.embedded += count
            self._rate.append((time.monotonic(), self.embedded))

    def disable(self) -> None:
        """No model can be loaded: search works by keywords only, and nothing more is queued."""
        with self._ready:
            if self.embeddings:
                log.error("the embedding model could not be loaded; search works by keywords only")
            self.embeddings = False
            self._queue.clear()
            self._since.clear()

    # --- figures -----------------------------------------------------------------------------------

    def _catch_up(self, tier: Tier) -> None:
        rows = tier.run(
            "?[id, description, insight] := *learning{id, description, insight}, "
            f"not *learning_embeddings{{learning_id: id}} :limit {_QUEUE_LIMIT}"
        )
        log.info("tier %s: %d learnings without a vector queued for embedding", tier.name, len(rows))
        self.enqueue(tier.name, [(lid, embedding_text(d, i)) for lid, d, i in rows], since=None)
        notes = tier.run(
            f"?[id, content] := *memory_notes{{id, content}}, not *note_embeddings{{note_id: id}} :limit {_QUEUE_LIMIT}"
        )
        self.enqueue(tier.name, [(nid, text) for nid, text in notes], since=None, note=True)

    def requeue(self, tier: Tier) -> int:
        """Queue every learning and note of a tier for embedding again (after a model change); returns how many."""
        count = 0
        for entries in learning_texts(tier):
            self.enqueue(tier.name, entries, since=None)
            count += len(entries)
        notes = [(nid, text) for nid, text in tier.run("?[id, content] := *memory_notes{id, content}")]
        self.enqueue(tier.name, notes, since=None, note=True)
        return count + len(notes)

    def status(self) -> str:
        """The embedder's state for `stats`: its model name, "loading", or "none"."""
        if self.embedder is not None:
            return self.embedder.name
        return "loading" if self.embeddings else "none"

    def vector_seconds(self) -> float:
        """What each stored vector costs the coordinator's indexes lately: its upsert and its near-duplicate check."""
        return self.upsert_cost.per_vector + self.near.cost.per_vector

    def queue_depth(self) -> int:
        """Learnings waiting for an embedding."""
        return len(self._queue)

    def oldest_ms(self, held_since: float | None = None) -> float:
        """How long the oldest text still queued, or held by a worker since `held_since`, has waited, in ms (0 with
        none)."""
        with self._ready:
            first = self._queue[0].queued_at if self._queue else None
        oldest = min((t for t in (first, held_since) if t is not None), default=None)
        return 0.0 if oldest is None else (time.monotonic() - oldest) * 1000

    def embeddings_per_s(self) -> float:
        """Recent embedding throughput."""
        with self._ready:
            if len(self._rate) < 2:
                return 0.0
            (t0, n0), (t1, n1) = self._rate[0], self._rate[-1]
        return (n1 - n0) / (t1 - t0) if t1 > t0 else 0.0

    def lag_summary(self) -> dict[str, float]:
        """Visibility lag (commit -> searchable by meaning), milliseconds: over recent learnings that became
        searchable, and over those committed and still waiting, counted at their age so far (a backlog that
        never drains must not read as no lag at all)."""
        now = time.monotonic()
        with self._ready:
            samples = list(self._lags) + [(now - since) * 1000 for since in self._since.values()]
        return summarize(samples)
