"""A keyword search's words and how a text holds them: the query as the index matches it, the SQL that finds a
tier's best texts for it (`best`), and what a found text's words are worth (`match`). `keywords.py` holds the
index these read.
"""

from __future__ import annotations

import math
import re
import sqlite3
from dataclasses import dataclass

from groove.coordinator.search.fusion import words_part
from groove.coordinator.search.lexical import Stemmer, query_terms, specific, stemming_to

# The query's words matched are its rarest few: OR over every word of a long query matched most of a
# 12k-learning index and cost 14 ms (under the lock writers need) against 2.4 ms for the four rarest, which
# carry most of the BM25 weight anyway. Four and six cost LoCoMo dev 0.011 and 0.006 of hit@1 against eight.
_OR_TERMS = 8
_WALK = 3000  # entries of the words' lists a search ranks at most (the rarest word's newest, past this)
_CHUNK = 500  # ids per `IN (...)` lookup


@dataclass(frozen=True, slots=True)
class WordMatch:
    """How a learning holds a query's words."""

    lid: str
    tier: str
    strength: float  # its BM25 (FTS5's: k1 1.2, b 0.75, its tier's statistics) over ln of its tier's size
    coverage: float  # the share of the query's IDF mass (in its tier) it holds, 0 to 1
    matched: list[str]  # the query's words it holds, in the query's order
    specific: bool = False  # whether it holds a word of the query that names something (lexical.specific)

    def part(self) -> float:
        """What these words add to a cosine (fusion.py)."""
        return words_part(self.strength, self.coverage, self.specific)


# a text found by its words, before they are read: (strength, id, tier, the text as indexed, the query's stems' IDF)
Hit = tuple[float, str, str, str, dict[str, float]]


@dataclass(frozen=True, slots=True)
class Query:
    """A query's words, as a search matches them."""

    terms: list[str]  # the query's words
    stems: list[str]  # ... as the index stores them
    named: frozenset[str]  # the stems of those that name something
    wanted: frozenset[str]  # the stems, as a set
    stemming: re.Pattern[str]  # finds the words of a text that could stem to one of them


def make_query(text: str, stemmer: Stemmer) -> Query | None:
    """The query's words and stems, or None if it has no word to match."""
    terms = query_terms(text)
    if not terms:
        return None
    stems = stemmer.stems(terms)
    named = specific(text)
    named_stems = frozenset(s for t, s in zip(terms, stems, strict=True) if t in named)
    return Query(terms, stems, named_stems, frozenset(stems), stemming_to(stems))


