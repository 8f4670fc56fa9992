"""Words as the keyword index sees them: code identifiers split, stop words dropped, words stemmed.

A learning's text is indexed as written plus the parts of its identifiers: `test_socket_roundtrip` stays one
word (a name asked for by name matches it exactly) and adds `test socket roundtrip`; `getUserName` adds
`get user name`; dotted and slashed paths and numbers split into their parts (`2.13.0` is `2 13 0`).
SQLite's Porter stemmer then folds `groups`/`group` and `running`/`run` (it raised BM25's hit@1 on the LoCoMo
dev conversations from 0.338 to 0.379, benchmarks.relevance). The stemmer is SQLite's own, asked through a
scratch table, so that a query's stems are exactly the index's; stems are cached.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Collection

# FTS5's tokenizer for every keyword table: Porter stems over unicode61 words, `_` kept inside a word
TOKENIZER = "porter unicode61 tokenchars '_'"
MAX_TERMS = 32  # query words kept, in order
_WORD_RE = re.compile(r"\w+", re.UNICODE)
_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_HAS_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
_SENTENCE_RE = re.compile(r"[.!?:;\n]+\s*")
_DIGIT_RE = re.compile(r"\d")
_STEM_CACHE = 100_000  # words whose stems are remembered; past it the cache starts over

# fmt: off
STOPWORDS = frozenset([
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "do", "does", "for", "from", "has", "have",
    "how", "i", "if", "in", "is", "it", "its", "of", "on", "or", "so", "that", "the", "their", "then",
    "there", "these", "this", "to", "was", "we", "what", "when", "where", "which", "while", "who", "why",
    "will", "with", "you", "your",
])
# fmt: on


def _parts(word: str) -> list[str]:
    """The parts of an identifier (snake_case, camelCase), or none for a plain word."""
    if "_" not in word and (word.islower() or word.isdigit()):  # most words: no regex needed
        return []
    if "_" in word:
        return [p for piece in word.split("_") if piece for p in (_parts(piece) or [piece])]
    if _HAS_CAMEL.search(word):
        return _CAMEL_RE.findall(word)
    return []


def index_text(text: str) -> str:
    """A learning's text as indexed: as written, then the parts of its identifiers (most words are told apart
    by str methods alone: a regex per word cost 28 µs a learning on the writes' path)."""
    if "_" not in text and not _HAS_CAMEL.search(text):
        return text  # most texts: no identifier at all
    extra = [
        p
        for word in _WORD_RE.findall(text)
        if "_" in word or not (word.islower() or word.istitle() or word.isupper() or word.isdigit())
        for p in _parts(word)
    ]
    return f"{text}\n{' '.join(extra)}" if extra else text


def words(text: str) -> list[str]:
    """Every lower-cased word of a text, each identifier followed by its parts."""
    found = []
    for word in _WORD_RE.findall(text):
        found.append(word.lower())
        found += [p.lower() for p in _parts(word)]
    return found


def specific(text: str) -> set[str]:
    """The query's words that name something: a capitalised word inside a sentence (a name), one in capitals, one
    holding a digit, an identifier (snake_case, camelCase), each lower-cased, with its parts. Words like these
    carry the answer when a learning holds them; a paraphrase's plain words mostly do not."""
    found: set[str] = set()
    for sentence in _SENTENCE_RE.split(text):
        for i, word in enumerate(_WORD_RE.findall(sentence)):
            named = i > 0 and word[0].isupper()
            if named or (word.isupper() and len(word) > 1) or _DIGIT_RE.search(word) or _parts(word):
                found.add(word.lower())
                found.update(p.lower() for p in _parts(word))
    return found - STOPWORDS


def stemming_to(stems: Collection[str]) -> re.Pattern[str]:
    """Finds the words of a lower-cased text that could stem to one of these stems: those whose first letter
    begins one, and those that begin with a letter outside ASCII. Porter's rules replace a word's ending and keep
    its first letter (checked over every word of the corpus and made-up ones, in the tests); only unicode61's
    folding of diacritics (`élan` to `elan`) changes a first letter, and only one outside ASCII. Stemming just
    these, a text's numbers and ids (`session 482913`), new to the stems' cache, cost no round trip to the
    tokenizer each: that was a third of a search's time over 20,000 learnings."""
    firsts = "".join(sorted({re.escape(stem[0]) for stem in stems if stem}))
    outside = r"(?=[^\x00-\x7f])\w"
    return re.compile(rf"(?<!\w)(?:[{firsts}]|{outside})\w*" if firsts else rf"(?<!\w){outside}\w*")


def query_terms(text: str) -> list[str]:
    """The distinct words of a query that carry meaning, in order (at most MAX_TERMS); a query of stop words
    only keeps them."""
    every = words(text)
    terms = [w for w in every if w not in STOPWORDS] or every
    return list(dict.fromkeys(terms))[:MAX_TERMS]


class Stemmer:
    """Words to the stems the keyword index stores, by SQLite's own tokenizer. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[str, str] = {}
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.executescript(
            f"""
            CREATE VIRTUAL TABLE scratch USING fts5(body, tokenize="{TOKENIZER}");
            CREATE VIRTUAL TABLE scratch_v USING fts5vocab(scratch, 'instance');
            """
        )

    def stems(self, given: list[str]) -> list[str]:
        """The stem of each word (lower-cased words, as `words` gives them)."""
        missing = [w for w in dict.fromkeys(given) if w not in self._cache]
        if missing:
            with self._lock:
                if len(self._cache) + len(missing) > _STEM_CACHE:
                    self._cache.clear()
                self._cache.update(zip(missing, self._ask(missing), strict=True))
        return [self._cache[w] for w in given]

    def among(self, given: Collection[str], wanted: Collection[str]) -> set[str]:
        """Those of the `wanted` stems that some of these words stem to."""
        cache = self._cache
        missing = [word for word in given if word not in cache]
        if missing:
            self.stems(missing)
        return {stem for word in given if (stem := cache.get(word, word)) in wanted}

    def _ask(self, given: list[str]) -> list[str]:
        """Stems from the tokenizer: one scratch row per word (a word the tokenizer drops stems to itself)."""
        db = self._db
        with db:
            db.executemany("INSERT INTO scratch (rowid, body) VALUES (?, ?)", list(enumerate(given, 1)))
            found = dict(db.execute("SELECT doc, term FROM scratch_v").fetchall())
            db.execute("DELETE FROM scratch")
        return [found.get(i, word) for i, word in enumerate(given, 1)]
