"""The keyword index: SQLite FTS5 in memory, derived from the learnings of every open tier.

It is updated right after each commit, before the acks go out, so a learning is findable by its words the
moment its write is acknowledged, long before its embedding exists. It is never part of the write
transaction (CozoDB's own FTS index cut bulk writes twentyfold here) and is rebuilt from CozoDB when a
tier opens.
"""

from __future__ import annotations

import re
import sqlite3
import threading

_WORD_RE = re.compile(r"\w+", re.UNICODE)
_MAX_TERMS = 32
# The any-word fallback matches only the query's rarest words: OR over every word of a long query matched
# most of a 12k-learning index and cost 14 ms (under the lock writers need) against 2.4 ms for the four
# rarest, which carry most of the BM25 weight anyway.
_OR_TERMS = 4


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
    """Full-text search over learnings' descriptions and insights, by tier. Thread-safe."""

    def __init__(self) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(
            "CREATE VIRTUAL TABLE kw USING fts5(lid UNINDEXED, tier UNINDEXED, body, tokenize='unicode61')"
        )
        self._db.execute("CREATE VIRTUAL TABLE kw_terms USING fts5vocab(kw, 'row')")  # documents per term
        self._lock = threading.Lock()
        # FTS5 cannot look up its unindexed columns quickly, so rows are found by rowid, kept here
        self._rowids: dict[str, int] = {}
        self._tiers: dict[str, str] = {}
        self._next_rowid = 1

    def upsert(self, tier: str, entries: list[tuple[str, str]]) -> None:
        """Index (learning id, text) pairs of one tier, replacing earlier text for the same ids."""
        if not entries:
            return
        with self._lock, self._db:
            self._delete([lid for lid, _ in entries])
            rows = []
            for lid, text in entries:
                self._rowids[lid] = self._next_rowid
                self._tiers[lid] = tier
                rows.append((self._next_rowid, lid, tier, text))
                self._next_rowid += 1
            self._db.executemany("INSERT INTO kw (rowid, lid, tier, body) VALUES (?, ?, ?, ?)", rows)

    def remove(self, ids: list[str]) -> None:
        """Drop these learnings (unknown ids are ignored)."""
        with self._lock, self._db:
            self._delete(ids)

    def drop_tier(self, tier: str) -> None:
        """Forget a whole tier (before it is rebuilt)."""
        with self._lock, self._db:
            self._delete([lid for lid, t in self._tiers.items() if t == tier])

    def _delete(self, ids: list[str]) -> None:
        gone = [(self._rowids.pop(lid),) for lid in ids if lid in self._rowids]
        for lid in ids:
            self._tiers.pop(lid, None)
        if gone:
            self._db.executemany("DELETE FROM kw WHERE rowid = ?", gone)

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
            counts = dict(self._db.execute(f"SELECT term, doc FROM kw_terms WHERE term IN ({marks})", terms).fetchall())
        present = [t for t in terms if counts.get(t, 0) > 0]
        return sorted(present, key=lambda t: counts[t])[:_OR_TERMS]

    def _match(self, match: str, tiers: list[str], k: int) -> list[tuple[str, str, float, str]]:
        marks = ",".join("?" * len(tiers))
        with self._lock:
            rows: list[tuple[str, str, float, str]] = self._db.execute(
                f"SELECT lid, tier, bm25(kw), lower(body) FROM kw WHERE kw MATCH ? AND tier IN ({marks}) "
                "ORDER BY bm25(kw) LIMIT ?",
                (match, *tiers, k),
            ).fetchall()
        return rows

    def __len__(self) -> int:
        return len(self._rowids)
