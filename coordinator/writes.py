"""One tier's share of a group commit: write parts applied in order to a working copy, then one script.

The batcher hands each tier the parts of the batch's requests that touch it. `TierWrite` loads the rows
those parts read, applies each part in queue order to a working copy (so two outcomes for one learning in
one batch both count), and renders the final state as one CozoDB script of `{...}` blocks: one
transaction, all or nothing, carrying the applied request ids with the data they changed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from coordinator.adaptive import PARAM_COLS, SPECS, AdaptiveParam, from_row, to_row
from coordinator.embedder import embedding_text, normalise
from coordinator.errors import already_closed, not_found
from coordinator.lifecycle import MaintainPart, RestorePart, last_run_row
from coordinator.parts import (
    DecidePart,
    DeletePart,
    DerivedChanges,
    EmbedPart,
    InjectPart,
    OutcomePart,
    Part,
    PromotePart,
    ProposePart,
    PutPart,
    RelationPart,
)
from coordinator.records import (
    INJECTION_COLS,
    LEARNING_COLS,
    RELATION_COLS,
    REVIEW_COLS,
    USAGE_COLS,
    UsageRow,
    content_hash,
    learning_row,
    put_script,
    rm_script,
)
from coordinator.tiers import Tier
from protocol import constants as C
from protocol.constants import RELATION_SUPERSEDES as SUPERSEDES
from protocol.models import compact_json

RelKey = tuple[str, str, str]

# Every stored learning has a usage row, so one join loads both.
_LOAD = (
    f"?[id, created_at, confidence, {', '.join(USAGE_COLS[1:])}] := id in $ids, "
    f"*learning{{id, created_at, confidence}}, *usage_stats{{learning_id: id, {', '.join(USAGE_COLS[1:])}}}"
)


class TierWrite:
    """The working copy of one tier's rows touched by one batch, and the script that commits it."""

    def __init__(self, tier: Tier, parts: list[Part], now: int) -> None:
        self.tier = tier
        self.now = now
        self.params: dict[str, AdaptiveParam] | None = None  # the system parameters, loaded if an outcome needs them
        self.params_dirty: set[str] = set()
        ids: set[str] = set()
        deleted: set[str] = set()
        # (scope, content hash) -> the learning holding that content, for the learnings this batch puts
        self.hash_owner: dict[tuple[str, str], str] = {}
        self.hashes_put: dict[str, list[Any]] = {}  # learning id -> its learning_hashes row
        hashes = {
            content_hash(item.description, item.insight)
            for p in parts
            if isinstance(p, PutPart)
            for _, _, item in p.entries
        }
        hashes.update(
            content_hash(p.item.description, p.item.insight)
            for p in parts
            if isinstance(p, PromotePart | DecidePart) and p.item is not None
        )
        if hashes:
            owners = tier.run(
                "?[hash, scope, learning_id] := hash in $hashes, *learning_hashes:by_hash{hash, scope, learning_id}",
                {"hashes": sorted(hashes)},
            )
            for h, scope, owner in owners:
                self.hash_owner[(scope, h)] = owner
                ids.add(owner)
        for part in parts:
            if isinstance(part, PutPart):
                # an id the coordinator just made cannot be stored yet: only client-given ids need a lookup
                ids.update(i for _, i, item in part.entries if item.id is not None)
            elif isinstance(part, OutcomePart):
                ids.update(i for i, _, _ in part.attributions)
                if part.session is not None:
                    self._load_params()
            elif isinstance(part, InjectPart):
                ids.update(part.learning_ids)
            elif isinstance(part, MaintainPart):
                ids.update(part.decay)
                ids.update(lid for lid, _ in part.archive)
                ids.update(part.purge)
                deleted.update(part.purge + part.unlink)
            elif isinstance(part, RestorePart):
                ids.add(part.learning_id)
            elif isinstance(part, PromotePart | ProposePart | DecidePart):
                pass  # what they add is new; a duplicate's owner is found by its content hash above
            elif isinstance(part, RelationPart):
                ids.update((part.from_id, part.to_id))
            elif isinstance(part, EmbedPart):
                ids.update(i for i, _ in part.rows)
            else:
                ids.add(part.learning_id)
                deleted.add(part.learning_id)
        wanted = sorted(ids)
        # id -> created_at, for learnings that exist (None once deleted in this batch)
        self.created: dict[str, int | None] = {}
        self.confidence: dict[str, float] = {}
        self.usage: dict[str, UsageRow] = {}
        if wanted:
            for row in tier.run(_LOAD, {"ids": wanted}):
                self.created[row[0]] = row[1]
                self.confidence[row[0]] = row[2]
                self.usage[row[0]] = UsageRow(*row[3:])
        self.existed = set(self.created)
        # relation changes: a row to put, or None to remove; `stored_relations` are those that may need removing
        self.relations: dict[RelKey, list[Any] | None] = {}
        self.stored_relations: set[RelKey] = set()
        if deleted:
            self._load_relations(sorted(deleted))
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
        self.texts: dict[str, str] = {}  # learnings put in this batch
        self.vectors: dict[str, list[float] | None] = {}  # a vector to store, or None to drop a stale one
        self.applied: list[list[Any]] = []

    def _load_params(self) -> dict[str, AdaptiveParam]:
        if self.params is None:
            cols = ", ".join(PARAM_COLS)
            stored = {row[0]: from_row(row) for row in self.tier.run(f"?[{cols}] := *adaptive_params{{{cols}}}")}
            self.params = {name: stored.get(name, spec.prior()) for name, spec in SPECS.items()}
        return self.params

    def _load_relations(self, ids: list[str]) -> None:
        cols = ", ".join(RELATION_COLS)
        out = self.tier.run(
            f"?[{cols}] := from_id in $ids, *learning_relations{{{cols}}}",
            {"ids": ids},
        )
        into = self.tier.run(
            f"?[{cols}] := to_id in $ids, *learning_relations:by_to{{to_id, from_id, relation_type}}, "
            f"*learning_relations{{{cols}}}",
            {"ids": ids},
        )
        self.stored_relations.update((row[0], row[1], row[2]) for row in out + into)

    def _exists(self, learning_id: str) -> bool:
        return self.created.get(learning_id) is not None

    def apply(self, request_id: str, op: str, part: Part, record: bool = True) -> dict[str, Any]:
        """Apply one part to the working copy; returns this tier's share of the reply.

        `record` stores the request id with the reply (every client write; not the internal ones).
        Raises Rejected, leaving the working copy untouched, if the part cannot apply.
        """
        if isinstance(part, EmbedPart):
            reply = self._embed(part)
        elif isinstance(part, PutPart):
            reply = self._put(part)
        elif isinstance(part, OutcomePart):
            reply = self._outcome(part)
        elif isinstance(part, InjectPart):
            reply = self._inject(part)
        elif isinstance(part, MaintainPart):
            reply = self._maintain(part)
        elif isinstance(part, RestorePart):
            reply = self._restore(part)
        elif isinstance(part, PromotePart):
            reply = self._promote(part)
        elif isinstance(part, ProposePart):
            self.reviews_put.append(part.row)
            reply = {"review_id": part.row[0], "flags": json.loads(part.row[REVIEW_COLS.index("flags_json")])}
        elif isinstance(part, DecidePart):
            reply = self._decide(part)
        elif isinstance(part, RelationPart):
            reply = self._relation(part)
        else:
            reply = self._delete(part)
        if record:
            self.applied.append([request_id, op, compact_json(reply), self.now])
        return reply

    def _put(self, part: PutPart) -> dict[str, Any]:
        reply: dict[str, list[Any]] = {"idx": [], "ids": [], "created": []}
        for index, lid, item in part.entries:
            key = (item.scope, content_hash(item.description, item.insight))
            owner = self.hash_owner.get(key)
            if item.id is None and owner is not None and self._exists(owner):
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
                self.vectors[lid] = normalise(item.embedding)[0].tolist()
            elif not is_new:
                self.vectors[lid] = None  # the text may have changed: its old vector would mislead
            reply["idx"].append(index)
            reply["ids"].append(lid)
            reply["created"].append(is_new)
        return reply

    def _outcome(self, part: OutcomePart) -> dict[str, Any]:
        for lid, _, _ in part.attributions:
            if not self._exists(lid):
                raise not_found(lid)
        if part.session is not None and part.session.injection_id in self.closed:
            raise already_closed(part.session.injection_id)
        for lid, outcome, injected in part.attributions:
            self._set_usage(lid, lambda usage: usage.record_outcome(outcome, self.now, injected))  # noqa: B023
        if part.session is None:
            return {"applied": len(part.attributions)}
        params = self._load_params()
        for name, toward in part.session.updates.items():
            params[name].update(toward)
            self.params_dirty.add(name)
        self.closed[part.session.injection_id] = self.now
        return {"applied": len(part.attributions), "ignored": part.session.ignored}

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
            row[LEARNING_COLS.index("confidence")] = usage.confidence

    def _maintain(self, part: MaintainPart) -> dict[str, Any]:
        decayed = archived = purged = 0
        for lid, factor in part.decay.items():
            if self._exists(lid):
                self._set_usage(lid, lambda usage: usage.decay(factor))  # noqa: B023
                decayed += 1
        for lid, reason in part.archive:
            if self._exists(lid):
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
        if not self._exists(part.learning_id):
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
        for lid in part.learning_ids:
            if self._exists(lid):  # one deleted since it was chosen is simply no longer counted
                self.usage[lid].inject(self.now)
                self.usage_dirty.add(lid)
        if part.record is not None:
            self.injections.append(part.record)
        return part.reply or {}

    def _relation(self, part: RelationPart) -> dict[str, Any]:
        if part.store:
            for lid in (part.from_id, part.to_id):
                if lid in self.created and not self._exists(lid):
                    raise not_found(lid)
            if not self._exists(part.from_id):
                raise not_found(part.from_id)
            key = (part.from_id, part.relation_type, part.to_id)
            self.relations[key] = [*key, part.weight, self.now]
        if part.demote and self._exists(part.to_id):
            self._set_usage(part.to_id, lambda usage: usage.demote())
        return {}

    def _embed(self, part: EmbedPart) -> dict[str, Any]:
        for lid, vector in part.rows:
            # a learning deleted or edited since it was queued gets no (stale) vector
            if self._exists(lid) and lid not in self.texts:
                self.vectors[lid] = vector
        return {}

    def _delete(self, part: DeletePart) -> dict[str, Any]:
        lid = part.learning_id
        for key in self.stored_relations | set(self.relations):
            if lid in (key[0], key[2]):
                self.relations[key] = None
        if not part.owner or not self._exists(lid):
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

    def script(self) -> tuple[str, dict[str, Any]]:
        """The transaction: every block of the final state plus the applied request ids."""
        blocks: list[str] = []
        params: dict[str, Any] = {}

        def add(block: str, name: str, rows: list[Any]) -> None:
            if rows:
                blocks.append(block)
                params[name] = rows

        gone = [[lid] for lid, created in self.created.items() if created is None]
        add(rm_script("learning", ("id",), "gone"), "gone", gone)
        add(rm_script("usage_stats", ("learning_id",), "gone_u"), "gone_u", gone)
        add(rm_script("learning_embeddings", ("learning_id",), "gone_e"), "gone_e", gone)
        add(rm_script("learning_hashes", ("learning_id",), "gone_h"), "gone_h", gone)
        add(
            rm_script("archived", ("learning_id",), "unarchived"),
            "unarchived",
            gone + [[lid] for lid in self.unarchived],
        )
        add(
            put_script("archived", ("learning_id", "archived_at", "reason"), 1, "archive"),
            "archive",
            list(self.archived.values()),
        )
        add(put_script("pending_reviews", REVIEW_COLS, 1, "reviews"), "reviews", self.reviews_put)
        add(
            "{?[review_id, status, decided_at, curator, reason, learning_id] <- $decided "
            ":update pending_reviews {review_id => status, decided_at, curator, reason, learning_id}}",
            "decided",
            self.decided,
        )
        add(
            put_script(
                "rejection_log", ("review_id", "reason", "curator", "rejected_at", "learning_json"), 1, "rejected"
            ),
            "rejected",
            self.rejections,
        )
        if self.last_run is not None:
            add(put_script("maintenance", ("name", "at"), 1, "run"), "run", [last_run_row(self.last_run)])
        add(
            put_script("learning_hashes", ("learning_id", "scope", "hash"), 1, "hashes"),
            "hashes",
            list(self.hashes_put.values()),
        )
        add(put_script("learning", LEARNING_COLS, 1, "learning"), "learning", list(self.learning_put.values()))
        add(
            "{?[id, confidence, updated_at] <- $conf :update learning {id => confidence, updated_at}}",
            "conf",
            [[lid, self.confidence[lid], self.now] for lid in sorted(self.confidence_dirty)],
        )
        add(
            put_script("usage_stats", USAGE_COLS, 1, "usage"),
            "usage",
            [self.usage[lid].row(lid) for lid in sorted(self.usage_dirty)],
        )
        add(
            put_script("learning_embeddings", ("learning_id", "embedding"), 1, "vec"),
            "vec",
            [[lid, vector] for lid, vector in self.vectors.items() if vector is not None],
        )
        add(
            rm_script("learning_embeddings", ("learning_id",), "vec_gone"),
            "vec_gone",
            [[lid] for lid, vector in self.vectors.items() if vector is None],
        )
        add(put_script("injections", INJECTION_COLS, 1, "inj"), "inj", self.injections)
        add(
            "{?[injection_id, outcome_at] <- $closed :update injections {injection_id => outcome_at}}",
            "closed",
            [[iid, at] for iid, at in self.closed.items()],
        )
        if self.params is not None:
            add(
                put_script("adaptive_params", PARAM_COLS, 1, "params"),
                "params",
                [to_row(name, self.params[name], self.now) for name in sorted(self.params_dirty)],
            )
        add(
            rm_script("learning_relations", RELATION_COLS[:3], "rel_gone"),
            "rel_gone",
            [list(k) for k, row in self.relations.items() if row is None],
        )
        add(
            put_script("learning_relations", RELATION_COLS, 3, "rel"),
            "rel",
            [row for row in self.relations.values() if row is not None],
        )
        add(
            # :insert, not :put: the transaction fails if a request id was applied before, and nothing commits
            put_script(
                "applied_requests", ("request_id", "op", "reply_json", "applied_at"), 1, "applied", verb="insert"
            ),
            "applied",
            self.applied,
        )
        return "\n".join(blocks), params

    def changes(self) -> tuple[list[str], list[str]]:
        """(learnings this commit adds, learnings it removes)."""
        now_exist = {lid for lid, created in self.created.items() if created is not None}
        return sorted(now_exist - self.existed), sorted(self.existed - now_exist)

    def derived_changes(self) -> DerivedChanges:
        """What the keyword and vector indexes must take from this commit."""
        return DerivedChanges(
            texts=list(self.texts.items()),
            vectors=[(lid, v) for lid, v in self.vectors.items() if v is not None],
            deleted=[lid for lid, created in self.created.items() if created is None],
            stale=[lid for lid, v in self.vectors.items() if v is None],
            touched=sorted(
                {lid for lid, created in self.created.items() if created is None}
                | set(self.learning_put)
                | self.usage_dirty
                | self.confidence_dirty
            ),
            supersedes_put=[
                (k[0], k[2]) for k, row in self.relations.items() if row is not None and k[1] == SUPERSEDES
            ],
            archived=sorted(self.archived),
            unarchived=sorted(set(self.unarchived) | {lid for lid, created in self.created.items() if created is None}),
            supersedes_gone=[(k[0], k[2]) for k, row in self.relations.items() if row is None and k[1] == SUPERSEDES],
        )
