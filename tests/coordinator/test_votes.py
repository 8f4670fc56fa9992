"""Outcome votes: past tasks near a query vote for what helped them and against what they contradicted, derived
from the tiers' own records, exactly once, faded with age, and only in the tiers a search reads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from groove.coordinator.loop.injection import prepare
from groove.coordinator.search import votes
from groove.coordinator.search.derived import Derived
from groove.coordinator.search.ranking import find
from groove.coordinator.search.votes import HALF_LIFE_MS, Votes
from groove.coordinator.store.records import vector_blob
from groove.coordinator.write.ops import INJECT
from groove.protocol import constants as C
from groove.protocol.ids import uuid7
from groove.protocol.loop import InjectPrepareRequest
from groove.protocol.search import SearchRequest
from tests.coordinator.harness import NOW, Harness


def unit(*weights: float) -> np.ndarray:
    """A unit vector over the first few dimensions."""
    v = np.zeros(C.EMBEDDING_DIM, dtype=np.float32)
    v[: len(weights)] = weights
    return v / np.linalg.norm(v)


def test_near_past_tasks_vote_by_similarity_faded_with_age_and_only_in_the_tiers_read() -> None:
    index = Votes()
    index.apply("user", [("i1", vector_blob(unit(1, 0))), ("i2", vector_blob(unit(0, 1)))], [])
    index.apply(
        "user",
        [],
        [
            ("good", C.OUTCOME_HELPFUL, "i1", NOW),
            ("bad", C.OUTCOME_CONTRADICTED, "i1", NOW),
            ("far", C.OUTCOME_HELPFUL, "i2", NOW),
            ("plain", C.OUTCOME_IGNORED, "i1", NOW),  # ignored says nothing
            ("orphan", C.OUTCOME_HELPFUL, "", NOW),  # rated outside any injection
            ("unknown", C.OUTCOME_HELPFUL, "i9", NOW),  # an injection whose task this tier never stored
        ],
    )
    near = index.for_query(["user"], unit(1, 0), NOW)
    assert near == {"good": ("user", 1.0), "bad": ("user", -1.0)}  # i2 is orthogonal: below the floor
    halfway = unit(1, 0.5)  # cosine 0.894 to i1
    assert index.for_query(["user"], halfway, NOW)["good"][1] == pytest.approx((0.894427 - 0.6) / 0.4, rel=1e-4)
    assert index.for_query(["user"], unit(1, 0), NOW + HALF_LIFE_MS)["good"][1] == pytest.approx(0.5)
    assert index.for_query(["project:/x"], unit(1, 0), NOW) == {}
    assert votes.part(1.0) == pytest.approx(0.4 * np.tanh(1.0))


def test_votes_come_from_the_tiers_records_once_survive_a_reload_and_lift_what_helped(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    texts = ["rotate the signing key before the release", "the release notes template lives in docs"]
    learnings = [
        {
            "scope": "global",
            "category": "solution",
            "description": d,
            "insight": "noted",
            "embedding": unit(1, i).tolist(),
        }
        for i, d in enumerate(texts)
    ]
    ids = h.ok(C.OP_LEARNING_PUT, {"learnings": learnings})["ids"]
    derived = Derived(10_000, embeddings=False)
    derived.load_tier(h.tiers.open_user())
    task = "prepare the release"
    derived.queries.put(task, unit(1, 0.5).reshape(1, -1))  # the query's vector, as the socket thread fetched it
    body = InjectPrepareRequest(session_id="s1", task=task, budget=2, seed=1)
    record = prepare(h.tiers, derived, body, uuid7())
    assert record.task_vector is not None
    h.write(INJECT, record)
    rating = {"attributions": [{"learning_id": ids[1], "outcome": "helpful"}], "injection_id": record.injection_id}
    request_id = uuid7()
    for _ in range(2):  # a resend: applied once
        h.run(h.item(C.OP_OUTCOME_RECORD, rating, request_id))
    restarted = Derived(10_000, embeddings=False)  # a restart: everything from the tier's records
    restarted.load_tier(h.tiers.open_user())
    query = unit(1, 0.5).reshape(1, -1)
    voted = restarted.votes.for_query([C.TIER_USER], query, NOW)
    assert list(voted) == [ids[1]]
    assert voted[ids[1]][0] == C.TIER_USER
    assert voted[ids[1]][1] == pytest.approx(1.0)
    search = SearchRequest(text="getting a release out", vector=unit(1, 0.2).tolist(), limit=2)
    before = [c.learning_id for c in find(h.tiers, derived, search)]
    after = find(h.tiers, restarted, search)
    assert before == ids  # nearer by meaning alone
    assert [c.learning_id for c in after] == [ids[1], ids[0]]  # it helped a task like this one
    assert ", outcomes +0.29;" in after[0].reasoning()  # cosine 0.965 to the past task: 0.4 x tanh(0.91)
