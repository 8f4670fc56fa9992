"""Every tier's CozoDB schema, as numbered migrations (seed 000, decision 10).

A tier records the migrations it has applied in `schema_version`. Opening a tier applies the missing ones
in order. Each step checks whether its relation or index already exists, so a migration interrupted by a
crash is finished on the next start instead of failing on a half-made schema.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pycozo.client import Client

from groove.coordinator.errors import StorageError
from groove.coordinator.store.records import content_hash, vector_blob
from groove.coordinator.store.relations import (
    APPLIED,
    ARCHIVED,
    ARTIFACTS,
    CHECKPOINTS,
    DECISIONS,
    DERIVED_LOG,
    DERIVED_SAVED,
    EMBEDDINGS,
    HASHES,
    INJECTION_TASKS,
    INJECTIONS,
    LEARNING,
    MAINTENANCE,
    MEMORIES,
    NOTE_EMBEDDINGS,
    NOTES,
    NUDGE_ACKS,
    NUDGES,
    OUTCOME_LOG,
    PARAMS,
    REJECTIONS,
    RELATIONS,
    REVIEWS,
    SCHEMA_VERSION,
    TASKS,
    USAGE,
    Relation,
)
from groove.protocol.ids import now_ms

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Step:
    """One schema object: the name `::relations` or `::indices` lists once it exists, and its script."""

    name: str
    script: str

    @classmethod
    def create(cls, relation: Relation) -> Step:
        """Make a relation as declared."""
        return cls(relation.name, relation.create())

    @classmethod
    def index(cls, relation: Relation, index: str) -> Step:
        """Make one of a relation's declared indexes."""
        return cls(f"{relation.name}:{index}", relation.index(index))


@dataclass(frozen=True)
class Migration:
    """A numbered set of steps, and optionally a backfill run after them (it must be safe to run twice).

    Steps make relations as `relations.py` declares them now. A later change to a declared relation's columns
    needs a migration of its own that rebuilds the relation, and the steps before it must keep making the old
    shape (write that shape into the step then).
    """

    version: int
    description: str
    steps: tuple[Step, ...]
    backfill: Callable[[Client], None] | None = None


# applied_requests as migration 1 made it, before the body digest (migration 6 rebuilds it with one)
_APPLIED_V1 = Relation("applied_requests", "request_id: String => op: String, reply_json: String, applied_at: Int")


def _digest_column(db: Client) -> None:
    if "digest" in {row[0] for row in db.run(f"::columns {APPLIED.name}")["rows"]}:
        return
    old = ", ".join(_APPLIED_V1.cols)
    db.run(f'?[{old}, digest] := *{APPLIED.name}{{{old}}}, digest = "" :replace {APPLIED.name} {{{APPLIED.columns}}}')


# the vectors as migrations 1 and 10 made them, before they were stored as bytes (migration 13 rebuilds them)
_EMBEDDINGS_V1 = Relation(EMBEDDINGS.name, "learning_id: String => embedding: <F32; 384>")
_NOTE_EMBEDDINGS_V1 = Relation(NOTE_EMBEDDINGS.name, "note_id: String => embedding: <F32; 384>")
_REBUILD_PAGE = 5000  # vectors copied per query (as lists of floats, about 46 MB of them)


# derived_saved as migration 15 made it, before each token said how far into derived_log it holds (migration 16)
_DERIVED_SAVED_V15 = Relation(DERIVED_SAVED.name, "name: String => token: String, saved_at: Int")


def _tokens_through(db: Client) -> None:
    """derived_saved made again with `through`: its tokens go (a migrated tier trusts none of them anyway)."""
    if DERIVED_SAVED.name in {row[0] for row in db.run("::relations")["rows"]}:  # not when stopped halfway
        if "through" in {row[0] for row in db.run(f"::columns {DERIVED_SAVED.name}")["rows"]}:
            return
        db.run(f"::remove {DERIVED_SAVED.name}")
    db.run(DERIVED_SAVED.create())


def _vectors_as_bytes(db: Client) -> None:
    for relation in (EMBEDDINGS, NOTE_EMBEDDINGS):
        _rebuild_as_bytes(db, relation)


def _rebuild_as_bytes(db: Client, relation: Relation) -> None:
    """Copy a relation of vectors into a new one that stores them as bytes, then put it in the old one's place.
    Safe to run again at any point it was interrupted at: a copy half made is made again, and one made but not
    yet renamed is renamed."""
    (key,), (value,) = relation.keys, relation.values
    copy = f"{relation.name}_as_bytes"
    names = {row[0] for row in db.run("::relations")["rows"]}
    if relation.name not in names:  # stopped between the old one's removal and the rename
        db.run(f"::rename {copy} -> {relation.name}")
        return
    types = {row[0]: row[3] for row in db.run(f"::columns {relation.name}")["rows"]}
    if copy in names:
        db.run(f"::remove {copy}")
    if types[value] == "Bytes":
        return
    db.run(f":create {copy} {{{relation.columns}}}")
    after = ""
    while rows := db.run(
        f"?[k, v] := *{relation.name}{{{key}: k, {value}: v}}, k > $after :order k :limit {_REBUILD_PAGE}",
        {"after": after},
    )["rows"]:
        db.run(
            f"?[{key}, {value}] <- $rows :put {copy} {{{key} => {value}}}",
            {"rows": [[k, vector_blob(v)] for k, v in rows]},
        )
        after = rows[-1][0]
    db.run(f"::remove {relation.name}")
    db.run(f"::rename {copy} -> {relation.name}")


