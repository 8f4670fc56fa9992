"""Adaptive parameters (seed 001): the Bayesian update, Thompson sampling, their mapping and how sessions move
them; stored rows round-trip."""

from __future__ import annotations

import math
import random

import pytest

from groove.coordinator.loop.adaptive import SPECS, AdaptiveParam, SessionResult, budget, from_row, to_row, updates
from groove.protocol import constants as C


def test_an_update_follows_seed_001_step_for_step() -> None:
    param = AdaptiveParam.with_prior(2.0, 6.0)
    assert (param.value, param.uncertainty, param.observations) == (0.25, 1.0, 0)
    param.update(0.8)  # weight 1, uncertainty 1: effective weight 0.5
    assert param.alpha == pytest.approx(2.0 + 0.8 * 0.5)
    assert param.beta == pytest.approx(6.0 + 0.2 * 0.5)
    assert param.value == pytest.approx(param.alpha / (param.alpha + param.beta))
    assert param.uncertainty == pytest.approx(1 / (1 + math.sqrt(1)))
    param.update(0.0, weight=2.0)  # effective weight 2 / (1 + 0.5)
    assert param.beta == pytest.approx(6.1 + 2.0 / 1.5)
    assert param.observations == 2


def test_thompson_samples_are_reproducible_and_centred_on_the_posterior_mean() -> None:
    param = AdaptiveParam.with_prior(3.0, 5.0)
    first = [param.sample(random.Random(7)) for _ in range(3)]
    assert first[0] == first[1] == first[2]
    rng = random.Random(1)
    draws = [param.sample(rng) for _ in range(20_000)]
    assert all(0.0 <= d <= 1.0 for d in draws)
    assert sum(draws) / len(draws) == pytest.approx(param.value, abs=0.01)


def test_values_map_onto_each_parameter_s_range_and_the_budget_is_a_whole_number_in_bounds() -> None:
    spec = SPECS[C.PARAM_SIMILARITY_THRESHOLD]
    assert (spec.mapped(0.0), spec.mapped(1.0)) == (spec.low, spec.high)
    assert budget(0.0) == 1
    assert budget(1.0) == C.MAX_INJECTION_BUDGET
    assert budget(0.25) == round(1 + 0.25 * (C.MAX_INJECTION_BUDGET - 1))


def test_a_session_moves_each_parameter_toward_what_it_showed() -> None:
    won = updates(SessionResult(success=True, injected=4, helpful=2, ignored=1, contradicted=1, had_task=True))
    assert won == {
        C.PARAM_INJECTION_BUDGET: 0.8,
        C.PARAM_SIMILARITY_THRESHOLD: 0.25,
        C.PARAM_CONFIDENCE_THRESHOLD: pytest.approx(1 / 3),
    }
    lost = updates(SessionResult(success=False, injected=4, helpful=1, ignored=3, contradicted=0, had_task=False))
    assert lost == {C.PARAM_INJECTION_BUDGET: 0.25, C.PARAM_CONFIDENCE_THRESHOLD: 0.0}
    assert updates(SessionResult(success=True, injected=0, helpful=0, ignored=0, contradicted=0, had_task=True)) == {}


def test_an_unknown_outcome_moves_only_the_confidence_threshold_and_only_when_something_was_judged() -> None:
    """PROTOCOL.md's unknown-outcome rule: the learnings nobody rated are no evidence about the budget or the
    relevance cut-off when nobody said how the session went."""
    said = updates(SessionResult(success=None, injected=4, helpful=1, ignored=2, contradicted=1, had_task=True))
    assert said == {C.PARAM_CONFIDENCE_THRESHOLD: 0.5}
    silent = updates(SessionResult(success=None, injected=4, helpful=0, ignored=4, contradicted=0, had_task=True))
    assert silent == {}


def test_a_parameter_round_trips_through_its_stored_row() -> None:
    param = AdaptiveParam(0.4, 0.3, 5, 2.5, 3.75)
    row = to_row(C.PARAM_INJECTION_BUDGET, param, now=123)
    assert row[0] == C.PARAM_INJECTION_BUDGET
    assert row[-1] == 123
    assert from_row(row) == param
