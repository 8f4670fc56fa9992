"""Relevance: groove's search against MiniLM alone and BM25 alone, over the same texts, in one run.

Each data set (relsets.py) is stored in a project of its own on a fresh coordinator with the default
embedder; every question is searched there (`limit` 10) and the learnings returned are scored against its
relevant ones (relscore.py), beside the two peers ranking the same texts in this process. The coordinator is
handed the vectors this process computed for the peer (the same model over the same text it would embed):
only the queries are embedded by groove, and the run takes seconds, not minutes.

- `--locomo FILE`, once per file: LoCoMo conversations (not part of groove: give the files of its public release).
- `--learn`: half of each set's questions (every other one) become sessions first: `inject.prepare` with the
  question as the task, a search, and `helpful` for each relevant learning the session saw. The other half is
  searched before and after.
- `--fit`: also the grid over the fusion's constants, each set scored by the pair the other sets chose.

    python -m benchmarks.relevance [--locomo FILE]... [--learn] [--fit] [--questions N]
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import click
import numpy as np

from benchmarks import relscore
from benchmarks.common import machine
from benchmarks.relsets import Question, RelSet, coding, locomo
from benchmarks.search import settle, wait_for
from groove.cli.output import table
from groove.cli.processes import start_coordinator
from groove.client import GrooveClient
from groove.coordinator.search.embedder import MiniLM, embedding_text
from groove.swarm.fleet import stop_process

_PUT = 250  # learnings per learning.put


def _store(client: GrooveClient, rel: RelSet, vectors: np.ndarray[Any, Any]) -> dict[str, str]:
    """The set's corpus in its project; returns learning id -> the data set's key."""
    ids: dict[str, str] = {}
    for at in range(0, len(rel.docs), _PUT):
        docs = rel.docs[at : at + _PUT]
        items = [
            {
                "scope": f"project:{rel.project}",
                "category": "solution",
                "description": d.description,
                "insight": d.insight,
                "embedding": [float(x) for x in vectors[at + i]],
            }
            for i, d in enumerate(docs)
        ]
        reply = client.put_learnings(items)
        ids.update(zip(reply.ids, (d.key for d in docs), strict=True))
    return ids


def _search(client: GrooveClient, rel: RelSet, questions: list[Question], keys: dict[str, str]) -> list[list[str]]:
    return [
        [keys.get(h.learning.id, "?") for h in client.search(q.text, limit=10, project=rel.project)] for q in questions
    ]


def _sessions(client: GrooveClient, rel: RelSet, questions: list[Question], keys: dict[str, str]) -> dict[str, int]:
    """Each question as a session: an injection for it as the task, a search, and `helpful` for each relevant
    learning the session saw (injected or found); the injection is closed with the session."""
    ids = {key: lid for lid, key in keys.items()}
    rated = 0
    for i, q in enumerate(questions):
        session = f"{rel.name}-{i}"
        injection = client.inject(session, task=q.text, project=rel.project, seed=i)
        seen = {x.learning.id for x in injection.learnings}
        seen |= {h.learning.id for h in client.search(q.text, limit=10, project=rel.project)}
        helpful = [(ids[key], "helpful") for key in sorted(q.relevant) if key in ids and ids[key] in seen]
        client.close_session(helpful, injection_id=injection.injection_id, success=bool(helpful))
        rated += len(helpful)
    return {"sessions": len(questions), "helpful_ratings": rated}


def _summary(rows: dict[str, dict[str, dict[str, float]]]) -> list[list[str]]:
    lines = []
    for name, by in rows.items():
        for who, m in by.items():
            lines.append([name, who, *(f"{m[k]:.3f}" for k in ("hit@1", "recall@5", "recall@10", "mrr", "ndcg@10"))])
    return lines


@click.command()
@click.option("--locomo", "locomo_files", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--learn", is_flag=True, help="half the questions become sessions; the other half before and after")
@click.option("--fit", "do_fit", is_flag=True, help="the grid over the fusion's constants, leave one set out")
@click.option("--questions", type=click.IntRange(min=1), default=None, help="at most N questions per set")
def main(locomo_files: tuple[Path, ...], learn: bool, do_fit: bool, questions: int | None) -> None:
    try:
        sets = coding() + [locomo(p) for p in locomo_files]
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    if questions is not None:
        for rel in sets:
            rel.questions = rel.questions[:questions]
    started = time.monotonic()
    model = MiniLM()
    corpus: dict[str, np.ndarray[Any, Any]] = {}
    asked: dict[str, np.ndarray[Any, Any]] = {}
    for rel in sets:
        if rel.project not in corpus:
            corpus[rel.project] = model.encode([embedding_text(d.description, d.insight) for d in rel.docs])
        asked[rel.name] = model.encode([q.text for q in rel.questions])
    result: dict[str, Any] = {"benchmark": "relevance", "machine": machine(), "sets": {}}
    rows: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="groove-relevance-") as tmp:
        proc, endpoint = start_coordinator(Path(tmp), [])
        try:
            with GrooveClient(endpoint, timeout=120) as client:
                keys: dict[str, dict[str, str]] = {}
                for rel in sets:
                    if rel.project not in keys:
                        keys[rel.project] = _store(client, rel, corpus[rel.project])
                # the learnings came with vectors: the model may still be loading, and queries need it
                wait_for(lambda: client.stats().embedder not in ("loading", "none"))
                settle(client)
                for rel in sets:
                    doc_keys = [d.key for d in rel.docs]
                    ranked = {
                        "groove": _search(client, rel, rel.questions, keys[rel.project]),
                        "minilm": relscore.top_keys(asked[rel.name] @ corpus[rel.project].T, doc_keys),
                        "bm25": relscore.top_keys(relscore.bm25(rel), doc_keys),
                    }
                    rows[rel.name] = {who: relscore.metrics(r, rel.questions) for who, r in ranked.items()}
                    result["sets"][rel.name] = {
                        "questions": len(rel.questions),
                        "learnings": len(rel.docs),
                        **{who: {**rows[rel.name][who], "by_category": relscore.by_category(r, rel.questions)}
                           for who, r in ranked.items()},
                    }  # fmt: skip
                if learn:
                    result["learn"] = _learn(client, sets, keys)
        finally:
            stop_process(proc)
    result["pooled"] = _pooled(sets, result["sets"])
    if do_fit:
        features = {
            rel.name: (relscore.candidates(rel, corpus[rel.project], asked[rel.name]), rel.questions)
            for rel in sets
            if rel.name != "coding-heldout"  # kept aside: reported, never tuned on
        }
        families = {name: "coding" if name.startswith("coding") else "locomo" for name in features}
        result["fit"] = relscore.fit(features, families)
    result["seconds"] = round(time.monotonic() - started, 1)
    click.echo(table(["set", "ranker", "hit@1", "R@5", "R@10", "MRR", "nDCG@10"], _summary(rows)), err=True)
    click.echo(json.dumps(result))


def _learn(client: GrooveClient, sets: list[RelSet], keys: dict[str, dict[str, str]]) -> dict[str, Any]:
    """Sessions over every other question of each set; the rest searched before and after."""
    out: dict[str, Any] = {}
    for rel in sets:
        held, taught = rel.questions[1::2], rel.questions[0::2]
        before = relscore.metrics(_search(client, rel, held, keys[rel.project]), held)
        done = _sessions(client, rel, taught, keys[rel.project])
        out[rel.name] = {"before": before, **done}
    settle(client)
    for rel in sets:
        held = rel.questions[1::2]
        out[rel.name]["after"] = relscore.metrics(_search(client, rel, held, keys[rel.project]), held)
    return out


def _pooled(sets: list[RelSet], figures: dict[str, Any]) -> dict[str, Any]:
    """LoCoMo's conversations as one figure, each question counting once."""
    names = [rel.name for rel in sets if not rel.name.startswith("coding")]
    total = sum(figures[n]["questions"] for n in names)
    if not total:
        return {}
    return {
        "locomo": {
            who: {
                metric: round(sum(figures[n][who][metric] * figures[n]["questions"] for n in names) / total, 4)
                for metric in ("hit@1", "recall@5", "recall@10", "mrr", "ndcg@10")
            }
            for who in ("groove", "minilm", "bm25")
        }
    }


if __name__ == "__main__":
    main()
