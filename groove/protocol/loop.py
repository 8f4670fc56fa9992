"""Models of the learning-loop operations: `params.list`, `inject.prepare` and, for an injection whose tiers
several coordinators own, `inject.candidates` and `injection.record` (PROTOCOL.md section 11)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from groove.protocol import constants as C
from groove.protocol.models import Body, LearningId, LearningOut, Millis, Reply, ShortText, Tier
from groove.protocol.search import SearchContext


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


Task = Annotated[str, Field(min_length=1, max_length=C.MAX_QUERY_CHARS)]


def _within(tiers: list[str], context: SearchContext, field: str) -> None:
    """Tiers a request names apart from its context must be tiers that context reads, each named once."""
    reads = context.tiers()
    outside = [t for t in tiers if t not in reads]
    if outside:
        raise ValueError(f"{field}: tier {outside[0]!r} is not read by the context (it reads {', '.join(reads)})")
    if len(set(tiers)) != len(tiers):
        raise ValueError(f"{field}: a tier is named twice")


class InjectCandidatesRequest(Body):
    """`inject.candidates`: what some tiers of a session's context offer its injection, for the coordinator
    that chooses it (the home of a cluster, when another coordinator owns these tiers)."""

    tiers: Annotated[list[Tier], Field(min_length=1, max_length=3)]
    context: SearchContext = Field(default_factory=SearchContext)
    task: Task | None = None

    @model_validator(mode="after")
    def _tiers_in_context(self) -> InjectCandidatesRequest:
        _within(self.tiers, self.context, "tiers")
        return self


class OfferedLearning(Body):
    """One candidate for an injection, scored where its tier is held."""

    learning: LearningOut
    score: float
    relevance: float  # to the task (0 without one)
    reasoning: str


class Contradiction(Body):
    """A stored `contradicts` relation between two learnings."""

    from_id: LearningId
    to_id: LearningId


class Offer(Body):
    """What the owner of some tiers offered (an `inject.candidates` reply), handed on to the chooser."""

    tiers: Annotated[list[Tier], Field(min_length=1, max_length=3)]
    candidates: Annotated[list[OfferedLearning], Field(max_length=3 * C.MAX_OFFERED)]
    # `contradicts` relations stored in these tiers whose from_id is a candidate (to_id anywhere)
    contradicts: Annotated[list[Contradiction], Field(max_length=C.MAX_OFFER_LINKS)] = Field(default_factory=list)
    # learnings of other tiers that a `supersedes` relation stored in these tiers hides
    superseded: Annotated[list[LearningId], Field(max_length=C.MAX_OFFER_LINKS)] = Field(default_factory=list)


class InjectCandidatesReply(Reply):
    """The candidates of the tiers asked for, and the relations the chooser must know of: handed on unchanged
    in the chooser's `inject.prepare` (`elsewhere`)."""

    offer: Offer


class InjectPrepareRequest(Body):
    """`inject.prepare`: choose the learnings to give an agent session, and record the choice."""

    session_id: ShortText
    context: SearchContext = Field(default_factory=SearchContext)
    task: Task | None = None
    budget: Annotated[int, Field(ge=1, le=C.MAX_INJECTION_BUDGET)] | None = None
    # Thompson sampling draws at random; a seed makes one injection reproducible (tests, simulations).
    seed: Annotated[int, Field(ge=0, le=2**63 - 1)] | None = None
    # tiers of the context that another coordinator owns, with what it offered: not read here, and their
    # learnings' usage is counted by their owner (`injection.record`)
    elsewhere: Annotated[list[Offer], Field(max_length=2)] = Field(default_factory=list)

    @model_validator(mode="after")
    def _offers_fit(self) -> InjectPrepareRequest:
        offered = [t for offer in self.elsewhere for t in offer.tiers]
        _within(offered, self.context, "elsewhere")
        if C.TIER_USER in offered:
            raise ValueError("elsewhere: the user tier is the chooser's own (it holds the adaptive parameters)")
        for i, offer in enumerate(self.elsewhere):
            for j, c in enumerate(offer.candidates):
                if c.learning.tier not in offer.tiers:
                    raise ValueError(
                        f"elsewhere.{i}.candidates.{j}: learning {c.learning.id} is of tier {c.learning.tier!r}, "
                        "not one of the offer's tiers"
                    )
        ids = [c.learning.id for offer in self.elsewhere for c in offer.candidates]
        if len(set(ids)) != len(ids):
            raise ValueError("elsewhere: a learning is offered twice")
        return self


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


class InjectionRecordRequest(Body):
    """`injection.record`: the coordinator that chose an injection gave the session these learnings of tiers
    this coordinator owns: count the injection in their usage."""

    injection_id: LearningId
    learning_ids: Annotated[list[LearningId], Field(min_length=1, max_length=C.MAX_INJECTION_BUDGET)]

    @model_validator(mode="after")
    def _once_each(self) -> InjectionRecordRequest:
        if len(set(self.learning_ids)) != len(self.learning_ids):
            raise ValueError("learning_ids: a learning is named twice")
        return self


class InjectionRecordReply(Reply):
    """How many of the learnings were counted (one deleted since it was chosen is not)."""

    counted: int


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


class InjectionListRequest(Body):
    """`injection.list`: the newest injections, one page at a time (`before`: made before this injection)."""

    limit: Annotated[int, Field(ge=1, le=C.MAX_HISTORY_LIMIT)] = C.DEFAULT_HISTORY_LIMIT
    before: LearningId | None = None


class InjectionSummary(Reply):
    """One session's injection: what it was given, the parameters it drew, and how each learning turned out."""

    injection_id: str
    session_id: str
    created_at: int
    had_task: bool
    params: dict[str, float]
    closed_at: int | None
    learnings: list[str]
    outcomes: dict[str, C.OutcomeKind]  # learning id -> its outcome in this session (once closed)


class InjectionListReply(Reply):
    """Newest first; `before` for the next page is the last one's id (null: no more)."""

    injections: list[InjectionSummary]
    before: str | None


class LearningHistoryRequest(Body):
    """`learning.history`: a learning's outcomes with its confidence after each, and the sessions given it."""

    id: LearningId
    limit: Annotated[int, Field(ge=1, le=C.MAX_HISTORY_LIMIT)] = C.DEFAULT_HISTORY_LIMIT


class OutcomeEntry(Reply):
    """One outcome of a learning, and its confidence once that outcome counted."""

    at: int
    outcome: C.OutcomeKind
    injection_id: str | None
    confidence: float


class GivenTo(Reply):
    """A session whose injection held the learning."""

    injection_id: str
    session_id: str
    created_at: int
    closed_at: int | None


class LearningHistoryReply(Reply):
    """The newest `limit` outcomes, oldest first (a confidence curve reads left to right), and the newest
    `limit` sessions given it, newest first."""

    id: str
    outcomes: list[OutcomeEntry]
    given_to: list[GivenTo]


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


class ArchiveRequest(Body):
    """`learning.archive`: take a learning out of search and injection now, as the lifecycle would; it stays
    stored and readable by id, and `learning.restore` brings it back."""

    id: LearningId
    reason: ShortText | None = None


class RestoreReply(Reply):
    """The restored learning's id."""

    id: str
