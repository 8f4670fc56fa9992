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

from coordinator.errors import StorageError
from coordinator.records import content_hash
from protocol.ids import now_ms

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Step:
    """One schema object: the name `::relations` or `::indices` lists once it exists, and its script."""

    name: str
    script: str


@dataclass(frozen=True)
class Migration:
    """A numbered set of steps, and optionally a backfill run after them (it must be safe to run twice)."""

    version: int
    description: str
    steps: tuple[Step, ...]
    backfill: Callable[[Client], None] | None = None


def _hash_learnings(db: Client) -> None:
    rows = db.run("?[id, scope, description, insight] := *learning{id, scope, description, insight}")["rows"]
    if rows:
        db.run(
            "?[learning_id, scope, hash] <- $rows :put learning_hashes {learning_id => scope, hash}",
            {"rows": [[lid, scope, content_hash(d, i)] for lid, scope, d, i in rows]},
        )


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "learnings, usage stats, embeddings, adaptive params, relations, applied requests",
        (
            Step(
                "learning",
                """:create learning {
                    id: String =>
                    scope: String, category: String, description: String, pattern_json: String,
                    insight: String, confidence: Float, created_at: Int, updated_at: Int,
                    source_type: String, source_json: String
                }""",
            ),
            Step(
                "usage_stats",
                """:create usage_stats {
                    learning_id: String =>
                    times_injected: Int, times_helpful: Int, times_ignored: Int, times_contradicted: Int,
                    last_used: Int?, confidence_alpha: Float, confidence_beta: Float
                }""",
            ),
            Step(
                "learning_embeddings",
                ":create learning_embeddings { learning_id: String => embedding: <F32; 384> }",
            ),
            Step(
                "adaptive_params",
                """:create adaptive_params {
                    param_name: String =>
                    value: Float, uncertainty: Float, observations: Int, prior_alpha: Float,
                    prior_beta: Float, updated_at: Int
                }""",
            ),
            # The key starts with from_id, so lookups by from_id are prefix scans already; only the
            # reverse direction needs an index (seed 000 also lists a by_from index, which would duplicate it).
            Step(
                "learning_relations",
                """:create learning_relations {
                    from_id: String, relation_type: String, to_id: String => weight: Float, created_at: Int
                }""",
            ),
            Step("learning_relations:by_to", "::index create learning_relations:by_to { to_id }"),
            # Request ids of applied writes, committed in the same transaction as the write, with the part
            # of the reply this tier produced: a retried request is answered from here, never re-applied.
            Step(
                "applied_requests",
                """:create applied_requests {
                    request_id: String => op: String, reply_json: String, applied_at: Int
                }""",
            ),
        ),
    ),
    Migration(
        2,
        "injections: what each session was given, for outcome.record to close the loop",
        (
            Step(
                "injections",
                """:create injections {
                    injection_id: String =>
                    session_id: String, created_at: Int, learnings_json: String, had_task: Bool,
                    params_json: String, outcome_at: Int?
                }""",
            ),
        ),
    ),
    Migration(
        3,
        "content hashes: a learning put again with the same content reinforces the stored one",
        (
            Step("learning_hashes", ":create learning_hashes { learning_id: String => scope: String, hash: String }"),
            Step("learning_hashes:by_hash", "::index create learning_hashes:by_hash { hash, scope }"),
        ),
        backfill=_hash_learnings,
    ),
    Migration(
        4,
        "lifecycle: archived learnings and when maintenance last ran",
        (
            Step("archived", ":create archived { learning_id: String => archived_at: Int, reason: String }"),
            Step("maintenance", ":create maintenance { name: String => at: Int }"),
        ),
    ),
    Migration(
        5,
        "curation: an enterprise tier's review queue and its rejection log",
        (
            Step(
                "pending_reviews",
                """:create pending_reviews {
                    review_id: String =>
                    status: String, learning_json: String, from_tier: String, from_id: String, note: String?,
                    flags_json: String, proposed_at: Int, decided_at: Int?, curator: String?, reason: String?,
                    learning_id: String?
                }""",
            ),
            Step(
                "rejection_log",
                """:create rejection_log {
                    review_id: String => reason: String, curator: String, rejected_at: Int, learning_json: String
                }""",
            ),
        ),
    ),
)

CURRENT_VERSION = MIGRATIONS[-1].version
_VERSION_TABLE = ":create schema_version { version: Int => applied_at: Int, description: String }"


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
            db.run(_VERSION_TABLE)
        for step in migration.steps:
            if step.name not in existing:
                db.run(step.script)
        if migration.backfill is not None:
            migration.backfill(db)
        db.run(
            "?[version, applied_at, description] <- [[$v, $at, $d]] "
            ":put schema_version {version => applied_at, description}",
            {"v": migration.version, "at": now if now is not None else now_ms(), "d": migration.description},
        )
        done.append(migration.version)
    return done
