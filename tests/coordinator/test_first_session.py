"""A fresh install's sessions always get their best match: exploration (Thompson-sampled thresholds) never
withholds the learning that matches the task, while the rest of the choice still explores."""

from __future__ import annotations

from pathlib import Path

from groove.coordinator.loop.injection import prepare
from groove.coordinator.search.derived import Derived
from groove.protocol import constants as C
from groove.protocol.ids import uuid7
from groove.protocol.loop import InjectPrepareRequest
from tests.coordinator.harness import Harness

SESSIONS = 1000


def test_the_exact_match_is_given_in_every_fresh_session(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    texts = [
        ("Flaky socket tests on CI", "Retry the socket tests with a fresh port"),
        ("Slow Docker builds", "Order the Dockerfile layers from least to most changing"),
        ("Migrations lose data", "Write a down migration with every up migration"),
        ("Timezone bugs in reports", "Store timestamps in UTC and convert at the edges"),
    ]
    learnings = [{"scope": "global", "category": "solution", "description": d, "insight": i} for d, i in texts]
    ids = harness.ok(C.OP_LEARNING_PUT, {"learnings": learnings})["ids"]
    derived = Derived(10_000, embeddings=False)  # words alone: the exact match is found by its words
    derived.load_tier(harness.tiers.open_user())
    given = other = 0
    for seed in range(SESSIONS):
        body = InjectPrepareRequest(session_id=f"s{seed}", task="docker builds are slow", seed=seed)
        chosen = [lid for lid, _ in prepare(harness.tiers, derived, body, uuid7()).learnings]
        given += ids[1] in chosen
        other += len(chosen) - (ids[1] in chosen)
    assert given / SESSIONS >= 0.995, given
    # the threshold is still sampled: learnings that match less are only sometimes given (none match here)
    assert other == 0


def test_the_exemption_ends_at_the_first_injection_and_covers_a_session_without_a_task(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    item = {"scope": "global", "category": "solution", "description": "Slow Docker builds",
            "insight": "Order the Dockerfile layers from least to most changing", "confidence": 0.3}  # fmt: skip
    [lid] = harness.ok(C.OP_LEARNING_PUT, {"learnings": [item]})["ids"]
    derived = Derived(10_000, embeddings=False)
    derived.load_tier(harness.tiers.open_user())

    def given(task: str | None, sessions: int = 200) -> int:
        bodies = [InjectPrepareRequest(session_id=f"s{seed}", task=task, seed=seed) for seed in range(sessions)]
        return sum(lid in [x for x, _ in prepare(harness.tiers, derived, b, uuid7()).learnings] for b in bodies)

    assert given("docker builds are slow") == 200  # below most drawn thresholds, yet the best match: spared
    assert given(None) == 200  # without a task the most confident is the best candidate
    harness.ok(C.OP_OUTCOME_RECORD, {"attributions": [{"learning_id": lid, "outcome": "ignored"}]})
    derived.load_tier(harness.tiers.open_user())
    assert given("docker builds are slow") < 190  # given to a session before: the drawn threshold applies again
