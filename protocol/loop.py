"""Models of the learning-loop operations: `params.list` and `inject.prepare`."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocol import constants as C
from protocol.models import Body, LearningId, LearningOut, Millis, Reply, ShortText, Tier
from protocol.search import SearchContext


class ParamsListRequest(Body):
    """`params.list`: the system's adaptive parameters."""


class ParamOut(Reply):
    """One adaptive parameter: its Beta posterior over [0, 1] and what that means in its own units."""

    name: str
    description: str
    value: float  # posterior mean in [0, 1]
    mapped: float  # the value in the parameter's units (e.g. learnings per session)
    low: float  # the units of value 0 ...
    high: float  # ... and of value 1
    uncertainty: float
    observations: int
    alpha: float
    beta: float
    updated_at: int | None


class ParamsListReply(Reply):
    """Every adaptive parameter, stored or still at its prior."""

    params: list[ParamOut]


class InjectPrepareRequest(Body):
    """`inject.prepare`: choose the learnings to give an agent session, and record the choice."""

    session_id: ShortText
    context: SearchContext = Field(default_factory=SearchContext)
    task: Annotated[str, Field(min_length=1, max_length=C.MAX_QUERY_CHARS)] | None = None
    budget: Annotated[int, Field(ge=1, le=C.MAX_INJECTION_BUDGET)] | None = None
    # Thompson sampling draws at random; a seed makes one injection reproducible (tests, simulations).
    seed: Annotated[int, Field(ge=0, le=2**63 - 1)] | None = None


class InjectedLearning(Reply):
    """One chosen learning, its score and why it was chosen."""

    learning: LearningOut
    score: float
    reasoning: str


class InjectPrepareReply(Reply):
    """The injection: its id (give it to `outcome.record`), the learnings, the block, the sampled params."""

    injection_id: str
    learnings: list[InjectedLearning]
    markdown: str
    params: dict[str, float]


class InjectionGetRequest(Body):
    """`injection.get`: what one session was given, and whether its outcome was recorded."""

    injection_id: LearningId


class GivenLearning(Reply):
    """One learning of an injection: its id and tier, and the learning as it is now (None: deleted since)."""

    id: str
    tier: str
    learning: LearningOut | None


class InjectionGetReply(Reply):
    """A recorded injection."""

    injection_id: str
    session_id: str
    created_at: int
    had_task: bool
    params: dict[str, float]
    closed_at: int | None  # when `outcome.record` closed it; None while open
    learnings: list[GivenLearning]


class MaintainRequest(Body):
    """`maintain`: decay, archive and purge now (the coordinator also runs it periodically)."""

    # The time the rules are applied at (default: now). For tests and simulations of months passing.
    now: Millis | None = None
    tiers: Annotated[list[Tier], Field(min_length=1, max_length=64)] | None = None


class TierMaintenance(Reply):
    """What one maintenance run did in one tier."""

    tier: str
    decayed: int
    archived: int
    purged: int


class MaintainReply(Reply):
    """What a maintenance run did, in total and per tier."""

    decayed: int
    archived: int
    purged: int
    tiers: list[TierMaintenance]


class RestoreRequest(Body):
    """`learning.restore`: bring an archived learning back into search and injection."""

    id: LearningId


class RestoreReply(Reply):
    """The restored learning's id."""

    id: str
