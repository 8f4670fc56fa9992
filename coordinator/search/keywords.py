"""The keyword index: SQLite FTS5 in a file of the data dir, derived from the learnings of every open tier.

It is updated right after each commit, before the acks go out, so a learning is findable by its words the
moment its write is acknowledged, long before its embedding exists. It is never part of the write
transaction (CozoDB's own FTS index cut bulk writes twentyfold here) and is rebuilt from CozoDB when a
tier opens.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
from pathlib import Path

log = logging.getLogger(__name__)

_WORD_RE = re.compile(r"\w+", re.UNICODE)
_MAX_TERMS = 32
# The any-word fallback matches only the query's rarest words: OR over every word of a long query matched
# most of a 12k-learning index and cost 14 ms (under the lock writers need) against 2.4 ms for the four
# rarest, which carry most of the BM25 weight anyway.
_OR_TERMS = 4
_CACHE_KIB = 8192  # SQLite's page cache for a file-backed index; the operating system caches the rest
_CHUNK = 500  # ids per `IN (...)` lookup
# FTS5's `automerge`: segments merged per level (4 by default). Each transaction writes a segment; merging 8 at
# a time made indexing 7-11 % cheaper here, with the same query time at 40,000 learnings (5.6-6.2 ms).
_AUTOMERGE = 8


_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "so",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "this",
        "to",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)


def query_terms(text: str) -> list[str]:
    """The distinct lower-cased words of a query that carry meaning, in order (at most _MAX_TERMS)."""
    words = [w.lower() for w in _WORD_RE.findall(text)]
    terms = [w for w in words if w not in _STOPWORDS] or words
    return list(dict.fromkeys(terms))[:_MAX_TERMS]


class KeywordIndex:
    """Full-text search over texts labelled by tier (or by memory, for notes). Thread-safe.

    In memory, or in a file: the learnings' index lives in the data dir, so that what a stored learning costs in
    RAM does not grow with its words (SQLite keeps `_CACHE_KIB` of its pages, the operating system the rest).
    The file is derived data, made afresh when the coordinator starts and filled as tiers open; it is never
    trusted across a crash, so it is written without a journal on disk and without syncing.
    """

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._conn: sqlite3.Connection | None = None  # made at first use: by then the data dir is known to be ours
        self._lock = threading.Lock()
        self._labels: dict[str, int] = {}  # tier (or memory) -> the small number stored for it
        self._names: dict[int, str] = {}
        self._next_rowid = 1
        self._count = 0
        self._waiting: dict[str, tuple[str, str]] = {}  # id -> (tier, text) not yet written (its disk full)
        self._failing = False

    def _db(self) -> sqlite3.Connection:
        """The database, made on first use (call with the lock held)."""
        if self._conn is None:
            if self._path is not None:
                self._path.parent.mkdir(parents=True, exist_ok=True)
                self._path.unlink(missing_ok=True)  # what a previous run left: rebuilt as the tiers open
            self._conn = sqlite3.connect(":memory:" if self._path is None else str(self._path), check_same_thread=False)
            self._conn.executescript(
                f"""
                PRAGMA journal_mode = MEMORY;
                PRAGMA synchronous = OFF;
                PRAGMA cache_size = -{_CACHE_KIB};
                CREATE TABLE doc (lid TEXT PRIMARY KEY, label INTEGER NOT NULL);
                CREATE INDEX doc_label ON doc (label);
                CREATE VIRTUAL TABLE kw USING fts5(body, tokenize='unicode61');
                CREATE VIRTUAL TABLE kw_terms USING fts5vocab(kw, 'row');
                INSERT INTO kw (kw, rank) VALUES ('automerge', {_AUTOMERGE});
                """
            )
        return self._conn

    def _label(self, name: str) -> int:
        code = self._labels.get(name)
        if code is None:
            code = self._labels[name] = len(self._labels) + 1
            self._names[code] = name
        return code

    def upsert(self, tier: str, entries: list[tuple[str, str]]) -> None:
        """Index (id, text) pairs of one tier, replacing earlier text for the same ids (an id twice: its last)."""
        self.upsert_many({lid: (tier, text) for lid, text in entries})

    def upsert_many(self, entries: dict[str, tuple[str, str]]) -> None:
        """Index id -> (tier, text) entries of any tiers in one transaction, replacing earlier text for the same ids.

        When the file cannot be written (its disk full or failing) the entries wait, unsearchable by their words,
        and are indexed with the next ones: the learnings are stored, and their writes stop until the disk is
        mended anyway (the same disk holds the tiers)."""
        with self._lock:
            self._waiting.update(entries)
            if not self._waiting:
                return
            try:
                with self._db() as db:
                    self._index(db, list(self._waiting.items()))
            except sqlite3.OperationalError as exc:
                if not self._failing:
                    log.error(
                        "the keyword index cannot be written (%s): %d learnings wait for it", exc, len(self._waiting)
                    )
                self._failing = True
                return
            if self._failing:
                log.warning("the keyword index is written again")
            self._failing = False
            self._waiting.clear()

    def _index(self, db: sqlite3.Connection, entries: list[tuple[str, tuple[str, str]]]) -> None:
        first = self._next_rowid
        docs = [(first + i, lid, self._label(tier)) for i, (lid, (tier, _)) in enumerate(entries)]
        # Most entries are new learnings: looking each up first cost more than indexing it. An id indexed
        # before (an edit, a rebuild) breaks the insert; then the rows it made go, the old entries too.
        try:
            db.executemany("INSERT INTO doc (rowid, lid, label) VALUES (?, ?, ?)", docs)
        except sqlite3.IntegrityError:
            db.execute("DELETE FROM doc WHERE rowid >= ?", (first,))
            self._delete_rows(self._rowids_of([lid for lid, _ in entries]))
            db.executemany("INSERT INTO doc (rowid, lid, label) VALUES (?, ?, ?)", docs)
        db.executemany(
            "INSERT INTO kw (rowid, body) VALUES (?, ?)",
            [(first + i, text) for i, (_, (_, text)) in enumerate(entries)],
        )
        self._next_rowid += len(entries)
        self._count += len(entries)

    def remove(self, ids: list[str]) -> None:
        """Drop these entries (unknown ids are ignored)."""
        if not ids:
            return
        with self._lock, self._db():
            for lid in ids:
                self._waiting.pop(lid, None)
            self._delete_rows(self._rowids_of(ids))

    def drop_tier(self, tier: str) -> None:
        """Forget a whole tier (before it is rebuilt)."""
        with self._lock, self._db() as db:
            self._waiting = {lid: entry for lid, entry in self._waiting.items() if entry[0] != tier}
            code = self._labels.get(tier)
            if code is not None:
                rows = db.execute("SELECT rowid FROM doc WHERE label = ?", (code,)).fetchall()
                self._delete_rows([r for (r,) in rows])

    def _rowids_of(self, ids: list[str]) -> list[int]:
        found: list[int] = []
        for at in range(0, len(ids), _CHUNK):
            chunk = ids[at : at + _CHUNK]
            marks = ",".join("?" * len(chunk))
            found += [r for (r,) in self._db().execute(f"SELECT rowid FROM doc WHERE lid IN ({marks})", chunk)]
        return found

    def _delete_rows(self, rowids: list[int]) -> None:
        if rowids:
            gone = [(r,) for r in rowids]
            self._db().executemany("DELETE FROM kw WHERE rowid = ?", gone)
            self._db().executemany("DELETE FROM doc WHERE rowid = ?", gone)
            self._count -= len(rowids)

    def search(self, text: str, tiers: list[str], k: int) -> list[tuple[str, str, float, list[str]]]:
        """Up to `k` (id, tier, score, matched terms) best first; any query word may match (BM25 ranks)."""
        terms = query_terms(text)
        if not terms or not tiers or k <= 0:
            return []
        quoted = ['"' + t.replace('"', '""') + '"' for t in terms]
        # Learnings holding every word first: that query is selective, so fast on large tiers; any word
        # only fills the remaining places.
        rows = self._match(" AND ".join(quoted), tiers, k)
        if len(rows) < k and len(terms) > 1:
            seen = {row[0] for row in rows}
            rare = ['"' + t.replace('"', '""') + '"' for t in self._rarest(terms)]
            if rare:
                rows += [row for row in self._match(" OR ".join(rare), tiers, k + len(rows)) if row[0] not in seen]
            rows = rows[:k]
        hits = []
        for lid, tier, rank, body in rows:
            words = set(_WORD_RE.findall(body))
            hits.append((lid, tier, -float(rank), [t for t in terms if t in words]))
        return hits

    def _rarest(self, terms: list[str]) -> list[str]:
        """The query's _OR_TERMS rarest words that occur at all."""
        if len(terms) <= _OR_TERMS:
            return terms
        marks = ",".join("?" * len(terms))
        with self._lock:
            counts = dict(
                self._db().execute(f"SELECT term, doc FROM kw_terms WHERE term IN ({marks})", terms).fetchall()
            )
        present = [t for t in terms if counts.get(t, 0) > 0]
        return sorted(present, key=lambda t: counts[t])[:_OR_TERMS]

    def _match(self, match: str, tiers: list[str], k: int) -> list[tuple[str, str, float, str]]:
        with self._lock:
            codes = [self._labels[t] for t in tiers if t in self._labels]
            if not codes:
                return []
            marks = ",".join("?" * len(codes))
            rows = (
                self._db()
                .execute(
                    "SELECT doc.lid, doc.label, bm25(kw), lower(kw.body) FROM kw JOIN doc ON doc.rowid = kw.rowid "
                    f"WHERE kw MATCH ? AND doc.label IN ({marks}) ORDER BY bm25(kw) LIMIT ?",
                    (match, *codes, k),
                )
                .fetchall()
            )
            return [(lid, self._names[code], rank, body) for lid, code, rank, body in rows]

    def __len__(self) -> int:
        return self._count
