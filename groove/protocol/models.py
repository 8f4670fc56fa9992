"""Pydantic models of every operation's request body and reply body (protocol version 1).

Bodies are strict: a field of the wrong type or one the operation does not know is `bad_request` at once."""

from __future__ import annotations

import json
from typing import Annotated, Any

import orjson
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from groove.protocol import constants as C
from groove.protocol.ids import is_uuid7
from groove.protocol.scopes import normalise_root, validate_scope, validate_tier


class Body(BaseModel):
    """Base of every request body: strict types, unknown fields rejected."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, defer_build=True)


class Reply(BaseModel):
    """Base of every reply body: fields added by later coordinators are ignored, so old clients keep working."""

    model_config = ConfigDict(extra="ignore", defer_build=True)


def _uuid7(value: str) -> str:
    lowered = value.lower()
    if not is_uuid7(lowered):
        raise ValueError(f"{value[:60]!r} is not a UUIDv7 string (xxxxxxxx-xxxx-7xxx-[89ab]xxx-xxxxxxxxxxxx)")
    return lowered


def compact_json(value: Any) -> str:
    """Compact JSON for values stored as text (patterns, sources, stored replies). orjson: a tenth of the
    standard encoder's time, which a writer pays several times per learning. It writes NaN and infinity as
    null, so input is checked for them before it is stored (`_json_value`)."""
    return orjson.dumps(value).decode()


# Only to name what orjson would have turned into null: the standard encoder refuses NaN and infinity.
_strict_json = json.JSONEncoder(allow_nan=False).encode


def _json_value(limit: int, what: str) -> Any:
    def check(value: Any) -> Any:
        if value is None:
            return value
        try:
            encoded = orjson.dumps(value)  # refuses map keys that are not strings, bytes, and other non-JSON
            if b"null" in encoded:  # a real null, or a NaN or infinity orjson wrote as null
                _strict_json(value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{what} must be JSON-representable (maps with string keys, no bytes): {exc}") from None
        if len(encoded) > limit:
            raise ValueError(f"{what} is {len(encoded)} bytes as JSON; the limit is {limit}")
        return value

    return check


def _source(value: dict[str, Any]) -> dict[str, Any]:
    kind = value.get("type")
    if kind not in C.SOURCE_TYPES:
        raise ValueError(f"source.type must be one of {', '.join(C.SOURCE_TYPES)}; got {kind!r}")
    return value


def _visible(value: str) -> str:
    # a whitespace-only learning would be stored, matched by nothing, and injected as an empty bullet
    if not value.strip():
        raise ValueError("must contain more than whitespace")
    return value


def _root(value: str) -> str:
    return normalise_root(value, "project")


NonBlank = AfterValidator(_visible)
UuidV7 = Annotated[str, AfterValidator(_uuid7)]
LearningId = UuidV7
Scope = Annotated[str, AfterValidator(validate_scope)]
ProjectRoot = Annotated[str, Field(min_length=1, max_length=C.MAX_SCOPE_CHARS), AfterValidator(_root)]
Tier = Annotated[str, AfterValidator(validate_tier)]
Category = C.Category
RelationType = C.RelationType
OutcomeKind = C.OutcomeKind
Probability = Annotated[float, Field(ge=0.0, le=1.0)]
Source = Annotated[dict[str, Any], AfterValidator(_source), AfterValidator(_json_value(C.MAX_PATTERN_BYTES, "source"))]
Pattern = Annotated[Any, AfterValidator(_json_value(C.MAX_PATTERN_BYTES, "pattern"))]


def _nonzero(vector: list[float]) -> list[float]:
    if not any(vector):
        raise ValueError("an all-zero vector has no direction")
    return vector


Vector = Annotated[list[float], Field(min_length=C.EMBEDDING_DIM, max_length=C.EMBEDDING_DIM), AfterValidator(_nonzero)]
Text = Annotated[str, Field(min_length=1), AfterValidator(_visible)]
ShortText = Annotated[str, Field(min_length=1, max_length=C.MAX_AGENT_FIELD_CHARS), AfterValidator(_visible)]
Millis = Annotated[int, Field(ge=0)]


# --- control -------------------------------------------------------------------------------------------


class PingRequest(Body):
    """`ping`: no fields."""


class StorageFault(Reply):
    """A tier whose disk refuses writes: `storage_full` or `storage_io`, the operating system's message, since
    when (ms since the epoch) and how many writes were refused since."""

    code: str
    message: str
    since_ms: int
    refused: int


class PingReply(Reply):
    """Coordinator version, seconds since it started, and what degrades it: the tiers whose disk refuses writes,
    and those whose files could not be opened (tier -> why)."""

    version: str
    protocol: int
    uptime_s: float
    storage_faults: dict[str, StorageFault] = {}  # absent from coordinators before it
    tiers_unavailable: dict[str, str] = {}  # absent from coordinators before it


class HelloRequest(Body):
    """`hello`: an agent introduces itself; the coordinator adds it to its registry."""

    agent_id: ShortText
    role: ShortText
    pid: Annotated[int, Field(ge=0)]
    host: ShortText
    status: C.AgentStatus | None = None
    task_id: ShortText | None = None  # the board task it works on


class HeartbeatRequest(Body):
    """`heartbeat`: an agent that said `hello` is still alive (sent from any connection, e.g. a side thread),
    and what it is doing: `status` and `task_id` replace what it said before when given."""

    agent_id: ShortText
    status: C.AgentStatus | None = None
    task_id: ShortText | None = None


class EmptyReply(Reply):
    """A reply with no fields."""


# --- learnings -----------------------------------------------------------------------------------------


class LearningIn(Body):
    """A learning as a client writes it."""

    id: LearningId | None = None
    scope: Scope
    category: Category
    description: Annotated[str, Field(min_length=1, max_length=C.MAX_DESCRIPTION_CHARS), AfterValidator(_visible)]
    insight: Annotated[str, Field(min_length=1, max_length=C.MAX_INSIGHT_CHARS), AfterValidator(_visible)]
    pattern: Pattern = None
    confidence: Probability = C.DEFAULT_CONFIDENCE
    source: Source = Field(default_factory=lambda: {"type": C.DEFAULT_SOURCE_TYPE})
    embedding: Vector | None = None
    embedding_model: C.EmbeddingModel | None = None


class LearningPutRequest(Body):
    """`learning.put`: store learnings; the tier follows from each scope unless `tier` names one."""

    learnings: Annotated[list[LearningIn], Field(min_length=1, max_length=C.MAX_LEARNINGS_PER_PUT)]
    tier: Tier | None = None


class LearningPutReply(Reply):
    """The id of each learning, in request order, and whether it was new."""

    ids: list[str]
    created: list[bool]


class Usage(Reply):
    """A learning's usage statistics (seed 000 `usage_stats`)."""

    times_injected: int
    times_helpful: int
    times_ignored: int
    times_contradicted: int
    last_used: int | None
    confidence_alpha: float
    confidence_beta: float


