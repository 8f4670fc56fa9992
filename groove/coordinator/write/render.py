"""A tier's working copy after a batch, as what is committed and what derived data must learn.

`script` renders the final state as one CozoDB script of `{...}` blocks, one per relation and kind of change,
plus the `:insert` of the applied request ids: one transaction, all or nothing. A request id applied before
makes that insert, and so the whole transaction, fail (the batcher then answers from the stored reply).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from groove.coordinator.loop.adaptive import to_row
from groove.coordinator.loop.lifecycle import last_run_row
from groove.coordinator.search.changes import DerivedChanges
from groove.coordinator.search.lexical import index_text
from groove.coordinator.store.relations import (
    APPLIED,
    ARCHIVED,
    DERIVED_LOG,
    EMBEDDINGS,
    HASHES,
    INJECTION_TASKS,
    INJECTIONS,
    LEARNING,
    MAINTENANCE,
    NOTE_EMBEDDINGS,
    OUTCOME_LOG,
    PARAMS,
    REJECTIONS,
    RELATIONS,
    REVIEWS,
    USAGE,
)
from groove.coordinator.write.built import Built
from groove.coordinator.write.tierwrite import TierWrite
from groove.protocol.constants import RELATION_SUPERSEDES


def script(w: TierWrite, built: Sequence[Built] = (), journal: list[Any] | None = None) -> tuple[str, dict[str, Any]]:
    """The transaction: every block of the final state plus the applied request ids, with the rows of the puts
    built outside the writer (`built.py`) joined to their relations' blocks, and its derived log entry."""
    blocks: list[str] = []
    params: dict[str, Any] = {}

    def add(block: str, name: str, rows: list[Any]) -> None:
        if rows:
            blocks.append(block)
            params[name] = rows

    gone = [[lid] for lid, created in w.created.items() if created is None]
    add(LEARNING.rm("gone"), "gone", gone)
    add(USAGE.rm("gone_u"), "gone_u", gone)
    add(EMBEDDINGS.rm("gone_e"), "gone_e", gone)
    add(HASHES.rm("gone_h"), "gone_h", gone)
    add(ARCHIVED.rm("unarchived"), "unarchived", gone + [[lid] for lid in w.unarchived])
    add(ARCHIVED.put("archive"), "archive", list(w.archived.values()))
    add(REVIEWS.put("reviews"), "reviews", w.reviews_put)
    add(REVIEWS.update("decided", ("status", "decided_at", "curator", "reason", "learning_id")), "decided", w.decided)
    add(REJECTIONS.put("rejected"), "rejected", w.rejections)
    if w.last_run is not None:
        add(MAINTENANCE.put("run"), "run", [last_run_row(w.last_run)])
    add(HASHES.put("hashes"), "hashes", [*w.hashes_put.values(), *(row for put in built for row in put.hashes)])
    learnings = [*w.learning_put.values(), *(row for put in built for row in put.learnings)]
    add(LEARNING.put("learning"), "learning", learnings)
    add(
        LEARNING.update("conf", ("confidence", "updated_at")),
        "conf",
        [[lid, w.confidence[lid], w.now] for lid in sorted(w.confidence_dirty)],
    )
    usage = [w.usage[lid].row(lid) for lid in sorted(w.usage_dirty)]
    add(USAGE.put("usage"), "usage", usage + [row for put in built for row in put.usage])
    vectors = [[lid, vector] for lid, vector in w.vectors.items() if vector is not None]
    add(EMBEDDINGS.put("vec"), "vec", vectors + [row for put in built for row in put.vectors])
    add(NOTE_EMBEDDINGS.put("note_vec"), "note_vec", [[nid, vector] for nid, vector in w.note_vectors.items()])
    add(EMBEDDINGS.rm("vec_gone"), "vec_gone", [[lid] for lid, vector in w.vectors.items() if vector is None])
    add(INJECTIONS.put("inj"), "inj", w.injections)
    add(OUTCOME_LOG.put("outcomes"), "outcomes", w.outcome_log)
    add(INJECTION_TASKS.put("tasks_seen"), "tasks_seen", w.task_vectors)
    add(INJECTIONS.update("closed", ("outcome_at",)), "closed", [[iid, at] for iid, at in w.closed.items()])
    if w.params is not None:
        rows = [to_row(name, w.params[name], w.now) for name in sorted(w.params_dirty)]
        add(PARAMS.put("params"), "params", rows)
    add(RELATIONS.rm("rel_gone"), "rel_gone", [list(k) for k, row in w.relations.items() if row is None])
    add(RELATIONS.put("rel"), "rel", [row for row in w.relations.values() if row is not None])
    if w.board is not None:
        for relation, rows in w.board.take_dirty():
            add(relation.put(relation.name), relation.name, rows)
    if journal is not None:
        add(DERIVED_LOG.put("journal"), "journal", [journal])
    # :insert, not :put: the transaction fails if a request id was applied before, and nothing commits
    add(APPLIED.put("applied", verb="insert"), "applied", w.applied + [put.applied for put in built])
    return "\n".join(blocks), params


def changes(w: TierWrite) -> tuple[list[str], list[str]]:
    """(learnings this commit adds, learnings it removes)."""
    now_exist = {lid for lid, created in w.created.items() if created is not None}
    return sorted(now_exist - w.existed), sorted(w.existed - now_exist)


def journal_ids(w: TierWrite, added: list[str], removed: list[str]) -> list[str]:
    """The learnings whose keyword entry, vector or content hash this commit may change (its derived log entry),
    given those it adds and removes (`changes`, with the built puts' ids)."""
    return list(dict.fromkeys([*w.texts, *w.vectors, *w.hashes_put, *added, *removed]))


def derived_changes(w: TierWrite, built: Sequence[Built] = (), seq: int = 0) -> DerivedChanges:
    """What the keyword and vector indexes, the row cache and the in-memory maps must take from this commit (the
    built puts' learnings are new: no cached row or stored vector of theirs to drop); `seq` is its log entry."""
    deleted = [lid for lid, created in w.created.items() if created is None]
    texts = [*w.texts.items(), *((lid, text) for put in built for lid, text, _ in put.texts)]
    return DerivedChanges(
        texts=texts,
        words=[(lid, index_text(text)) for lid, text in w.texts.items()]
        + [(lid, words) for put in built for lid, _, words in put.texts],
        vectors=[(lid, v) for lid, v in w.vectors.items() if v is not None]
        + [(lid, v) for put in built for lid, v in put.vectors],
        deleted=deleted,
        stale=[lid for lid, v in w.vectors.items() if v is None],
        touched=sorted(set(deleted) | set(w.learning_put) | w.usage_dirty | w.confidence_dirty),
        archived=sorted(w.archived),
        unarchived=sorted(set(w.unarchived) | set(deleted)),
        supersedes_put=[
            (k[0], k[2]) for k, row in w.relations.items() if row is not None and k[1] == RELATION_SUPERSEDES
        ],
        supersedes_gone=[(k[0], k[2]) for k, row in w.relations.items() if row is None and k[1] == RELATION_SUPERSEDES],
        notes=w.board.records.take_noted() if w.board is not None else [],
        note_vectors=list(w.note_vectors.items()),
        tasks=[(iid, vector) for iid, vector, _ in w.task_vectors],
        ratings=[(lid, outcome, iid, at) for lid, at, _, outcome, iid, _ in w.outcome_log],
        seq=seq,
    )
