"""Stored rows and their wire shapes: the column order of each relation and the conversions both ways.

The usage update here is seed 000's `UsageStats::record_outcome`, applied to stored rows.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from protocol import constants as C
from protocol.models import LearningIn, compact_json
from protocol.portability import ExportedLearning

if TYPE_CHECKING:
    from coordinator.tiers import Tier

LEARNING_COLS = (
    "id",
    "scope",
    "category",
    "description",
    "pattern_json",
    "insight",
    "confidence",
    "created_at",
    "updated_at",
    "source_type",
    "source_json",
)
USAGE_COLS = (
    "learning_id",
    "times_injected",
    "times_helpful",
    "times_ignored",
    "times_contradicted",
    "last_used",
    "confidence_alpha",
    "confidence_beta",
)
RELATION_COLS = ("from_id", "relation_type", "to_id", "weight", "created_at")
REVIEW_COLS = (
    "review_id",
    "status",
    "learning_json",
    "from_tier",
    "from_id",
    "note",
    "flags_json",
    "proposed_at",
    "decided_at",
    "curator",
    "reason",
    "learning_id",
)
INJECTION_COLS = ("injection_id", "session_id", "created_at", "learnings_json", "had_task", "params_json", "outcome_at")

# `?[cols] := *learning{cols}, *usage_stats{...}` with the usage columns renamed to stay distinct.
_U = [f"u_{c}" for c in USAGE_COLS[1:]]
JOINED_HEAD = ", ".join(LEARNING_COLS + tuple(_U))
JOINED_BODY = (
    "*learning{" + ", ".join(LEARNING_COLS) + "}, "
    "*usage_stats{learning_id: id, " + ", ".join(f"{c}: {u}" for c, u in zip(USAGE_COLS[1:], _U, strict=True)) + "}"
)


def content_hash(description: str, insight: str) -> str:
    """What makes two learnings the same content: their description and insight, case and spacing aside."""
    normal = "\n".join(" ".join(text.lower().split()) for text in (description, insight))
    return hashlib.sha256(normal.encode()).hexdigest()


def put_script(relation: str, cols: tuple[str, ...], keys: int, param: str, verb: str = "put") -> str:
    """A `:put` (or `:insert`) block writing rows given as the list parameter `param`."""
    head = ", ".join(cols)
    return f"{{?[{head}] <- ${param} :{verb} {relation} {{{', '.join(cols[:keys])} => {', '.join(cols[keys:])}}}}}"


def rm_script(relation: str, cols: tuple[str, ...], param: str) -> str:
    """A `:rm` block removing the keys given as the list parameter `param`."""
    head = ", ".join(cols)
    return f"{{?[{head}] <- ${param} :rm {relation} {{{head}}}}}"


@dataclass(slots=True)
class UsageRow:
    """A mutable usage_stats row."""

    times_injected: int
    times_helpful: int
    times_ignored: int
    times_contradicted: int
    last_used: int | None
    alpha: float
    beta: float

    @classmethod
    def prior(cls, confidence: float) -> UsageRow:
        """A new learning's stats: PRIOR_STRENGTH pseudo-observations split so alpha/(alpha+beta) = confidence."""
        return cls(0, 0, 0, 0, None, C.PRIOR_STRENGTH * confidence, C.PRIOR_STRENGTH * (1.0 - confidence))

    def record_outcome(self, outcome: str, now: int, injected: bool = False) -> None:
        """Seed 000 `UsageStats::record_outcome`, step for step.

        `injected`: the learning was given to the session by `inject.prepare`, which counted the injection
        already, so it is not counted twice.
        """
        if not injected:
            self.times_injected += 1
        self.last_used = now
        if outcome == "helpful":
            self.times_helpful += 1
            self.alpha += C.HELPFUL_ALPHA_STEP
        elif outcome == "ignored":
            self.times_ignored += 1
            self.beta += C.IGNORED_BETA_STEP
        else:
            self.times_contradicted += 1
            self.beta += C.CONTRADICTED_BETA_STEP

    def reinforce(self) -> None:
        """The same content was learned again (seed 003's reinforcement upsert, as Beta evidence)."""
        self.alpha += C.REINFORCE_ALPHA_STEP

    def demote(self) -> None:
        """A newer learning superseded this one."""
        self.beta += C.SUPERSEDED_BETA_STEP

    def decay(self, factor: float) -> None:
        """Forget evidence: alpha and beta shrink toward the uniform prior (1, 1) by `factor`."""
        self.alpha = 1.0 + (self.alpha - 1.0) * factor
        self.beta = 1.0 + (self.beta - 1.0) * factor

    def touch(self, now: int) -> None:
        """Count as used now (a restored learning starts a fresh idle period)."""
        self.last_used = now

    def inject(self, now: int) -> None:
        """`inject.prepare` gave this learning to a session."""
        self.times_injected += 1
        self.last_used = now

    @property
    def confidence(self) -> float:
        """alpha / (alpha + beta); the prior guarantees the sum is positive."""
        return self.alpha / (self.alpha + self.beta)

    def row(self, learning_id: str) -> list[Any]:
        """The stored row, in USAGE_COLS order."""
        return [
            learning_id,
            self.times_injected,
            self.times_helpful,
            self.times_ignored,
            self.times_contradicted,
            self.last_used,
            self.alpha,
            self.beta,
        ]

    def wire(self) -> dict[str, Any]:
        """The `usage` map of a learning on the wire."""
        return {
            "times_injected": self.times_injected,
            "times_helpful": self.times_helpful,
            "times_ignored": self.times_ignored,
            "times_contradicted": self.times_contradicted,
            "last_used": self.last_used,
            "confidence_alpha": self.alpha,
            "confidence_beta": self.beta,
        }


