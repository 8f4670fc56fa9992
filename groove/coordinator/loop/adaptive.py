"""The system's adaptive parameters: Beta posteriors over [0, 1], Thompson-sampled, updated from outcomes.

`AdaptiveParam` is exactly seed 001's (and seed 000's decision 11): an update with outcome `o` and weight
`w` adds `o * w'` to alpha and `(1 - o) * w'` to beta with `w' = w / (1 + uncertainty)`; the value is the
posterior mean and the uncertainty `1 / (1 + sqrt(observations))`; `sample` draws from Beta(alpha, beta).

Each parameter maps its [0, 1] value linearly onto its own range (`Spec`). They live in the user tier's
`adaptive_params` (they describe this coordinator's swarm, not one project); one that was never updated is
at its prior. How a session's outcome moves each one (`updates`) is documented in PROTOCOL.md.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from groove.coordinator.store.relations import PARAMS
from groove.protocol import constants as C


@dataclass
class AdaptiveParam:
    """A parameter that learns via Bayesian updates (seed 001)."""

    value: float
    uncertainty: float
    observations: int
    alpha: float
    beta: float

    @classmethod
    def with_prior(cls, alpha: float, beta: float) -> AdaptiveParam:
        """A parameter at an informed prior (seed 001 `new_with_prior`)."""
        return cls(alpha / (alpha + beta), 1.0, 0, alpha, beta)

    def update(self, outcome: float, weight: float = 1.0) -> None:
        """Bayesian update toward `outcome` (in [0, 1]) with `weight`."""
        self.observations += 1
        effective = weight / (1.0 + self.uncertainty)
        self.alpha += outcome * effective
        self.beta += (1.0 - outcome) * effective
        self.value = self.alpha / (self.alpha + self.beta)
        self.uncertainty = 1.0 / (1.0 + math.sqrt(self.observations))

    def sample(self, rng: random.Random) -> float:
        """Thompson sampling: one draw from Beta(alpha, beta)."""
        return rng.betavariate(self.alpha, self.beta)


@dataclass(frozen=True)
class Spec:
    """A system parameter: what it controls, its prior, and the range its [0, 1] value maps onto."""

    name: str
    description: str
    alpha: float
    beta: float
    low: float
    high: float

    def prior(self) -> AdaptiveParam:
        """The parameter before any outcome."""
        return AdaptiveParam.with_prior(self.alpha, self.beta)

    def mapped(self, value: float) -> float:
        """The [0, 1] value in this parameter's units."""
        return self.low + value * (self.high - self.low)


SPECS: dict[str, Spec] = {
    s.name: s
    for s in (
        # prior mean 0.25 -> about 6 learnings per session
        Spec(C.PARAM_INJECTION_BUDGET, "learnings injected per session at most", 2.0, 6.0, 1.0, C.MAX_INJECTION_BUDGET),
        # prior mean 0.25 -> confidence 0.25: a new learning (0.5) is injected; a much-contradicted one is not
        Spec(C.PARAM_CONFIDENCE_THRESHOLD, "least confidence a learning needs to be injected", 2.0, 6.0, 0.0, 1.0),
        # prior mean 0.375 -> relevance 0.225: MiniLM scores related texts ~0.3-0.7, unrelated ones ~0-0.15
        Spec(C.PARAM_SIMILARITY_THRESHOLD, "least relevance to the task a learning needs", 3.0, 5.0, 0.0, 0.6),
    )
}


def budget(value: float) -> int:
    """The injection budget for a sampled value: a whole number of learnings, 1 to MAX_INJECTION_BUDGET."""
    return max(1, min(C.MAX_INJECTION_BUDGET, round(SPECS[C.PARAM_INJECTION_BUDGET].mapped(value))))


@dataclass(frozen=True)
class SessionResult:
    """What one injected session's outcome said about the learnings it was given."""

    success: bool | None  # None: unknown (nobody said; e.g. a session closed by its agent's end hook)
    injected: int
    helpful: int
    ignored: int
    contradicted: int
    had_task: bool


def updates(result: SessionResult) -> dict[str, float]:
    """The outcome each parameter is updated toward (weight 1) after a session.

    - `injection_budget`: 0.8 after a success (seed 000 `update_from_outcome`); after a failure, the share
      of the injected learnings that helped, so noisy injections pull the budget down.
    - `confidence_threshold`: the share of judged learnings (helpful or contradicted) that were
      contradicted: injecting learnings that turn out wrong raises the bar, sessions without any lower it.
    - `semantic_similarity_threshold` (only when a task text was matched): the share of injected learnings
      that were ignored: irrelevant injections demand closer matches.

    With an unknown result only `confidence_threshold` moves, and only if a learning was judged: the other two
    read the learnings nobody rated as ignored, and when nobody said how the session went that silence is no
    evidence about the budget or the relevance cut-off.
    """
    out: dict[str, float] = {}
    if result.injected and result.success is not None:
        out[C.PARAM_INJECTION_BUDGET] = 0.8 if result.success else result.helpful / result.injected
        if result.had_task:
            out[C.PARAM_SIMILARITY_THRESHOLD] = result.ignored / result.injected
    judged = result.helpful + result.contradicted
    if judged:
        out[C.PARAM_CONFIDENCE_THRESHOLD] = result.contradicted / judged
    return out


# The stored columns prior_alpha and prior_beta hold the posterior's alpha and beta (seed 000 named them).
_STORED_AS = {"alpha": "prior_alpha", "beta": "prior_beta"}


def from_row(row: list[Any]) -> AdaptiveParam:
    """A stored `adaptive_params` row as a parameter."""
    stored = dict(zip(PARAMS.cols, row, strict=True))
    return AdaptiveParam(**{f: stored[_STORED_AS.get(f, f)] for f in AdaptiveParam.__dataclass_fields__})


def to_row(name: str, param: AdaptiveParam, now: int) -> list[Any]:
    """A parameter as an `adaptive_params` row."""
    fields = {_STORED_AS.get(f, f): getattr(param, f) for f in AdaptiveParam.__dataclass_fields__}
    return [{"param_name": name, "updated_at": now, **fields}[c] for c in PARAMS.cols]


def wire(name: str, param: AdaptiveParam, updated_at: int | None) -> dict[str, Any]:
    """One parameter as `params.list` returns it."""
    spec = SPECS[name]
    return {
        "name": name,
        "description": spec.description,
        "value": param.value,
        "mapped": spec.mapped(param.value),
        "low": spec.low,
        "high": spec.high,
        "uncertainty": param.uncertainty,
        "observations": param.observations,
        "alpha": param.alpha,
        "beta": param.beta,
        "updated_at": updated_at,
    }
