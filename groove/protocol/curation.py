"""Models of promotion and curation: `learning.promote`, `learning.propose`, `review.list`, `review.decide`."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, model_validator

from groove.protocol import constants as C
from groove.protocol.models import Body, LearningId, Reply, ShortText

OrgId = Annotated[str, Field(min_length=1, max_length=C.MAX_ORG_CHARS, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]


class PromoteRequest(Body):
    """`learning.promote`: copy a project-tier learning into the user tier, at once."""

    id: LearningId


class PromoteReply(Reply):
    """The copy's id, and whether it is new (the same content there already is reinforced instead)."""

    id: str
    created: bool


class ProposeRequest(Body):
    """`learning.propose`: put a user- or project-tier learning in an enterprise's review queue."""

    id: LearningId
    org: OrgId
    note: Annotated[str, Field(max_length=C.MAX_DESCRIPTION_CHARS)] | None = None


class RiskFlag(Reply):
    """Something the pre-filter found that should not leave a machine or a person: kind, field, excerpt."""

    kind: str
    field: str
    excerpt: str


class ProposeReply(Reply):
    """The review's id, and what the pre-filter flagged (the proposal is queued either way)."""

    review_id: str
    flags: list[RiskFlag]


class ReviewListRequest(Body):
    """`review.list`: an enterprise's proposals, oldest first."""

    org: OrgId
    status: C.ReviewStatus | None = "pending"
    limit: Annotated[int, Field(ge=1, le=C.MAX_REVIEW_LIST)] = 100


class ReviewOut(Reply):
    """One proposal and, once decided, its decision."""

    review_id: str
    status: str
    learning: dict[str, Any]  # the proposed learning as it was when proposed
    from_tier: str
    from_id: str
    note: str | None
    flags: list[RiskFlag]
    proposed_at: int
    decided_at: int | None
    curator: str | None
    reason: str | None
    learning_id: str | None  # the enterprise learning an approval made


class ReviewListReply(Reply):
    """The proposals asked for."""

    reviews: list[ReviewOut]


class ReviewDecideRequest(Body):
    """`review.decide`: approve (an enterprise-tier learning is made) or reject (logged with a reason)."""

    org: OrgId
    review_id: LearningId
    decision: C.ReviewDecision
    curator: ShortText
    reason: Annotated[str, Field(min_length=1, max_length=C.MAX_DESCRIPTION_CHARS)] | None = None

    @model_validator(mode="after")
    def _reasoned(self) -> ReviewDecideRequest:
        if self.decision == "reject" and self.reason is None:
            raise ValueError("a rejection needs a 'reason'")
        return self


class ReviewDecideReply(Reply):
    """The review's new status and, for an approval, the enterprise learning's id."""

    review_id: str
    status: str
    learning_id: str | None
