"""The labelled data sets `benchmarks.relevance` ranks: LoCoMo conversations and groove's own coding learnings.

A set is a corpus of learnings, stored in a project of its own, and questions, each with the learnings that
answer it. Sets that share a corpus (the coding questions kept for tuning and those kept aside) share a
project.

- **LoCoMo** (Maharana et al., ACL 2024; any file of its public release's format, given by path: the data is
  not part of groove). Every dialog turn is a learning, description `Speaker: text`, insight `said on <the
  session's date>`; each question of categories 1-4 is searched in its conversation's project, and the turns
  of its `evidence` are the relevant ones.
- **Coding** (`data/coding.json`, `data/paraphrases.json`). Topics of four close learnings, each with a
  question that paraphrases it with few shared words, among 300 generated distractors. The topics marked
  `heldout` were kept aside while the fusion was chosen (`coding-heldout`); the others and the older
  paraphrase pairs make `coding-dev`.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

DATA = Path(__file__).parent / "data"
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
DISTRACTORS = 300
_DIA_ID = re.compile(r"D\d+:\d+")


@dataclass(frozen=True)
class Doc:
    """One learning of a corpus."""

    key: str  # the data set's own id for it (a LoCoMo dia_id)
    description: str
    insight: str


@dataclass(frozen=True)
class Question:
    text: str
    relevant: frozenset[str]  # keys of the docs that answer it
    category: str


@dataclass
class RelSet:
    """Questions over a corpus stored in project `project`."""

    name: str
    project: str
    docs: list[Doc]
    questions: list[Question] = field(default_factory=list)


def locomo(path: Path) -> RelSet:
    """One LoCoMo conversation: every turn a learning, its questions of categories 1-4 with evidence."""
    try:
        data = json.loads(path.read_text())
        docs = []
        for n in range(1, 1000):
            turns = data.get(f"session_{n}")
            if turns is None:
                if f"session_{n}_date_time" in data:
                    continue  # a date whose session was left out of the release
                break
            when = data[f"session_{n}_date_time"]
            docs += [Doc(t["dia_id"], f"{t['speaker']}: {t['text']}", f"said on {when}") for t in turns]
        keys = {d.key for d in docs}
        questions = []
        for qa in data["qa"]:
            category = LOCOMO_CATEGORIES.get(qa.get("category", 0))
            # a few evidence entries hold two ids in one string ("D8:6; D9:17"), a few name no turn
            evidence = frozenset(i for e in qa.get("evidence", []) for i in _DIA_ID.findall(e) if i in keys)
            if category is not None and evidence:
                questions.append(Question(qa["question"], evidence, category))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path} is not a LoCoMo conversation: {exc!r}") from None
    if not docs or not questions:
        raise ValueError(f"{path} holds no dialog turns or no questions of categories 1-4 with evidence")
    name = path.stem
    return RelSet(name, f"/relevance/{name}", docs, questions)


def coding(seed: int = 7) -> list[RelSet]:
    """`coding-dev` and `coding-heldout`: their questions over one corpus of topics, paraphrases and distractors."""
    data = json.loads((DATA / "coding.json").read_text())
    pairs = json.loads((DATA / "paraphrases.json").read_text())
    docs: list[Doc] = []
    dev = RelSet("coding-dev", "/relevance/coding", docs)
    heldout = RelSet("coding-heldout", "/relevance/coding", docs)
    for topic in data["topics"]:
        into = heldout if topic["split"] == "heldout" else dev
        for i, (learning, question) in enumerate(zip(topic["learnings"], topic["questions"], strict=True)):
            key = f"{topic['name']}/{i}"
            docs.append(Doc(key, learning, f"learned while working on {topic['name'].replace('-', ' ')}"))
            into.questions.append(Question(question, frozenset([key]), topic["name"]))
    for i, pair in enumerate(pairs):
        key = f"paraphrase/{i}"
        docs.append(Doc(key, pair["learning"], "learned while working"))
        dev.questions.append(Question(pair["query"], frozenset([key]), "paraphrase"))
    docs += distractors(DISTRACTORS, random.Random(seed))
    return [dev, heldout]


_PARTS = [
    "the scheduler",
    "the billing service",
    "the CSV importer",
    "the search page",
    "the mobile app",
    "the nightly report",
    "the admin console",
    "the feature flag client",
    "the thumbnail worker",
    "the email sender",
    "the audit trail",
    "the metrics exporter",
    "the webhook relay",
    "the PDF renderer",
    "the geocoder",
]
_SYMPTOMS = [
    "drops events when the queue is full",
    "double-counts retries in its totals",
    "reads the wrong timezone from the locale",
    "spends most of its time parsing JSON",
    "holds a connection per request",
    "fails on names with non-ASCII letters",
    "logs every payload at info level",
    "ignores the configured page size",
    "returns 500 on an empty body",
    "keeps a copy of every upload in memory",
    "sorts ids as strings, so 10 comes before 9",
    "sends the same notification twice after a restart",
]
_FIXES = [
    "the fix was a bounded buffer with back-pressure",
    "we moved the work to a background job",
    "a unit test now pins the expected behaviour",
    "the owner team added a feature flag to switch it off",
    "profiling pointed at one hot loop, rewritten in numpy",
    "a schema check at the boundary now rejects it",
    "we stream the data instead of loading it whole",
    "the client now sends an idempotency key",
    "it was fixed by upgrading the library two minor versions",
    "the config default changed and the docs say why",
]


def distractors(count: int, rng: random.Random) -> list[Doc]:
    """`count` distinct generated learnings about other parts of a code base."""
    combos = [(p, s, f) for p in _PARTS for s in _SYMPTOMS for f in _FIXES]
    chosen = rng.sample(combos, count)
    return [
        Doc(f"distractor/{i}", f"{part.capitalize()} {symptom}", f"{fix}.")
        for i, (part, symptom, fix) in enumerate(chosen)
    ]