def learning_row(
    item: LearningIn | ExportedLearning, learning_id: str, confidence: float, created_at: int, now: int
) -> list[Any]:
    """A learning row in LEARNING_COLS order (from a client's learning, or an imported one)."""
    return [
        learning_id,
        item.scope,
        item.category,
        item.description,
        compact_json(item.pattern),
        item.insight,
        confidence,
        created_at,
        now,
        item.source["type"],
        compact_json(item.source),
    ]


def stored_replies(tier: Tier, request_ids: list[str]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Request id -> (op, reply share) for those of these requests already applied in `tier`."""
    rows = tier.run(
        "?[rid, op, reply] := rid in $ids, *applied_requests{request_id: rid, op, reply_json: reply}",
        {"ids": request_ids},
    )
    return {rid: (op, json.loads(reply)) for rid, op, reply in rows}


def learning_wire(row: list[Any], tier: str) -> dict[str, Any]:
    """A joined learning+usage row (JOINED_HEAD order) as the wire's learning map."""
    n = len(LEARNING_COLS)
    usage = UsageRow(*row[n:])
    return {
        "id": row[0],
        "scope": row[1],
        "category": row[2],
        "description": row[3],
        "pattern": json.loads(row[4]),
        "insight": row[5],
        "confidence": row[6],
        "source": json.loads(row[10]),
        "tier": tier,
        "created_at": row[7],
        "updated_at": row[8],
        "usage": usage.wire(),
    }


def relation_wire(row: list[Any], tier: str) -> dict[str, Any]:
    """A learning_relations row (RELATION_COLS order) as the wire's relation map."""
    return dict(zip(RELATION_COLS, row, strict=True)) | {"tier": tier}


def review_wire(row: list[Any]) -> dict[str, Any]:
    """A pending_reviews row (REVIEW_COLS order) as the wire's review map."""
    review = dict(zip(REVIEW_COLS, row, strict=True))
    review["learning"] = json.loads(review.pop("learning_json"))
    review["flags"] = json.loads(review.pop("flags_json"))
    return review