class LearningOut(Reply):
    """A stored learning as the coordinator returns it."""

    id: str
    scope: str
    category: str
    description: str
    insight: str
    pattern: Any = None
    confidence: float
    source: dict[str, Any]
    tier: str
    created_at: int
    updated_at: int
    usage: Usage
    # set by learning.get and learning.list: archived by the lifecycle, so left out of search and injection
    # until `learning.restore`; other replies leave it false
    archived: bool = False


class LearningGetRequest(Body):
    """`learning.get`: one learning by id, from whichever tier holds it."""

    id: LearningId


class LearningGetReply(Reply):
    """The learning."""

    learning: LearningOut


class LearningListRequest(Body):
    """`learning.list`: learnings in id (creation) order, filtered, one page at a time."""

    scope_prefix: Annotated[str, Field(max_length=C.MAX_SCOPE_CHARS)] | None = None
    category: Category | None = None
    tier: Tier | None = None
    limit: Annotated[int, Field(ge=1, le=C.MAX_LIST_LIMIT)] = C.DEFAULT_LIST_LIMIT
    cursor: LearningId | None = None


class LearningListReply(Reply):
    """One page; `cursor` is passed back to get the next page and is null on the last one."""

    learnings: list[LearningOut]
    cursor: str | None


class LearningDeleteRequest(Body):
    """`learning.delete`: remove a learning, its usage, embedding and relations."""

    id: LearningId


