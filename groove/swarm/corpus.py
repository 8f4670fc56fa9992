"""The bundled corpus the synthetic workload draws from: 2,308 learnings across every category and six projects.

Each entry is a realistic learning an agent might record (a description of what happened, an insight to
apply next time) with its category and the project it came from. Writers add which agent and session
noticed it, so most writes are new learnings; a share repeats an entry verbatim, as agents re-learning the
same thing do, and exercises dedupe and reinforcement.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from groove.protocol import constants as C

PROJECT_ROOT = "/srv/groove-demo"  # the synthetic projects live under this root: project:/srv/groove-demo/<name>


@dataclass(frozen=True, slots=True)
class Entry:
    """One corpus learning."""

    project: str
    category: str
    description: str
    insight: str


@dataclass(frozen=True, slots=True)
class Corpus:
    """The entries and the project names they come from."""

    projects: tuple[str, ...]
    entries: tuple[Entry, ...]
    global_share: float = 0.2  # of the learnings written, those in the `global` scope (the user tier)

    def only(self, projects: list[str]) -> Corpus:
        """This corpus narrowed to some of its projects, writing no `global` learning: an agent of a cluster
        that writes only the tiers one coordinator owns. ValueError names a project the corpus lacks."""
        unknown = sorted(set(projects) - set(self.projects))
        if unknown:
            raise ValueError(f"no project {', '.join(unknown)} in the corpus (it has {', '.join(self.projects)})")
        entries = tuple(e for e in self.entries if e.project in projects)
        return Corpus(tuple(p for p in self.projects if p in projects), entries, global_share=0.0)

    def project_root(self, project: str) -> str:
        """Where one of the corpus's projects lives (its scope is `project:<root>`)."""
        return f"{PROJECT_ROOT}/{project}"

    def learning(self, rng: random.Random, noted_by: str | None, repeat: float = 0.1) -> dict[str, Any]:
        """A learning to write: a corpus entry in its project's scope (or `global` one time in five, unless
        narrowed), noted by `noted_by` unless it repeats the entry verbatim (probability `repeat`)."""
        entry = rng.choice(self.entries)
        scope = (
            C.SCOPE_GLOBAL
            if rng.random() < self.global_share
            else C.SCOPE_PROJECT_PREFIX + self.project_root(entry.project)
        )
        description = entry.description
        if noted_by is not None and rng.random() >= repeat:
            description += f" (noted by {noted_by}, session {rng.randrange(10**6)})"
        return {
            "scope": scope,
            "category": entry.category,
            "description": description,
            "insight": entry.insight,
            "confidence": round(rng.uniform(0.3, 0.8), 3),
            "source": {"type": "transcript", "session_id": f"s-{rng.randrange(10**6)}"},
        }

    def task(self, rng: random.Random) -> tuple[str, str]:
        """(project, task text) for a session: what an orchestrator would hand an agent."""
        entry = rng.choice(self.entries)
        return entry.project, entry.description.split(": ", 1)[-1]

    def query(self, rng: random.Random) -> str:
        """A search query: an insight an agent would look for, as words."""
        return rng.choice(self.entries).insight


@cache
def load() -> Corpus:
    """The bundled corpus (read once per process)."""
    raw = json.loads(resources.files("groove.swarm").joinpath("data/corpus.json").read_text())
    entries = tuple(Entry(**e) for e in raw["learnings"])
    return Corpus(tuple(raw["projects"]), entries)