def best(
    db: sqlite3.Connection, code: int, query: Query, counts: dict[str, int], k: int, also: set[str]
) -> list[tuple[str, float, str]]:
    """(id, FTS5's BM25, text) of the label's best `k` texts holding the query's rarest words, then of those of
    `also` that hold any, each part in score order."""
    rare = {t: counts[s] for t, s in zip(query.terms, query.stems, strict=True) if s in counts}
    chosen = sorted(rare, key=rare.__getitem__)[:_OR_TERMS]
    # the rarest words first: past `_WALK` entries of their lists walked, the commoner ones are left out (a
    # word most texts hold costs a walk over most of the index for next to no BM25; in a tier of 500
    # learnings that never happens)
    walked, kept = 0, list[str]()
    for term in chosen:
        if kept and walked + rare[term] > _WALK:
            break
        walked += rare[term]
        kept.append(term)
    if not kept:
        return []
    match = " OR ".join('"' + t.replace('"', '""') + '"' for t in kept)
    table = f"kw_{code}"
    # The best `k` by a sort that keeps only them (a window over every match, then a join for the texts,
    # took 1.5 x as long at 20,000 learnings); the texts are read for those alone. Equal scores (copies of
    # one text) in id order: rowids differ from one coordinator to another.
    top = (
        f"SELECT {table}.rowid AS id, bm25({table}) AS r, doc.lid AS lid FROM {table} "
        f"JOIN doc ON doc.rowid = {table}.rowid WHERE {table} MATCH ?"
    )
    texts = f"SELECT t.lid, t.r, {table}.body FROM t JOIN {table} ON {table}.rowid = t.id ORDER BY t.r, t.lid"
    best_k = f"WITH t AS ({top} ORDER BY r, lid LIMIT ?) {texts}"
    if walked > _WALK:
        # Even the rarest word is one most texts hold: its best `k` are those of its newest `_WALK` holders.
        # BM25 cost 1.2 µs a text it ranked (a word 25,000 of 150,000 texts hold: 44 ms against 6.1 for its newest
        # 3,000, found by walking its list from the newest end), and such a word tells texts apart by little more
        # than their length.
        newest = (
            f"SELECT m.id AS id, m.r AS r, doc.lid AS lid FROM (SELECT {table}.rowid AS id, bm25({table}) AS r "
            f"FROM {table} WHERE {table} MATCH ? ORDER BY {table}.rowid DESC LIMIT {_WALK}) AS m "
            "JOIN doc ON doc.rowid = m.id"
        )
        best_k = f"WITH t AS ({newest} ORDER BY r, lid LIMIT ?) {texts}"
    rows: list[tuple[str, float, str]] = db.execute(best_k, (match, k)).fetchall()
    # those found otherwise, past the best `k` (with fewer, every text holding the words is there already)
    extra = sorted(set(also) - {row[0] for row in rows}) if also and len(rows) == k else []
    rowids = [rowid for rowid, _ in rows_of(db, extra)] if extra else []
    if rowids:
        marks = ",".join("?" * len(rowids))
        # The ids as a filter on the one walk of the words' lists (`+` keeps them from FTS5): given them as a
        # constraint, FTS5 runs the query again for each id. With 30 ids that was 37 % of the coordinator's samples
        # in a soak; a search's p50 fell from 5.1 to 3.4 ms at 50,000 texts, 10.2 to 7.7 at 200,000 and 15.0 to
        # 13.0 at 1,000,000 (same results).
        rows += db.execute(f"WITH t AS ({top} AND +{table}.rowid IN ({marks})) {texts}", (match, *rowids)).fetchall()
    return rows


def match(query: Query, hit: Hit, stemmer: Stemmer) -> WordMatch:
    """A hit's words: which of the query's it holds, and their share of the query's IDF mass."""
    strength, lid, tier, body, idf = hit
    # the body as indexed holds its identifiers' parts already: its plain words are all there is to stem
    held = stemmer.among(query.stemming.findall(body.lower()), query.wanted)
    matched = [t for t, s in zip(query.terms, query.stems, strict=True) if s in held]
    mass = sum(idf.values())
    # summed in the query's order: a set's order differs from one process to another, and so would the last bits
    coverage = sum(v for s, v in idf.items() if s in held) / mass if mass > 0 else 0.0
    return WordMatch(lid, tier, strength, coverage, matched, bool(held & query.named))


def rows_of(db: sqlite3.Connection, ids: list[str]) -> list[tuple[int, int]]:
    """(rowid, label) of these ids' entries."""
    found: list[tuple[int, int]] = []
    for at in range(0, len(ids), _CHUNK):
        chunk = ids[at : at + _CHUNK]
        marks = ",".join("?" * len(chunk))
        found += db.execute(f"SELECT rowid, label FROM doc WHERE lid IN ({marks})", chunk).fetchall()
    return found


def idf(docs: int, holding: int) -> float:
    """A word's inverse document frequency in a tier of `docs` texts, `holding` of which hold it, as Lucene's BM25
    reckons it: never below 0, so that in a small tier a word most texts hold still weighs something (FTS5's
    own, which BM25's strength uses, is 0 for a word half the texts hold: in a tier of three learnings, two
    about http, 'http' would have covered nothing)."""
    return math.log(1 + (docs - holding + 0.5) / (holding + 0.5))