class LearningDeleteReply(Reply):
    """Whether a learning was there to delete."""

    deleted: bool


# --- outcomes and relations ----------------------------------------------------------------------------


class Attribution(Body):
    """How one learning turned out in a session."""

    learning_id: LearningId
    outcome: OutcomeKind
    # set by a client that splits one session's outcome over the coordinators of a cluster: the learning was
    # in the session's injection, chosen on another coordinator, and `injection.record` counted it already
    injected: bool = False


class OutcomeRecordRequest(Body):
    """`outcome.record`: apply attributions to learnings' usage statistics and confidence."""

    attributions: Annotated[list[Attribution], Field(max_length=C.MAX_ATTRIBUTIONS_PER_OUTCOME)] = Field(
        default_factory=list
    )
    session_id: ShortText | None = None
    injection_id: LearningId | None = None
    success: bool | None = None
    # the session's attributions of learnings that other coordinators own (a cluster): applied there, and
    # only counted here in the figures of the session this request closes
    elsewhere: Annotated[list[Attribution], Field(max_length=C.MAX_ATTRIBUTIONS_PER_OUTCOME)] = Field(
        default_factory=list
    )

    @model_validator(mode="after")
    def _coherent(self) -> OutcomeRecordRequest:
        if not self.attributions and self.injection_id is None:
            raise ValueError("give 'attributions', an 'injection_id', or both")
        if self.success is not None and self.injection_id is None:
            raise ValueError("'success' needs the 'injection_id' of the session's injection")
        if self.elsewhere and self.injection_id is None:
            raise ValueError("'elsewhere' needs the 'injection_id' of the session it closes")
        if self.injection_id is not None and any(a.injected for a in self.attributions + self.elsewhere):
            raise ValueError(
                "'injected' is only for an outcome without 'injection_id' (the injection says what it gave)"
            )
        here = {a.learning_id for a in self.attributions}
        both = [a.learning_id for a in self.elsewhere if a.learning_id in here]
        if both:
            raise ValueError(f"learning {both[0]} is both in 'attributions' and in 'elsewhere'")
        return self


class OutcomeRecordReply(Reply):
    """How many attributions were applied; `ignored`: injected learnings left unattributed, counted ignored;
    `rated_before`: attributions of learnings the session had rated already, not counted again."""

    applied: int
    ignored: int = 0
    rated_before: int = 0


class RelationPutRequest(Body):
    """`relation.put`: `from_id --relation_type--> to_id`, stored in from_id's tier."""

    from_id: LearningId
    relation_type: RelationType
    to_id: LearningId
    weight: Probability = 1.0


class RelationOut(Reply):
    """A stored relation."""

    from_id: str
    relation_type: str
    to_id: str
    weight: float
    created_at: int
    tier: str


class RelationListRequest(Body):
    """`relation.list`: relations touching one learning."""

    id: LearningId
    relation_type: RelationType | None = None
    direction: C.Direction = "both"


class RelationListReply(Reply):
    """The relations found."""

    relations: list[RelationOut]


# --- stats ---------------------------------------------------------------------------------------------


class AgentsListRequest(Body):
    """`agents.list`: the agents that said `hello`, all of them or those in one state."""

    state: C.AgentState | None = None


class AgentOut(Reply):
    """One agent as the registry knows it; times are seconds since the epoch."""

    agent_id: str
    role: str
    pid: int
    host: str
    first_seen: float
    last_seen: float
    requests: int
    state: str
    status: str = "idle"
    task_id: str | None = None
    tasks_completed: int = 0  # board tasks it completed or failed since the coordinator started
    tasks_failed: int = 0


class AgentsListReply(Reply):
    """Agents, most recently seen first."""

    agents: list[AgentOut]
