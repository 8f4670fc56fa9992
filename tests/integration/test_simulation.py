"""The learning loop learns: 200 learnings with hidden helpfulness, 1,000 simulated sessions.

Ten topics of twenty learnings each; a session's task names one topic, so it has twenty relevant
candidates and a budget of five. A quarter of the learnings are truly helpful, half mostly ignored, a
quarter harmful; each injected learning's attribution is drawn from its hidden rates, and a session
succeeds when something helped and nothing was contradicted. The curve is printed (pytest -s shows it).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from groove.client import GrooveClient
from groove.protocol import constants as C
from tests.helpers import learning

TOPICS = ["retries", "caching", "logging", "migrations", "fixtures", "timeouts", "packaging", "profiling", "linting"]
TOPICS.append("secrets")
SESSIONS = 1000
WINDOW = 100
BUDGET = 5


@dataclass(frozen=True)
class Truth:
    """A learning's hidden nature: how often it helps and how often it is wrong when injected."""

    kind: str
    helpful: float
    contradicted: float


KINDS = [Truth("helpful", 0.8, 0.02)] * 5 + [Truth("neutral", 0.15, 0.05)] * 10 + [Truth("harmful", 0.05, 0.6)] * 5


def attribution(rng: random.Random, truth: Truth) -> str:
    roll = rng.random()
    if roll < truth.helpful:
        return C.OUTCOME_HELPFUL
    if roll < truth.helpful + truth.contradicted:
        return C.OUTCOME_CONTRADICTED
    return C.OUTCOME_IGNORED


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_injections_shift_to_helpful_learnings_and_parameters_settle(client: GrooveClient) -> None:
    rng = random.Random(2026)
    truth: dict[str, Truth] = {}
    for topic in TOPICS:
        items = [
            learning(description=f"{topic} practice {i}", insight=f"what we do about {topic}, variant {i}")
            for i in range(len(KINDS))
        ]
        for lid, kind in zip(client.put_learnings(items).ids, KINDS, strict=True):
            truth[lid] = kind
    chance = sum(t.kind == "helpful" for t in truth.values()) / len(truth)
    injected: list[list[str]] = []
    params_at: list[dict[str, float]] = []
    for session in range(SESSIONS):
        topic = rng.choice(TOPICS)
        reply = client.inject(f"sim-{session}", task=f"{topic}", budget=BUDGET, seed=session)
        given = [item.learning.id for item in reply.learnings]
        assert len(given) <= BUDGET
        outcomes = [(lid, attribution(rng, truth[lid])) for lid in given]
        said = [o for o in outcomes if o[1] != C.OUTCOME_IGNORED]  # ignored ones are implied by the injection
        success = any(o == C.OUTCOME_HELPFUL for _, o in outcomes) and all(
            o != C.OUTCOME_CONTRADICTED for _, o in outcomes
        )
        client.close_session(said, injection_id=reply.injection_id, success=success)
        injected.append(given)
        if (session + 1) % (WINDOW // 2) == 0:
            params_at.append({p.name: p.value for p in client.params()})

    def share(kind: str, window: list[list[str]]) -> float:
        flat = [lid for given in window for lid in given]
        return sum(truth[lid].kind == kind for lid in flat) / max(1, len(flat))

    print(f"\nsessions  helpful share  harmful share  (chance: helpful {chance:.2f})  params at window end")
    for start in range(0, SESSIONS, WINDOW):
        window = injected[start : start + WINDOW]
        values = params_at[(start + WINDOW) // (WINDOW // 2) - 1]
        shown = "  ".join(f"{name.split('_')[0]} {value:.3f}" for name, value in values.items())
        sessions = f"{start + 1:>4}-{start + WINDOW:<5}"
        print(f"{sessions}  {share('helpful', window):>12.2f}  {share('harmful', window):>13.2f}  {shown}")

    last = injected[-WINDOW:]
    assert share("helpful", last) >= 2.5 * chance  # clearly more than chance gives them
    # harmful learnings are (all but) no longer injected. Not exactly 0: the last window's share depends on the
    # random path the first sessions took. Over seeds 1-6 of this simulation it was 0.01 in one window of the
    # last three both with and without the first-session exemption (inject.prepare), and 0.006 for seed 2026
    # with it.
    assert share("harmful", last) <= 0.01
    assert share("helpful", last) > share("helpful", injected[:WINDOW])
    # settled (seed 001 adaptive_convergence): over the last 200 sessions no parameter moved by more than 0.02
    for name in params_at[-1]:
        recent = [p[name] for p in params_at[-5:]]
        assert max(recent) - min(recent) < 0.02, (name, recent)
    budget = {p.name: p for p in client.params()}[C.PARAM_INJECTION_BUDGET]
    assert budget.observations == sum(1 for given in injected if given)  # sessions given anything
    assert budget.uncertainty < 0.05
