"""One tier's share of a group commit: write parts applied in order to a working copy of the rows they touch.

The batcher hands each tier the parts of the batch's requests that touch it. `TierWrite` loads the rows
those parts read (`reads.py`), applies each part in queue order to the working copy (so two outcomes for one learning in
one batch both count), and `render.py` turns the final state into one CozoDB script of `{...}` blocks: one
transaction, all or nothing, carrying the applied request ids with the data they changed.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any, assert_never

from groove.coordinator.board.state import Board
from groove.coordinator.errors import already_closed, not_found
from groove.coordinator.loop.adaptive import SPECS, AdaptiveParam, from_row
from groove.coordinator.loop.lifecycle import MaintainPart, RestorePart
from groove.coordinator.search.embedder import embedding_text, normalise
from groove.coordinator.store.records import UsageRow, VectorBlob, content_hash, learning_row, vector_blob
from groove.coordinator.store.relations import LEARNING, PARAMS, RELATIONS, REVIEWS
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
from groove.coordinator.write.reads import Needs, RelKey
from groove.protocol import constants as C
from groove.protocol.models import compact_json

_CONFIDENCE = LEARNING.at["confidence"]
# Tells apart one learning's outcomes logged in the same millisecond. Restarting it with the process is safe:
# a restart takes longer than a millisecond, so `at` differs.
_LOG_SEQ = itertools.count()
_FLAGS = REVIEWS.at["flags_json"]


class TierWrite:
    """The working copy of one tier's rows touched by one batch."""

    def __init__(self, tier: Tier, parts: list[Part], now: int, board: Board | None = None) -> None:
        self.tier = tier
        self.now = now
        self.board = board  # the tier's board, when a part is a board request
        needs = Needs()
        for part in parts:
            needs.add(part)
        self.params: dict[str, AdaptiveParam] | None = None  # the system parameters, loaded if an outcome needs them
        self.params_dirty: set[str] = set()
        if needs.params:
            self._load_params()
        # (scope, content hash) -> the learning holding that content, for the learnings this batch puts
        self.hash_owner: dict[tuple[str, str], str] = {}
        self.hashes_put: dict[str, list[Any]] = {}  # learning id -> its learning_hashes row
        # id -> created_at, for learnings that exist (None once deleted in this batch)
        self.created: dict[str, int | None] = {}
        self.confidence: dict[str, float] = {}
        self.usage: dict[str, UsageRow] = {}
        for row in needs.owners(tier):
            self.hash_owner[(row[-2], row[-1])] = row[0]
            self._loaded(row[:-2])
        for row in needs.rows(tier, loaded=self.created.keys()):
            self._loaded(row)
        self.created.update(needs.existing(tier, loaded=self.created.keys()))
        self.existed = set(self.created)
        # relation changes: a row to put, or None to remove; `stored_relations` are stored ones this batch may
        # remove or must not put again
        self.relations: dict[RelKey, list[Any] | None] = {}
        self.stored_relations: set[RelKey] = needs.relations(tier)
        self.learning_put: dict[str, list[Any]] = {}
        self.usage_dirty: set[str] = set()
        self.confidence_dirty: set[str] = set()
        self.injections: list[list[Any]] = []  # `injections` rows to put
        self.archived: dict[str, list[Any]] = {}  # learning id -> `archived` row to put
        self.unarchived: list[str] = []
        self.last_run: int | None = None  # when a maintenance run in this batch ran
        self.reviews_put: list[list[Any]] = []  # new `pending_reviews` rows
        self.decided: list[list[Any]] = []  # [review id, status, decided_at, curator, reason, learning id]
        self.rejections: list[list[Any]] = []  # `rejection_log` rows
        self.closed: dict[str, int] = {}  # injection id -> when its outcome was recorded
        self.outcome_log: list[list[Any]] = []  # `outcome_log` rows
        self.task_vectors: list[list[Any]] = []  # `injection_tasks` rows
        self.texts: dict[str, str] = {}  # learnings put in this batch
        self.vectors: dict[str, VectorBlob | None] = {}  # a vector to store, or None to drop a stale one
        self.note_vectors: dict[str, VectorBlob] = {}  # note id -> its vector
        self.applied: list[list[Any]] = []

    def _loaded(self, row: list[Any]) -> None:
        """Take a learning's stored row and usage (`_LOAD`'s columns) into the working copy."""
        self.created[row[0]] = row[1]
        self.confidence[row[0]] = row[2]
        self.usage[row[0]] = UsageRow(*row[3:])

    def _load_params(self) -> dict[str, AdaptiveParam]:
        if self.params is None:
            stored = {row[0]: from_row(row) for row in self.tier.run(PARAMS.scan())}
            self.params = {name: stored.get(name, spec.prior()) for name, spec in SPECS.items()}
        return self.params

    def exists(self, learning_id: str) -> bool:
        """Whether the learning is stored (or put) in this tier and not deleted by this batch."""
        return self.created.get(learning_id) is not None

    def apply(self, request_id: str, op: str, part: Part, record: bool = True, digest: str = "") -> dict[str, Any]:
        """Apply one part to the working copy; returns this tier's share of the reply.

        `record` stores the request id with the reply and the body's digest (every client write; not the
        internal ones), so that a resend is answered, or refused if its body differs.
        Raises Rejected, leaving the working copy untouched, if the part cannot apply.
        """
        match part:
            case EmbedPart():
                reply = self._embed(part)
            case PutPart():
                reply = self._put(part)
            case OutcomePart():
                reply = self._outcome(part)
            case InjectPart():
                reply = self._inject(part)
            case MaintainPart():
                reply = self._maintain(part)
            case RestorePart():
                reply = self._restore(part)
            case PromotePart():
                reply = self._promote(part)
            case ProposePart():
                self.reviews_put.append(part.row)
                reply = {"review_id": part.row[0], "flags": json.loads(part.row[_FLAGS])}
            case DecidePart():
                reply = self._decide(part)
            case RelationPart():
                reply = self._relation(part)
            case RelatedPart():
                reply = self._related(part)
            case DeletePart():
                reply = self._delete(part)
            case ImportPart():
                reply = self._import(part)
            case BoardPart():
                reply = self._board(part)
            case _:
                assert_never(part)
        if record:
            self.applied.append([request_id, op, compact_json(reply), self.now, digest])
        return reply

    def _put(self, part: PutPart) -> dict[str, Any]:
        reply: dict[str, list[Any]] = {"idx": [], "ids": [], "created": []}
        for index, lid, item in part.entries:
            key = (item.scope, content_hash(item.description, item.insight))
            owner = self.hash_owner.get(key)
            if item.id is None and owner is not None and self.exists(owner):
                # the same content again, in the same scope: reinforce the learning that has it
                self._set_usage(owner, lambda usage: usage.reinforce())
                reply["idx"].append(index)
                reply["ids"].append(owner)
                reply["created"].append(False)
                continue
            self.hash_owner[key] = lid
            self.hashes_put[lid] = [lid, *key]
            stored_at = self.created.get(lid)
            is_new = stored_at is None
            created_at = self.now if stored_at is None else stored_at
            if is_new:
                # A new learning starts from its stated confidence; an existing one keeps the confidence its
                # outcomes earned and only its content changes.
                self.usage[lid] = UsageRow.prior(item.confidence)
                self.usage_dirty.add(lid)
                self.confidence[lid] = item.confidence
            self.created[lid] = created_at
            self.learning_put[lid] = learning_row(item, lid, self.confidence[lid], created_at, self.now)
            self.confidence_dirty.discard(lid)
            self.texts[lid] = embedding_text(item.description, item.insight)
            if item.embedding is not None:
                self.vectors[lid] = vector_blob(normalise(item.embedding)[0])
            elif not is_new:
                self.vectors[lid] = None  # the text may have changed: its old vector would mislead
            reply["idx"].append(index)
            reply["ids"].append(lid)
            reply["created"].append(is_new)
        return reply

    def _board(self, part: BoardPart) -> dict[str, Any]:
        if self.board is None:
            raise TypeError("a board part needs the tier's board")  # the batcher passes it: a bug otherwise
        reply = self.board.apply(part.body, part.ids, self.now)  # first: it may refuse, the put cannot
        if part.put is not None:
            reply |= self._put(part.put)
        return reply

    def _outcome(self, part: OutcomePart) -> dict[str, Any]:
        for rating in part.ratings:
            if not self.exists(rating.learning_id):
                raise not_found(rating.learning_id)
        if part.session is not None and part.session.injection_id in self.closed:
            raise already_closed(part.session.injection_id)
        for lid, outcome, injected, injection_id in part.ratings:
            self._set_usage(lid, lambda usage: usage.record_outcome(outcome, self.now, injected))  # noqa: B023
            self.outcome_log.append([lid, self.now, next(_LOG_SEQ), outcome, injection_id, self.confidence[lid]])
        reply = {"applied": len(part.ratings), "rated_before": part.rated_before}
        if part.session is None:
            return reply
        params = self._load_params()
        for name, toward in part.session.updates.items():
            params[name].update(toward)
            self.params_dirty.add(name)
        self.closed[part.session.injection_id] = self.now
        return reply | {"ignored": part.session.ignored}

    def _set_usage(self, lid: str, change: Callable[[UsageRow], None]) -> None:
        """Change a stored learning's usage row; its confidence follows."""
        usage = self.usage[lid]
        change(usage)
        self.usage_dirty.add(lid)
        self.confidence[lid] = usage.confidence
        row = self.learning_put.get(lid)
        if row is None:
            self.confidence_dirty.add(lid)
        else:
            row[_CONFIDENCE] = usage.confidence

    def _maintain(self, part: MaintainPart) -> dict[str, Any]:
        decayed = archived = purged = 0
        for lid, factor in part.decay.items():
            if self.exists(lid):
                self._set_usage(lid, lambda usage: usage.decay(factor))  # noqa: B023
                decayed += 1
        for lid, reason in part.archive:
            if self.exists(lid):
                self.archived[lid] = [lid, part.now, reason]
                archived += 1
        for lid in part.purge:
            purged += self._delete(DeletePart(lid, owner=True))["deleted"]
        for lid in part.unlink:
            self._delete(DeletePart(lid, owner=False))
        if part.ran:
            self.last_run = part.now
        return {"tier": self.tier.name, "decayed": decayed, "archived": archived, "purged": purged}

    def _restore(self, part: RestorePart) -> dict[str, Any]:
        if not self.exists(part.learning_id):
            raise not_found(part.learning_id)
        self.archived.pop(part.learning_id, None)
        self.unarchived.append(part.learning_id)
        self._set_usage(part.learning_id, lambda usage: usage.touch(self.now))
        return {"id": part.learning_id}

    def _promote(self, part: PromotePart) -> dict[str, Any]:
        put = self._put(PutPart([(0, part.copy_id, part.item)]))
        copy_id = put["ids"][0]  # the same content in the user tier already: that learning, reinforced
        key = (copy_id, C.RELATION_DERIVED_FROM, part.original_id)
        self.relations[key] = [*key, 1.0, self.now]
        return {"id": copy_id, "created": put["created"][0]}

    def _decide(self, part: DecidePart) -> dict[str, Any]:
        learning_id = None
        if part.item is not None and part.learning_id is not None:
            learning_id = self._put(PutPart([(0, part.learning_id, part.item)]))["ids"][0]
            status = "approved"
        else:
            status = "rejected"
            self.rejections.append([part.review_id, part.reason, part.curator, self.now, part.snapshot])
        self.decided.append([part.review_id, status, self.now, part.curator, part.reason, learning_id])
        return {"review_id": part.review_id, "status": status, "learning_id": learning_id}

    def _inject(self, part: InjectPart) -> dict[str, Any]:
        counted = 0
        for lid in part.learning_ids:
            if self.exists(lid):  # one deleted since it was chosen is simply no longer counted
                self.usage[lid].inject(self.now)
                self.usage_dirty.add(lid)
                counted += 1
        if part.record is not None:
            self.injections.append(part.record)
        if part.task is not None and counted:
            self.task_vectors.append([*part.task, self.now])
        return part.reply if part.reply is not None else {"counted": counted}

    def _relation(self, part: RelationPart) -> dict[str, Any]:
        if part.store:
            for lid in (part.from_id, part.to_id):
                if lid in self.created and not self.exists(lid):
                    raise not_found(lid)
            if not self.exists(part.from_id):
                raise not_found(part.from_id)
            key = (part.from_id, part.relation_type, part.to_id)
            self.relations[key] = [*key, part.weight, self.now]
        if part.demote and self.exists(part.to_id):
            self._set_usage(part.to_id, lambda usage: usage.demote())
        return {}

    def _related(self, part: RelatedPart) -> dict[str, Any]:
        for newer, older, weight in part.pairs:
            if self.exists(newer) and self.exists(older):  # either may have been deleted since it was checked
                key = (newer, C.RELATION_RELATED_TO, older)
                self.relations[key] = [*key, weight, self.now]
        return {}

    def _embed(self, part: EmbedPart) -> dict[str, Any]:
        if part.notes:
            self.note_vectors.update(part.rows)
            return {}
        for lid, vector in part.rows:
            # a learning deleted or edited since it was queued gets no (stale) vector
            if self.exists(lid) and lid not in self.texts:
                self.vectors[lid] = vector
        return {}

    def _delete(self, part: DeletePart) -> dict[str, Any]:
        lid = part.learning_id
        for key in self.stored_relations | set(self.relations):
            if lid in (key[0], key[2]):
                self.relations[key] = None
        if not part.owner or not self.exists(lid):
            return {"deleted": False}
        self.created[lid] = None
        self.learning_put.pop(lid, None)
        self.hashes_put.pop(lid, None)
        self.usage.pop(lid, None)
        self.usage_dirty.discard(lid)
        self.confidence_dirty.discard(lid)
        self.texts.pop(lid, None)
        self.vectors.pop(lid, None)
        return {"deleted": True}

    def _import(self, part: ImportPart) -> dict[str, Any]:
        """Learnings and relations from an export file, exactly as exported; what is here already is skipped."""
        imported = relations = 0
        for item in part.learnings:
            if self.exists(item.id):  # put by an earlier request of this batch
                continue
            key = (item.scope, content_hash(item.description, item.insight))
            self.hash_owner.setdefault(key, item.id)
            self.hashes_put[item.id] = [item.id, *key]
            self.created[item.id] = item.created_at
            self.usage[item.id] = UsageRow(**item.usage.model_dump())
            self.usage_dirty.add(item.id)
            self.confidence[item.id] = item.confidence
            self.learning_put[item.id] = learning_row(item, item.id, item.confidence, item.created_at, item.updated_at)
            self.texts[item.id] = embedding_text(item.description, item.insight)
            if item.archived is not None:
                self.archived[item.id] = [item.id, item.archived.archived_at, item.archived.reason]
            imported += 1
        for rel in part.relations:
            rel_key: RelKey = (rel.from_id, rel.relation_type, rel.to_id)
            if rel_key in self.relations:
                here = self.relations[rel_key] is not None
            else:
                here = rel_key in self.stored_relations
            if not here:
                self.relations[rel_key] = RELATIONS.row(rel.model_dump())
                relations += 1
        return {
            "learnings_imported": imported,
            "learnings_skipped": part.skipped + len(part.learnings) - imported,
            "relations_imported": relations,
            "relations_skipped": len(part.relations) - relations,
        }
