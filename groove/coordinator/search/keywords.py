"""The keyword index: SQLite FTS5 in a file of the data dir, derived from the learnings of every open tier.

Each commit's texts are staged before its acks go out (`stage`, a dict update) and written after them (`flush`,
one SQLite statement per table for the whole batch): a search flushes what is staged before it reads, so a
learning is findable by its words the moment its write is acknowledged, long before its embedding exists, and
the acks do not wait for the index. It is never part of the write
transaction (CozoDB's own FTS index cut bulk writes twentyfold here). A tier's entries are kept from one run to
the next where a checkpoint marked them and the tier holds that mark (`adopt`, `mark`, `search/saved.py`), and
brought up to date from the tier's derived log; otherwise they are indexed again from CozoDB as the tier opens.

Each tier (or working memory, for notes) has an FTS5 table of its own, so a learning's BM25 is reckoned over
its own tier's statistics: the same learning scores the same whichever coordinator holds its tier, and
whatever other tiers it holds (a cluster's merged search ranks as one coordinator's would).
"""

from __future__ import annotations

import logging
import math
import os
import sqlite3
import threading
import uuid
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

from groove.coordinator.search.lexical import TOKENIZER, Stemmer, index_text
from groove.coordinator.search.wordquery import Hit, Query, WordMatch, best, idf, make_query, match, rows_of

log = logging.getLogger(__name__)

_DRIFT = 0.01  # a label's word counts are read again once this share of its texts changed
_COUNTS_KEPT = 50_000  # word counts kept per label at most
_CACHE_KIB = 8192  # SQLite's page cache for a file-backed index; the operating system caches the rest
_READ_CACHE_KIB = 2048  # ... and for each reading thread's connection (SQLite's default)
# FTS5's `automerge`: segments merged per level (4 by default). Each transaction writes a segment; merging 8 at
# a time made indexing 7-11 % cheaper here, with the same query time at 40,000 learnings (5.6-6.2 ms).
_AUTOMERGE = 8
# NORMAL, not OFF: in WAL mode it syncs only as the log is copied into the file, and an OS crash can then lose the
# last transactions (the log past a checkpoint, read again from the tiers' derived logs), never damage the file
_FILE_PRAGMAS = f"PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -{_CACHE_KIB};"
# doc: each text's id and label; label: each tier's (or memory's) number, and the token its entries were checkpointed
# with (none once they are dropped)
_SCHEMA = """
CREATE TABLE doc (lid TEXT PRIMARY KEY, label INTEGER NOT NULL);
CREATE INDEX doc_label ON doc (label);
CREATE TABLE label (code INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, token TEXT);
"""