def _hash_learnings(db: Client) -> None:
    rows = db.run("?[id, scope, description, insight] := *learning{id, scope, description, insight}")["rows"]
    if rows:
        db.run(HASHES.put("rows"), {"rows": [[lid, scope, content_hash(d, i)] for lid, scope, d, i in rows]})


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "learnings, usage stats, embeddings, adaptive params, relations, applied requests",
        (
            Step.create(LEARNING),
            Step.create(USAGE),
            Step.create(_EMBEDDINGS_V1),
            Step.create(PARAMS),
            Step.create(RELATIONS),
            Step.index(RELATIONS, "by_to"),
            Step.create(_APPLIED_V1),
        ),
    ),
    Migration(
        2,
        "injections: what each session was given, for outcome.record to close the loop",
        (Step.create(INJECTIONS),),
    ),
    Migration(
        3,
        "content hashes: a learning put again with the same content reinforces the stored one",
        (Step.create(HASHES), Step.index(HASHES, "by_hash")),
        backfill=_hash_learnings,
    ),
    Migration(
        4,
        "lifecycle: archived learnings and when maintenance last ran",
        (Step.create(ARCHIVED), Step.create(MAINTENANCE)),
    ),
    Migration(
        5,
        "curation: an enterprise tier's review queue and its rejection log",
        (Step.create(REVIEWS), Step.create(REJECTIONS)),
    ),
    Migration(
        6,
        "applied requests keep their body's digest: a request id resent with another body is refused",
        (),
        backfill=_digest_column,
    ),
    Migration(
        7,
        "the board: working memories and their tasks",
        (Step.create(MEMORIES), Step.create(TASKS), Step.index(TASKS, "by_memory")),
    ),
    Migration(
        8,
        "the board's records: decisions, artifact versions and checkpoints",
        (Step.create(DECISIONS), Step.create(ARTIFACTS), Step.create(CHECKPOINTS)),
    ),
    Migration(9, "nudges, and which agents acknowledged them", (Step.create(NUDGES), Step.create(NUDGE_ACKS))),
    Migration(
        10,
        "notes of working memories, and their vectors",
        (Step.create(NOTES), Step.index(NOTES, "by_memory"), Step.create(_NOTE_EMBEDDINGS_V1)),
    ),
    Migration(
        11,
        "the outcome log: each learning's outcomes and its confidence after each, for its history",
        (Step.create(OUTCOME_LOG), Step.index(OUTCOME_LOG, "by_injection")),
    ),
    Migration(
        12,
        "injections by session: an outcome recorded during a session counts for its open injection",
        (Step.index(INJECTIONS, "by_session"),),
    ),
    Migration(
        13,
        "vectors stored as bytes: 15 times cheaper to write than CozoDB's vector type, 3 times to read",
        (),
        backfill=_vectors_as_bytes,
    ),
    Migration(
        14, "each injection's task, as a vector: what outcome votes are reckoned by", (Step.create(INJECTION_TASKS),)
    ),
    Migration(
        15,
        "derived indexes saved at a clean stop, and the token that says they match this tier",
        (Step(DERIVED_SAVED.name, _DERIVED_SAVED_V15.create()),),
    ),
    Migration(
        16,
        "derived indexes checkpointed while serving: a log of what each commit changed, and how far an index holds it",
        (Step.create(DERIVED_LOG),),
        backfill=_tokens_through,
    ),
)

CURRENT_VERSION = MIGRATIONS[-1].version


def _existing(db: Client) -> set[str]:
    names = {row[0] for row in db.run("::relations")["rows"]}
    for relation in list(names):
        if ":" not in relation:
            names.update(f"{relation}:{row[0]}" for row in db.run(f"::indices {relation}")["rows"])
    return names


def applied_version(db: Client) -> int:
    """The highest migration recorded in this tier, 0 for a new tier."""
    if "schema_version" not in _existing(db):
        return 0
    rows = db.run("?[max(version)] := *schema_version{version}")["rows"]
    return int(rows[0][0]) if rows and rows[0][0] is not None else 0


def snapshot_before_migration(db: Client, path: Path, from_version: int) -> Path:
    """Back up a tier about to be migrated into `path` (beside its database); no snapshot, no migration."""
    target = path / f"pre-migration-v{from_version}-{time.strftime('%Y%m%d-%H%M%S')}.cozo"
    try:
        db.backup(str(target))
    except Exception as exc:  # pycozo raises bare exceptions
        raise StorageError(f"snapshot before migrating {path} failed, so it was not migrated: {exc}") from None
    log.warning(
        "tier at %s is at schema v%d of %d: snapshot %s taken before migrating",
        path,
        from_version,
        CURRENT_VERSION,
        target,
    )
    return target


def ensure_schema(db: Client, now: int | None = None, snapshot_dir: Path | None = None) -> list[int]:
    """Apply the migrations this tier lacks; returns the versions applied. An existing tier (not a new one)
    is first backed up into `snapshot_dir` when given."""
    current = applied_version(db)
    if current > CURRENT_VERSION:
        raise StorageError(
            f"tier schema is version {current}, newer than this coordinator's {CURRENT_VERSION}; "
            "upgrade groove before opening it"
        )
    if snapshot_dir is not None and 0 < current < CURRENT_VERSION:
        snapshot_before_migration(db, snapshot_dir, current)
    done: list[int] = []
    for migration in MIGRATIONS:
        if migration.version <= current:
            continue
        existing = _existing(db)
        if "schema_version" not in existing:
            db.run(SCHEMA_VERSION.create())
        for step in migration.steps:
            if step.name not in existing:
                db.run(step.script)
        if migration.backfill is not None:
            migration.backfill(db)
        at = now if now is not None else now_ms()
        db.run(SCHEMA_VERSION.put("v"), {"v": [[migration.version, at, migration.description]]})
        done.append(migration.version)
    return done
