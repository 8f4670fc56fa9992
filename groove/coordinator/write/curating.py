"""The curation ops' plans (`learning.promote`, `learning.propose`, `review.decide`): a learning copied into the
user tier, or a review queued in an enterprise tier and its decision. Part of the batch's `Planner`, which sets
up what these read (`planning.py`).
"""

from __future__ import annotations

import json
from typing import Any

from groove.coordinator.errors import Rejected, not_found
from groove.coordinator.loop.risks import scan
from groove.coordinator.store.records import learning_wire
from groove.coordinator.store.relations import JOINED_BODY, JOINED_HEAD, REVIEWS
from groove.coordinator.store.tiers import Tier
from groove.coordinator.store.tierset import TierSet
from groove.coordinator.write.parts import DecidePart, Part, PromotePart, ProposePart
from groove.protocol import constants as C
from groove.protocol.curation import PromoteRequest, ProposeRequest, ReviewDecideRequest
from groove.protocol.errors import ErrorCode
from groove.protocol.ids import uuid7
from groove.protocol.models import LearningIn

Parts = dict[str, Part]


def _copy(stored: dict[str, Any], source: dict[str, Any]) -> LearningIn:
    """A new learning with a stored one's content, global in scope, with its own source."""
    return LearningIn(
        scope=C.SCOPE_GLOBAL,
        category=stored["category"],
        description=stored["description"],
        insight=stored["insight"],
        pattern=stored["pattern"],
        confidence=stored["confidence"],
        source=source,
    )


class CurationPlans:
    """The curation ops' plan methods, apart from the batch's set-up (the state `planning.Planner` makes)."""

    tiers: TierSet
    now: int
    found: dict[str, Tier]  # learning id -> its tier, for every learning the batch names
    deciding: set[str]  # reviews decided in this batch

    def _curatable(self, learning_id: str, verb: str) -> tuple[Tier, dict[str, Any]]:
        """The tier and stored learning (as on the wire) of one that may be promoted or proposed."""
        tier = self.found.get(learning_id)
        if tier is None:
            raise not_found(learning_id)
        if tier.archived([learning_id]):
            raise Rejected(ErrorCode.CONFLICT, f"learning {learning_id} is archived; restore it before you {verb} it")
        rows = tier.run(f"?[{JOINED_HEAD}] := id = $id, {JOINED_BODY}", {"id": learning_id})
        return tier, learning_wire(rows[0], tier.name)

    def promote(self, body: PromoteRequest) -> Parts:
        """`learning.promote`: a copy in the user tier."""
        tier, stored = self._curatable(body.id, "promote")
        if not tier.name.startswith(C.TIER_PROJECT_PREFIX):
            raise Rejected(
                ErrorCode.CONFLICT,
                f"learning {body.id} is in tier {tier.name!r}; "
                "only project-tier learnings are promoted to the user tier",
            )
        source = {"type": "promoted", "from_tier": tier.name, "from_id": body.id, "original": stored["source"]}
        return {C.TIER_USER: PromotePart(uuid7(), _copy(stored, source), body.id)}

    def propose(self, body: ProposeRequest) -> Parts:
        """`learning.propose`: a review in the enterprise tier's queue, with what the pre-filter flags."""
        tier, stored = self._curatable(body.id, "propose")
        if tier.name.startswith(C.TIER_ENTERPRISE_PREFIX):
            raise Rejected(ErrorCode.CONFLICT, f"learning {body.id} is in an enterprise tier already ({tier.name!r})")
        flags = scan(
            {
                "description": stored["description"],
                "insight": stored["insight"],
                "pattern": json.dumps(stored["pattern"]),
                "note": body.note or "",
            }
        )
        review = {
            "review_id": uuid7(),
            "status": "pending",
            "learning": stored,
            "from_tier": tier.name,
            "from_id": body.id,
            "note": body.note,
            "flags": flags,
            "proposed_at": self.now,
        }
        target = C.TIER_ENTERPRISE_PREFIX + body.org
        self.tiers.get(target, create=True)
        decided = dict.fromkeys(("decided_at", "curator", "reason", "learning_id"))
        return {target: ProposePart(REVIEWS.row(review | decided))}

    def decide(self, body: ReviewDecideRequest) -> Parts:
        """`review.decide`, in the enterprise tier; an approval stores the learning there."""
        target = C.TIER_ENTERPRISE_PREFIX + body.org
        tier = self.tiers.get(target, create=False)
        if tier is None:
            raise Rejected(ErrorCode.NOT_FOUND, f"organisation {body.org!r} has no enterprise tier, so no reviews")
        rows = tier.run(
            "?[status, learning_json] := *pending_reviews{review_id, status, learning_json}, review_id = $id",
            {"id": body.review_id},
        )
        if not rows:
            raise Rejected(ErrorCode.NOT_FOUND, f"no review {body.review_id} for organisation {body.org!r}")
        status, snapshot = rows[0]
        if status != "pending" or body.review_id in self.deciding:
            raise Rejected(ErrorCode.CONFLICT, f"review {body.review_id} was already decided ({status})")
        self.deciding.add(body.review_id)
        part = DecidePart(body.review_id, body.decision, body.curator, body.reason, snapshot)
        if body.decision == "approve":
            stored = json.loads(snapshot)
            source = {
                "type": "enterprise_curated",
                "review_id": body.review_id,
                "curator": body.curator,
                "from_tier": stored["tier"],
                "from_id": stored["id"],
            }
            part.learning_id, part.item = uuid7(), _copy(stored, source)
        return {target: part}
