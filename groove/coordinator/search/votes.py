"""Outcome votes: past tasks near a query vote for the learnings that helped them, and against those that were
contradicted.

Each injection made for a task stores the task's vector (`injection_tasks`) in every tier whose learnings it
chose, in the same transaction as the injection; each rating with an injection id lands in that learning's
tier's `outcome_log`. The votes are derived from those two relations only: rebuilt when a tier opens, updated
after each commit (before the acks), so they survive a restart and count each rating exactly once, and a tier's
votes never leave it: a search reads the votes of the tiers its context reads.

A search with a query vector looks up the past tasks of those tiers within `FLOOR` cosine of it. A past task at
cosine `s` votes `(s - FLOOR) / (1 - FLOOR)`, halved every `HALF_LIFE_MS` of the rating's age, for each
learning rated helpful in it (against, for each contradicted). A learning's votes add `VOTE_WEIGHT * tanh(sum)`
to its relevance (fusion.py), and a learning voted for that neither index offered becomes a candidate.

Chosen on the LoCoMo dev conversations (`benchmarks.relevance --learn`: half the questions as sessions rating
the turns they saw, the other half searched before and after): a floor of 0.6 and a weight of 0.4 gave the most
recall@5 of those tried (floors 0.3-0.7, weights 0.2-1.0, only the nearest 1-3 tasks voting, squared weights).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from groove.coordinator.store.records import VectorBlob, blob_vectors
from groove.coordinator.store.relations import INJECTION_TASKS
from groove.coordinator.store.tiers import Tier
from groove.protocol import constants as C

FLOOR = 0.6  # past tasks less similar to the query than this do not vote
VOTE_WEIGHT = 0.4
HALF_LIFE_MS = 30 * 24 * 3600 * 1000  # a rating's vote halves every 30 days
KEPT = 20_000  # past tasks kept per tier (the newest) unless told otherwise: 1.8 KB each (the budget sets it)
_SIGN = {C.OUTCOME_HELPFUL: 1.0, C.OUTCOME_CONTRADICTED: -1.0}

Rating = tuple[str, float, int]  # (learning id, +1 helpful or -1 contradicted, when)


@dataclass
class _TierVotes:
    tasks: OrderedDict[str, VectorBlob] = field(default_factory=OrderedDict)  # injection id -> task vector
    ratings: dict[str, list[Rating]] = field(default_factory=dict)  # injection id -> its ratings here
    matrix: tuple[list[str], npt.NDArray[np.float32]] | None = None  # the rated tasks' vectors, made when asked


class Votes:
    """Each open tier's past tasks and their ratings. Thread-safe."""

    def __init__(self, kept: int = KEPT) -> None:
        self.kept = kept  # past tasks per tier
        self._lock = threading.Lock()
        self._tiers: dict[str, _TierVotes] = {}

    def load_tier(self, tier: Tier) -> None:
        """Read a tier's task vectors and its ratings made in injections."""
        votes = _TierVotes()
        for iid, vector, _ in sorted(tier.run(INJECTION_TASKS.scan()), key=lambda row: row[2])[-self.kept :]:
            votes.tasks[iid] = vector
        rows = tier.run(
            "?[learning_id, outcome, injection_id, at] := *outcome_log{learning_id, at, outcome, injection_id}, "
            'injection_id != "", outcome in $kinds',
            {"kinds": list(_SIGN)},
        )
        for lid, outcome, iid, at in rows:
            if iid in votes.tasks:
                votes.ratings.setdefault(iid, []).append((lid, _SIGN[outcome], at))
        with self._lock:
            self._tiers[tier.name] = votes

    def tasks(self) -> int:
        """Past tasks held over every tier."""
        with self._lock:
            return sum(len(votes.tasks) for votes in self._tiers.values())

    def drop_tier(self, name: str) -> None:
        with self._lock:
            self._tiers.pop(name, None)

    def apply(self, tier: str, tasks: list[tuple[str, VectorBlob]], ratings: list[tuple[str, str, str, int]]) -> None:
        """A commit's new task vectors and its ratings, (learning id, outcome, injection id, at)."""
        counted = [(lid, _SIGN[outcome], iid, at) for lid, outcome, iid, at in ratings if iid and outcome in _SIGN]
        if not tasks and not counted:
            return
        with self._lock:
            votes = self._tiers.setdefault(tier, _TierVotes())
            for iid, vector in tasks:
                votes.tasks[iid] = vector
                while len(votes.tasks) > self.kept:
                    gone, _ = votes.tasks.popitem(last=False)
                    votes.ratings.pop(gone, None)
            for lid, sign, iid, at in counted:
                if iid in votes.tasks:
                    votes.ratings.setdefault(iid, []).append((lid, sign, at))
            votes.matrix = None

    def for_query(self, tiers: list[str], query: npt.NDArray[np.float32], now: int) -> dict[str, tuple[str, float]]:
        """learning id -> (its tier, its votes' sum) for a query vector, over these tiers."""
        out: dict[str, tuple[str, float]] = {}
        with self._lock:
            for name in tiers:
                votes = self._tiers.get(name)
                if votes is None or not votes.ratings:
                    continue
                if votes.matrix is None:
                    rated = list(votes.ratings)
                    votes.matrix = (rated, blob_vectors([votes.tasks[iid] for iid in rated]))
                rated, matrix = votes.matrix
                near = matrix @ query.reshape(-1)
                for at in np.flatnonzero(near >= FLOOR):
                    weight = (float(near[at]) - FLOOR) / (1.0 - FLOOR)
                    for lid, sign, when in votes.ratings[rated[at]]:
                        fade = 0.5 ** (max(0, now - when) / HALF_LIFE_MS)
                        _, total = out.get(lid, (name, 0.0))
                        out[lid] = (name, total + sign * weight * fade)
        return out


def part(total: float) -> float:
    """What a learning's votes add to its relevance."""
    return VOTE_WEIGHT * math.tanh(total)
