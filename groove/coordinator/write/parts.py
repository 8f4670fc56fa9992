"""The parts a write request is planned into, one per tier it touches.

Planning (planning.py) makes them; `TierWrite` (tierwrite.py) applies them to a tier's working copy,
dispatching on their type exhaustively: a part type added to `Part` and not handled there fails mypy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pydantic import BaseModel

from groove.coordinator.loop.lifecycle import MaintainPart, RestorePart
from groove.coordinator.store.records import VectorBlob
from groove.protocol.models import LearningIn
from groove.protocol.portability import ExportedLearning, ExportedRelation


@dataclass(slots=True)
class PutPart:
    """The learnings of a `learning.put` that go to this tier: (index in the request, id, learning)."""

    entries: list[tuple[int, str, LearningIn]]


@dataclass(slots=True)
class SessionClose:
    """The system side of an injected session's outcome: parameter updates, and the injection it closes."""

    injection_id: str
    updates: dict[str, float]  # parameter -> outcome it is updated toward (weight 1)
    ignored: int  # injected learnings left unattributed, counted as ignored


class Rating(NamedTuple):
    """One attribution as a tier applies it."""

    learning_id: str
    outcome: str
    injected: bool  # `inject.prepare` (or `injection.record`) counted the learning's injection already
    injection_id: str  # the session's injection it counts for, "" for none: the outcome log's


@dataclass(slots=True)
class OutcomePart:
    """An `outcome.record`'s share of a tier: its ratings and, in the user tier, the session's system side and
    how many of the request's attributions the session had made already (they are not counted again).
    """

    ratings: list[Rating]
    session: SessionClose | None = None
    rated_before: int = 0


@dataclass(slots=True)
class InjectPart:
    """An `inject.prepare`'s share of a tier: the chosen learnings here, and in the user tier the record."""

    learning_ids: list[str]
    record: list[Any] | None = None  # an `injections` row
    task: tuple[str, bytes] | None = None  # (injection id, its task's vector): an `injection_tasks` row
    # the whole reply, stored with the request id in every tier the injection touches: a retry after a crash
    # finds it there and repeats the same choice instead of making a new one (see injection.prepare)
    reply: dict[str, Any] | None = None


@dataclass(slots=True)
class RelationPart:
    """A `relation.put`: stored in the tier of its from_id; a new `supersedes` also demotes to_id, in its tier."""

    from_id: str
    relation_type: str
    to_id: str
    weight: float
    store: bool = True  # False: this tier holds only to_id, to be demoted
    demote: bool = False


@dataclass(slots=True)
class RelatedPart:
    """Near-duplicates the coordinator found in one tier: (newer, older, weight) `related_to` relations, each stored
    only while both its learnings are."""

    pairs: list[tuple[str, str, float]]


@dataclass(slots=True)
class DeletePart:
    """A `learning.delete`: the owner tier drops the learning; every tier drops relations that point to it."""

    learning_id: str
    owner: bool


@dataclass(slots=True)
class EmbedPart:
    """Vectors the embedding worker computed: stored only for learnings that still exist, unedited (notes are
    never edited or deleted: theirs are stored as they come)."""

    rows: list[tuple[str, VectorBlob]]
    notes: bool = False


@dataclass(slots=True)
class PromotePart:
    """A `learning.promote`, in the user tier: the copy to store and the learning it derives from."""

    copy_id: str
    item: LearningIn
    original_id: str


@dataclass(slots=True)
class ProposePart:
    """A `learning.propose`, in the enterprise tier: the `pending_reviews` row to queue."""

    row: list[Any]


@dataclass(slots=True)
class DecidePart:
    """A `review.decide`, in the enterprise tier; an approval carries the learning to store."""

    review_id: str
    decision: str
    curator: str
    reason: str | None
    snapshot: str  # the proposed learning, as JSON, for the rejection log
    learning_id: str | None = None
    item: LearningIn | None = None


@dataclass(slots=True)
class ImportPart:
    """An `import`'s share of a tier: its learnings whose ids no tier holds yet, and all its relations."""

    learnings: list[ExportedLearning]
    relations: list[ExportedRelation]
    skipped: int  # learnings of this tier in the file whose ids some tier holds already


@dataclass(slots=True)
class BoardPart:
    """A board request (coordinator/board), in its working memory's tier: the ids planning chose for what it
    makes and, for `task.complete`, the result's learnings that belong to the same tier."""

    body: BaseModel
    ids: list[str] = field(default_factory=list)
    put: PutPart | None = None


def tidying(part: object) -> bool:
    """Whether a part only tidies a tier on the side of its write: relations there pointing at a learning
    deleted elsewhere, or a lifecycle run. A coordinator of a cluster skips such a part in a tier it does not
    own (its own copy of the user tier, say) instead of refusing the write."""
    if isinstance(part, DeletePart):
        return not part.owner
    return isinstance(part, MaintainPart)


Part = (
    PutPart
    | OutcomePart
    | RelationPart
    | RelatedPart
    | DeletePart
    | EmbedPart
    | InjectPart
    | MaintainPart
    | RestorePart
    | PromotePart
    | ProposePart
    | DecidePart
    | ImportPart
    | BoardPart
)
