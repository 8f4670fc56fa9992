"""What one tier's share of a batch reads before its parts apply (`tierwrite.py`), and the reads themselves: the
owners of content a put may repeat, the rows of learnings it changes, whether those it only links exist, and the
relations a deletion or an import may touch. Each is one CozoDB call for the whole batch, or none.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, assert_never

from groove.coordinator.loop.lifecycle import MaintainPart, RestorePart
from groove.coordinator.store.records import content_hash
from groove.coordinator.store.relations import USAGE
from groove.coordinator.store.tiers import Tier
from groove.coordinator.write.parts import (
    BoardPart,
    DecidePart,
    DeletePart,
    EmbedPart,
    ImportPart,
    InjectPart,
    OutcomePart,
    Part,
    PromotePart,
    ProposePart,
    PutPart,
    RelatedPart,
    RelationPart,
)

RelKey = tuple[str, str, str]

# Every stored learning has a usage row, so one join loads both.
_ROWS = f"*learning{{id, created_at, confidence}}, *usage_stats{{learning_id: id, {', '.join(USAGE.values)}}}"
_LOAD = f"?[id, created_at, confidence, {', '.join(USAGE.values)}] := id in $ids, {_ROWS}"
# The owners of content hashes with their rows, in one call: a put of content stored already reinforces its
# owner. One call, not a lookup then a load: 118 against 134 µs alone (2 vCPUs), and each call the writer makes
# lets go of the GIL and waits to get it back (a few hundred µs on a busy coordinator).
_OWNERS = (
    f"?[id, created_at, confidence, {', '.join(USAGE.values)}, scope, hash] := hash in $hashes, "
    f"*learning_hashes:by_hash{{hash, scope, learning_id: id}}, {_ROWS}"
)
_EXISTS = "?[id, created_at] := id in $ids, *learning{id, created_at}"


@dataclass(slots=True)
class Needs:
    """What the parts of one tier read before they can apply, and the reads that fetch it."""

    ids: set[str] = field(default_factory=set)  # learnings whose rows (learning, usage) are loaded
    # learnings whose existence alone is read: half the cost a learning of loading its rows (the text is most of a
    # row), and vectors and near-duplicate relations arrive by the thousand a second from a GPU
    exists: set[str] = field(default_factory=set)
    hashes: set[str] = field(default_factory=set)  # content hashes whose owners are looked up (dedupe)
    unlinked: set[str] = field(default_factory=set)  # learnings whose relations may have to go
    linked_from: set[str] = field(default_factory=set)  # learnings whose outgoing relations are loaded
    params: bool = False  # the system's adaptive parameters

    def add(self, part: Part) -> None:
        match part:
            case PutPart():
                # an id the coordinator just made cannot be stored yet: only client-given ids need a lookup
                self.ids.update(lid for _, lid, item in part.entries if item.id is not None)
                self.hashes.update(content_hash(item.description, item.insight) for _, _, item in part.entries)
            case OutcomePart():
                self.ids.update(rating.learning_id for rating in part.ratings)
                self.params = self.params or part.session is not None
            case InjectPart():
                self.ids.update(part.learning_ids)
            case MaintainPart():
                self.ids.update(part.decay)
                self.ids.update(lid for lid, _ in part.archive)
                self.ids.update(part.purge)
                self.unlinked.update(part.purge + part.unlink)
            case RestorePart():
                self.ids.add(part.learning_id)
            case PromotePart():
                self.hashes.add(content_hash(part.item.description, part.item.insight))
            case DecidePart():
                if part.item is not None:
                    self.hashes.add(content_hash(part.item.description, part.item.insight))
            case ProposePart():
                pass  # a new review row: nothing to read
            case RelationPart():
                self.exists.add(part.from_id)
                (self.ids if part.demote else self.exists).add(part.to_id)  # a demotion changes its usage
            case RelatedPart():
                self.exists.update(lid for pair in part.pairs for lid in pair[:2])
            case EmbedPart():
                if not part.notes:
                    self.exists.update(lid for lid, _ in part.rows)
            case DeletePart():
                self.ids.add(part.learning_id)
                self.unlinked.add(part.learning_id)
            case ImportPart():
                self.ids.update(item.id for item in part.learnings)
                self.linked_from.update(rel.from_id for rel in part.relations)
            case BoardPart():
                if part.put is not None:
                    self.add(part.put)
            case _:
                assert_never(part)

    def owners(self, tier: Tier) -> list[list[Any]]:
        """The stored owners of the content hashes asked for, with their rows (`_OWNERS`' columns)."""
        stored = tier.content_hashes.maybe(self.hashes)  # most content is new: no lookup at all
        return tier.run(_OWNERS, {"hashes": sorted(stored)}) if stored else []

    def rows(self, tier: Tier, loaded: Collection[str]) -> list[list[Any]]:
        """The stored rows (`_LOAD`'s columns) of the learnings asked for, but those `loaded` already."""
        ids = self.ids - set(loaded)
        return tier.run(_LOAD, {"ids": sorted(ids)}) if ids else []

    def existing(self, tier: Tier, loaded: Collection[str]) -> list[tuple[str, int]]:
        """(id, created_at) of the learnings whose existence alone is asked for and that are stored."""
        only = self.exists - self.ids - set(loaded)
        return [(lid, created_at) for lid, created_at in tier.run(_EXISTS, {"ids": sorted(only)})] if only else []

    def relations(self, tier: Tier) -> set[RelKey]:
        """The stored relations from or to the learnings that may lose theirs, and from those linked from."""
        touching, linked_from = sorted(self.unlinked), sorted(self.linked_from)
        keys = "from_id, relation_type, to_id"
        rows: list[list[Any]] = []
        if touching or linked_from:
            rows += tier.run(
                f"?[{keys}] := from_id in $ids, *learning_relations{{{keys}}}", {"ids": touching + linked_from}
            )
        if touching:
            rows += tier.run(f"?[{keys}] := to_id in $ids, *learning_relations:by_to{{{keys}}}", {"ids": touching})
        return {(row[0], row[1], row[2]) for row in rows}
