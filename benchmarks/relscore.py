"""Scoring rankings, the two peers groove is measured against, and the grid that chose the fusion's constants.

- **Metrics** of a ranking against a question's relevant learnings: hit@1, recall@5 and @10, MRR and nDCG@10
  (binary gains), averaged over questions.
- **MiniLM alone**: cosine over the same texts groove embeds (`description\\ninsight`), by the same model.
- **BM25 alone**: Okapi BM25, k1 1.2, b 0.75, Lucene's IDF, over lower-cased words with groove's stop words left
  out, no stemming: the textbook peer, written here so that it shares nothing with groove's index.
- **The fit** (`--fit`): groove's own keyword index and fusion rule run in this process over the candidates a
  search would weigh, for each pair of constants of a grid; each set is scored by the pair the other sets chose.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from benchmarks.relsets import Question, RelSet
from groove.coordinator.search.embedder import embedding_text
from groove.coordinator.search.fusion import SEMANTIC_FLOOR, pool
from groove.coordinator.search.keywords import KeywordIndex
from groove.coordinator.search.lexical import STOPWORDS

K1, B = 1.2, 0.75
# WORD_WEIGHT (a learning holding a word of the query that names something), PLAIN_WEIGHT (only plain words), power
WEIGHTS = [0.4, 0.6, 0.8, 1.0, 1.2, 1.6, 2.0, 3.0, 4.0]
PLAIN = [0.0, 0.1, 0.2, 0.4]
POWERS = [1.0, 1.5, 2.0]
_WORD = re.compile(r"\w+")


def metrics(ranked: Sequence[Sequence[str]], questions: Sequence[Question]) -> dict[str, float]:
    """The mean of each metric over questions, `ranked[i]` being the keys returned for question i, best first."""
    totals: dict[str, float] = dict.fromkeys(("hit@1", "recall@5", "recall@10", "mrr", "ndcg@10"), 0.0)
    for got, q in zip(ranked, questions, strict=True):
        top = list(got[:10])
        hits = [key in q.relevant for key in top]
        totals["hit@1"] += bool(hits[:1] and hits[0])
        totals["recall@5"] += sum(hits[:5]) / len(q.relevant)
        totals["recall@10"] += sum(hits) / len(q.relevant)
        totals["mrr"] += next((1 / (i + 1) for i, h in enumerate(hits) if h), 0.0)
        ideal = sum(1 / math.log2(i + 2) for i in range(min(len(q.relevant), 10)))
        totals["ndcg@10"] += sum(1 / math.log2(i + 2) for i, h in enumerate(hits) if h) / ideal
    n = len(questions) or 1
    return {name: round(totals[name] / n, 4) for name in ("hit@1", "recall@5", "recall@10", "mrr", "ndcg@10")}


def by_category(ranked: Sequence[Sequence[str]], questions: Sequence[Question]) -> dict[str, dict[str, float]]:
    """`metrics` per question category."""
    out = {}
    for category in sorted({q.category for q in questions}):
        picked = [i for i, q in enumerate(questions) if q.category == category]
        out[category] = metrics([ranked[i] for i in picked], [questions[i] for i in picked])
    return out


def top_keys(scores: np.ndarray[Any, Any], keys: Sequence[str], k: int = 10) -> list[list[str]]:
    """For each row of scores (questions x docs), the keys of the k best docs."""
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return [[keys[j] for j in row] for row in order]


def _terms(text: str) -> list[str]:
    return [w for w in (m.lower() for m in _WORD.findall(text)) if w not in STOPWORDS]


def bm25(rel: RelSet) -> np.ndarray[Any, Any]:
    """BM25 scores, questions x docs."""
    docs = [Counter(_terms(embedding_text(d.description, d.insight))) for d in rel.docs]
    lengths = np.array([sum(c.values()) for c in docs], dtype=np.float64)
    average = lengths.mean() if docs else 1.0
    holding = Counter(t for c in docs for t in c)
    n = len(docs)
    out = np.zeros((len(rel.questions), n))
    for qi, q in enumerate(rel.questions):
        for term in set(_terms(q.text)):
            if term not in holding:
                continue
            idf = math.log(1 + (n - holding[term] + 0.5) / (holding[term] + 0.5))
            tf = np.array([c.get(term, 0) for c in docs], dtype=np.float64)
            out[qi] += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * lengths / average))
    return out


# --- the fit -------------------------------------------------------------------------------------------

Features = list[
    tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any], list[str]]
]


def candidates(rel: RelSet, docs: np.ndarray[Any, Any], queries: np.ndarray[Any, Any]) -> Features:
    """For each question, what groove's search weighs: the semantic pool and the keyword pool (each of
    `pool(10)`), every candidate with its cosine, its words' strength and coverage, by groove's own index."""
    index = KeywordIndex()
    keys = [d.key for d in rel.docs]
    index.upsert("t", [(d.key, embedding_text(d.description, d.insight)) for d in rel.docs])
    wanted = pool(10)
    out: Features = []
    for qi, q in enumerate(rel.questions):
        cos = docs @ queries[qi]
        best = [keys[j] for j in np.argsort(-cos)[:wanted] if cos[j] >= SEMANTIC_FLOOR]
        matches = {m.lid: m for m in index.search(q.text, ["t"], wanted, also=best)}
        chosen = list(dict.fromkeys(best + list(matches)))
        at = {k: i for i, k in enumerate(keys)}
        out.append(
            (
                np.array([cos[at[k]] for k in chosen]),
                np.array([matches[k].strength if k in matches else 0.0 for k in chosen]),
                np.array([matches[k].coverage if k in matches else 0.0 for k in chosen]),
                np.array([k in matches and matches[k].specific for k in chosen]),
                chosen,
            )
        )
    return out


Constants = tuple[float, float, float]  # WORD_WEIGHT, PLAIN_WEIGHT, COVERAGE_POWER


def rule(constants: Constants) -> Callable[[Any, Any, Any, Any], Any]:
    """The fusion of fusion.py with these constants."""
    weight, plain, power = constants
    return lambda cos, strength, coverage, named: cos + np.where(named, weight, plain) * strength * coverage**power


def fused(features: Features, score: Callable[[Any, Any, Any, Any], Any]) -> list[list[str]]:
    """Each question's keys ranked by a fusion rule."""
    ranked = []
    for cos, strength, coverage, named, keys in features:
        order = np.argsort(-score(cos, strength, coverage, named), kind="stable")[:10]
        ranked.append([keys[j] for j in order])
    return ranked


def fit(sets: dict[str, tuple[Features, list[Question]]], families: dict[str, str]) -> dict[str, Any]:
    """Leave one set out: for each set, the grid's constants that maximise hit@1 + recall@5 over the other sets
    (each family of sets, LoCoMo or coding, weighing alike), and their figures on the set left out."""
    grid = [(w, plain, p) for w in WEIGHTS for plain in PLAIN for p in POWERS]
    table = {(name, c): metrics(fused(feats, rule(c)), qs) for name, (feats, qs) in sets.items() for c in grid}

    def objective(constants: Constants, left_out: str) -> float:
        by_family: dict[str, list[float]] = {}
        for name in sets:
            if name != left_out:
                m = table[(name, constants)]
                by_family.setdefault(families[name], []).append(m["hit@1"] + m["recall@5"])
        return sum(sum(v) / len(v) for v in by_family.values())

    def named(c: Constants) -> dict[str, float]:
        return {"weight": c[0], "plain": c[1], "power": c[2]}

    folds = {}
    for name in sets:
        chosen = max(grid, key=lambda c: objective(c, name))
        folds[name] = {**named(chosen), **table[(name, chosen)]}
    return {"folds": folds, "all_sets": named(max(grid, key=lambda c: objective(c, "")))}