class KeywordIndex:
    """Full-text search over texts labelled by tier (or by memory, for notes). Thread-safe.

    In memory, or in a file: the learnings' index lives in the data dir, so that what a stored learning costs in
    RAM does not grow with its words (SQLite keeps `_CACHE_KIB` of its pages, the operating system the rest).
    The file is derived data, written without syncing but at checkpoints (`mark`): a tier's entries are kept
    from one run to the next where the tier holds their token, and brought up to date from its derived log. A
    file-backed index is read by each searching thread through a connection of its own, in WAL mode: searches
    run side by side and beside a write, SQLite letting go of the GIL meanwhile (through the writer's one
    connection, under its lock, the four reader threads took turns: under the default mix a search waited 2.7 s
    at p50, most of it for that lock).
    """

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._conn: sqlite3.Connection | None = None  # made at first use: by then the data dir is known to be ours
        self._lock = threading.Lock()
        self._stemmer = Stemmer()
        self._labels: dict[str, int] = {}  # tier (or memory) -> the small number naming its table
        self._names: dict[int, str] = {}
        self._tables: set[int] = set()  # labels whose table exists
        self._docs: dict[int, int] = {}  # label -> texts indexed under it
        self._changes: dict[int, int] = {}  # label -> texts indexed or removed under it since its table was made
        # label -> (its size and its changes when these were read, how many of its texts hold each stem)
        self._counts: dict[int, tuple[int, int, dict[str, int]]] = {}
        self._next_rowid = 1
        self._failing = False
        # id -> (tier, text) staged by a commit (or kept while the file cannot be written), written at the next
        # flush; its own lock, so that staging never waits for a search or a write of the index
        self._staged: dict[str, tuple[str, str]] = {}
        self._staging = threading.Lock()
        self._readers = threading.local()  # a file-backed index's connection for each thread that searches it

    def _db(self) -> sqlite3.Connection:
        """The database, made on first use (call with the lock held)."""
        if self._conn is None:
            self._conn = self._connect()
        return self._conn

    def _connect(self) -> sqlite3.Connection:
        """The file a previous run left, its labels read back (`adopt` says which tiers' entries are kept), or a
        new database: in memory, or a file made afresh when there is none or it cannot be read."""
        if self._path is None:
            conn = sqlite3.connect(":memory:", check_same_thread=False)
            conn.executescript(f"PRAGMA journal_mode = MEMORY; {_SCHEMA}")
            return conn
        self._path.parent.mkdir(parents=True, exist_ok=True)
        if self._path.exists():
            conn = sqlite3.connect(str(self._path), check_same_thread=False)
            try:
                conn.executescript(_FILE_PRAGMAS)
                self._read_back(conn)
                return conn
            except sqlite3.DatabaseError as exc:
                conn.close()
                log.warning(
                    "the keyword file %s cannot be read (%s): every tier's entries are rebuilt", self._path, exc
                )
                self._labels, self._names, self._tables, self._docs, self._next_rowid = {}, {}, set(), {}, 1
        for left in (self._path, *(self._path.with_name(self._path.name + end) for end in ("-wal", "-shm"))):
            left.unlink(missing_ok=True)
        conn = sqlite3.connect(str(self._path), check_same_thread=False)
        conn.executescript(f"{_FILE_PRAGMAS} {_SCHEMA}")
        return conn

    def _read_back(self, conn: sqlite3.Connection) -> None:
        """What a previous run's file holds: its labels, their tables and their texts' counts."""
        made = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        for code, name in conn.execute("SELECT code, name FROM label").fetchall():
            self._labels[name], self._names[code] = code, name
            if f"kw_{code}" in made and f"kw_{code}_v" in made:
                self._tables.add(code)
                self._docs[code], self._changes[code] = 0, 0
            else:  # made halfway when a run stopped: gone, so that its first use makes both again
                with conn:
                    conn.execute(f"DROP TABLE IF EXISTS kw_{code}_v")
                    conn.execute(f"DROP TABLE IF EXISTS kw_{code}")
                    conn.execute("DELETE FROM doc WHERE label = ?", (code,))
        for code, count in conn.execute("SELECT label, count(*) FROM doc GROUP BY label").fetchall():
            if code in self._tables:
                self._docs[code] = count
            else:  # rows under a label the file does not name (a run killed halfway through a tier's first
                # index, before `_table` made it in one transaction): the tier's next index would collide with them
                with conn:
                    conn.execute("DELETE FROM doc WHERE label = ?", (code,))
        self._next_rowid = int(conn.execute("SELECT coalesce(max(rowid), 0) FROM doc").fetchone()[0]) + 1

    def adopt(self, tier: str, token: str | None) -> bool:
        """Whether the entries a previous run left for `tier` were marked with `token` (what the tier says its
        checkpointed keyword entries are): then they are kept, to be brought up to date from the tier's log, else
        dropped, to be indexed again (`search/saved.py`)."""
        with self._lock:
            db = self._db()
            code = self._labels.get(tier)
            if code is None:
                return False
            row = db.execute("SELECT token FROM label WHERE code = ?", (code,)).fetchone()
            kept = token is not None and row is not None and row[0] == token and code in self._tables
        if not kept:
            self.drop_tier(tier)
        return kept

    def holds(self, tier: str) -> bool:
        """Whether it has a table for the tier's entries (a tier that never had any has none, and no token)."""
        with self._lock:
            code = self._labels.get(tier)
            return code is not None and code in self._tables

    def mark(self, tiers: list[str]) -> dict[str, str]:
        """Write what is staged and put the file on disk: the token of each of these tiers' entries, to record in
        the tier (none if the file cannot be written, or is in memory). A tier's entries keep their token until
        they are dropped, so a checkpoint that a crash interrupts leaves the tier's last one true."""
        self.flush()
        if self._path is None or self._failing:
            return {}
        try:
            with self._lock:
                db = self._db()
                held = dict(db.execute("SELECT name, token FROM label").fetchall())
                tokens = {
                    tier: held.get(tier) or uuid.uuid4().hex
                    for tier in tiers
                    if tier in self._labels and self._labels[tier] in self._tables
                }
                with db:
                    db.executemany("UPDATE label SET token = ? WHERE name = ?", [(t, n) for n, t in tokens.items()])
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                for path in (self._path, self._path.with_name(self._path.name + "-wal")):
                    if path.exists():
                        fd = os.open(path, os.O_RDONLY)
                        try:
                            os.fsync(fd)
                        finally:
                            os.close(fd)
        except (sqlite3.Error, OSError) as exc:
            log.warning("the keyword file cannot be saved (%s): its entries are indexed again at the next start", exc)
            return {}
        return tokens

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """A connection to search through: this thread's own for a file (made at its first search), else the
        one connection, with the lock held."""
        if self._path is None:
            with self._lock:
                yield self._db()
            return
        conn: sqlite3.Connection | None = getattr(self._readers, "conn", None)
        if conn is None:
            conn = sqlite3.connect(str(self._path), check_same_thread=False)
            conn.execute(f"PRAGMA cache_size = -{_READ_CACHE_KIB}")
            self._readers.conn = conn
        yield conn

    def _label(self, name: str) -> int:
        code = self._labels.get(name)
        if code is None:
            code = self._labels[name] = len(self._labels) + 1
            self._names[code] = name
        return code

    def _table(self, code: int) -> str:
        """The label's FTS5 table, made if it is not there yet (call with the lock held, inside the transaction
        that indexes its first texts).

        One statement at a time, not `executescript`: that commits the transaction open before it, and a kill
        between that commit and the next left a previous run's `doc` rows under a label the file no longer named,
        which broke the next run's first index of the tier (`_read_back` drops such rows now too)."""
        if code not in self._tables:
            db = self._db()
            db.execute(f'CREATE VIRTUAL TABLE kw_{code} USING fts5(body, tokenize="{TOKENIZER}")')
            db.execute(f"CREATE VIRTUAL TABLE kw_{code}_v USING fts5vocab(kw_{code}, 'row')")
            db.execute(f"INSERT INTO kw_{code} (kw_{code}, rank) VALUES ('automerge', {_AUTOMERGE})")
            db.execute("INSERT OR REPLACE INTO label (code, name) VALUES (?, ?)", (code, self._names[code]))
            self._tables.add(code)
            self._docs[code] = 0
            self._changes[code] = 0
        return f"kw_{code}"

    def upsert(self, tier: str, entries: list[tuple[str, str]]) -> None:
        """Index (id, text) pairs of one tier, replacing earlier text for the same ids (an id twice: its last)."""
        self.upsert_many({lid: (tier, index_text(text)) for lid, text in entries})

    def upsert_many(self, entries: dict[str, tuple[str, str]]) -> None:
        """Index id -> (tier, text as `lexical.index_text` makes it) entries of any tiers now, in one transaction,
        replacing earlier text for the same ids."""
        self.stage(entries)
        self.flush()

    def stage(self, entries: dict[str, tuple[str, str]]) -> None:
        """Take entries as `upsert_many` does, to be written at the next `flush` (a search flushes first)."""
        if entries:
            with self._staging:
                self._staged.update(entries)

    def flush(self) -> None:
        """Write what is staged, in one transaction.

        When the file cannot be written (its disk full or failing) the entries wait, unsearchable by their words,
        and are indexed with the next ones: the learnings are stored, and their writes stop until the disk is
        mended anyway (the same disk holds the tiers)."""
        if not self._staged:
            return
        with self._lock:  # taken before the staged entries: a search that finds none staged waits for this write
            with self._staging:
                staged, self._staged = self._staged, {}
            if not staged:
                return
            counts, changes, tables = dict(self._docs), dict(self._changes), set(self._tables)
            try:
                with self._db() as db:
                    self._index(db, list(staged.items()))
            except sqlite3.Error as exc:
                # the transaction was rolled back, the tables it made with it
                self._docs, self._changes, self._tables = counts, changes, tables
                if not isinstance(exc, sqlite3.OperationalError):
                    raise
                with self._staging:  # back to wait, behind any newer text staged meanwhile
                    self._staged = staged | self._staged
                if not self._failing:
                    log.error("the keyword index cannot be written (%s): %d learnings wait for it", exc, len(staged))
                self._failing = True
                return
            if self._failing:
                log.warning("the keyword index is written again")
            self._failing = False

    def _index(self, db: sqlite3.Connection, entries: list[tuple[str, tuple[str, str]]]) -> None:
        first = self._next_rowid
        docs = [(first + i, lid, self._label(tier)) for i, (lid, (tier, _)) in enumerate(entries)]
        # One statement per table, its rows in one JSON array: `executemany` lets go of the GIL and takes it back
        # for every row, and beside a busy writer each take waits. Most entries are new learnings: looking each up
        # first cost more than indexing it. An id indexed before (an edit, a rebuild) breaks the insert; then the
        # rows it made go, the old entries too.
        insert = "INSERT INTO doc (rowid, lid, label) SELECT value->>0, value->>1, value->>2 FROM json_each(?)"
        rows = orjson.dumps(docs).decode()
        try:
            db.execute(insert, (rows,))
        except sqlite3.IntegrityError:
            db.execute("DELETE FROM doc WHERE rowid >= ?", (first,))
            self._delete_rows(rows_of(db, [lid for lid, _ in entries]))
            db.execute(insert, (rows,))
        by_label: dict[int, list[tuple[int, str]]] = {}
        for (rowid, _, code), (_, (_, text)) in zip(docs, entries, strict=True):
            by_label.setdefault(code, []).append((rowid, text))
        for code, texts in by_label.items():
            db.execute(
                f"INSERT INTO {self._table(code)} (rowid, body) SELECT value->>0, value->>1 FROM json_each(?)",
                (orjson.dumps(texts).decode(),),
            )
            self._docs[code] += len(texts)
            self._changes[code] += len(texts)
        self._next_rowid += len(entries)

    def remove(self, ids: list[str]) -> None:
        """Drop these entries (unknown ids are ignored)."""
        if not ids:
            return
        with self._lock, self._db():
            with self._staging:
                for lid in ids:
                    self._staged.pop(lid, None)
            self._delete_rows(rows_of(self._db(), ids))

    def drop_tier(self, tier: str) -> None:
        """Forget a whole tier (before it is rebuilt)."""
        with self._lock, self._db() as db:
            with self._staging:
                self._staged = {lid: entry for lid, entry in self._staged.items() if entry[0] != tier}
            code = self._labels.get(tier)
            if code is not None and code in self._tables:
                # its token first, in the same transaction: entries dropped or half made again vouch for nothing
                db.execute("UPDATE label SET token = NULL WHERE code = ?", (code,))
                db.execute("DELETE FROM doc WHERE label = ?", (code,))
                db.execute(f"DROP TABLE kw_{code}_v")
                db.execute(f"DROP TABLE kw_{code}")
                self._tables.discard(code)
                del self._docs[code], self._changes[code]
                self._counts.pop(code, None)

    def _delete_rows(self, rows: list[tuple[int, int]]) -> None:
        db = self._db()
        for rowid, code in rows:
            db.execute(f"DELETE FROM kw_{code} WHERE rowid = ?", (rowid,))
            db.execute("DELETE FROM doc WHERE rowid = ?", (rowid,))
            self._docs[code] -= 1
            self._changes[code] += 1

    # --- searching ---------------------------------------------------------------------------------

    def search(self, text: str, tiers: list[str], k: int, also: Collection[str] = ()) -> list[WordMatch]:
        """Up to `k` learnings of each of these tiers holding the query's rarest words, strongest BM25 first; then
        those of `also` (ids of learnings found otherwise) that hold any of those words, found by the same pass.
        Each tier's own `k`: a search of tiers that two coordinators hold between them then weighs what one holding
        both weighs (a cut over both tiers would leave out of one's pool what the other's found)."""
        query = make_query(text, self._stemmer)
        if query is None:
            return []
        self.flush()  # what acked writes staged: read your writes
        found = [hit for tier in tiers for hit in self._rows(query, tier, k, set(also))]
        found.sort(key=lambda hit: -hit[0])
        return [match(query, hit, self._stemmer) for hit in found]

    def _rows(self, query: Query, tier: str, k: int, also: set[str]) -> list[Hit]:
        """The tier's `k` texts holding the query's rarest words, strongest first, and those of `also` holding any.
        BM25 is reckoned for every text matched, to rank them; the texts are read for those returned alone."""
        with self._lock:
            code = self._labels.get(tier)
            if code is None or code not in self._tables or not self._docs[code]:
                return []
            docs = self._docs[code]
            known, missing = self._known_counts(code, query.stems)
        try:
            with self._reading() as db:
                if missing:
                    marks = ",".join("?" * len(missing))
                    found = dict(db.execute(f"SELECT term, doc FROM kw_{code}_v WHERE term IN ({marks})", missing))
                    known.update((s, found.get(s, 0)) for s in missing)
                counts = {s: known[s] for s in query.stems if known[s]}
                rows = best(db, code, query, counts, k, also)
        except sqlite3.OperationalError:
            with self._lock:
                if code not in self._tables:  # the tier's table was dropped meanwhile (it is being rebuilt)
                    return []
            raise
        weights = {s: idf(docs, n) for s, n in counts.items()}
        scale = math.log(max(docs, 2))
        return [(-float(rank) / scale, lid, tier, body, weights) for lid, rank, body in rows]

    def _known_counts(self, code: int, stems: list[str]) -> tuple[dict[str, int], list[str]]:
        """How many of the label's texts hold each stem, as far as known, and the stems to count (the caller reads
        them and adds them to the first). Call with the lock held.

        FTS5 counts a word's texts by walking its list (0.5 ms for nine words over 1,300 texts here, growing
        with the tier), so the counts are kept until texts numbering `_DRIFT` of the label's size have been
        indexed or removed since they were read: an IDF that moves by a hundredth of its log ratio changes no
        ranking, and the counts are exact again at the next read."""
        docs, changes = self._docs[code], self._changes[code]
        size, since, known = self._counts.get(code, (docs, changes, {}))
        if changes - since > size * _DRIFT or len(known) > _COUNTS_KEPT:
            size, since, known = docs, changes, {}
        self._counts[code] = (size, since, known)
        return known, [s for s in dict.fromkeys(stems) if s not in known]

    def __len__(self) -> int:
        return sum(self._docs.values())
