"""Every stored relation, declared once: its name, key and value columns (in CozoDB's own syntax) and its
indexes. The DDL the migrations run, the `:put`/`:rm`/`:update` scripts the writer renders, column positions
and the conversions between stored rows and wire maps all derive from these declarations.

Conventions the conversions rely on: a column named `<x>_json` holds the JSON text of the wire field `<x>`;
a column listed in `derived` is not on the wire at all, it is computed from the wire map when a row is made.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from operator import itemgetter
from typing import Any

from groove.protocol.models import compact_json

_JSON = "_json"


@dataclass(frozen=True)
class Column:
    """One column: its name and CozoDB type (`String`, `Int?`, `<F32; 384>`, ...)."""

    name: str
    type: str


def _json_of(key: str) -> Callable[[Mapping[str, Any]], str]:
    def get(wire: Mapping[str, Any]) -> str:
        return compact_json(wire[key])

    return get


def _columns(spec: str) -> tuple[Column, ...]:
    if not spec.strip():
        return ()
    parts = [p.split(":", 1) for p in spec.split(",")]
    return tuple(Column(name.strip(), kind.strip()) for name, kind in parts)


@dataclass(frozen=True)
class Relation:
    """A stored relation. `columns` reads like its `:create`: `"key: Type, ... => value: Type, ..."`."""

    name: str
    columns: str
    indexes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # columns computed from the wire map (not sent on the wire themselves)
    derived: Mapping[str, Callable[[Mapping[str, Any]], Any]] = field(default_factory=dict)

    @cached_property
    def keys(self) -> tuple[str, ...]:
        """The key columns, in order."""
        return tuple(c.name for c in _columns(self.columns.split("=>")[0]))

    @cached_property
    def values(self) -> tuple[str, ...]:
        """The value columns, in order."""
        parts = self.columns.split("=>")
        return tuple(c.name for c in _columns(parts[1])) if len(parts) > 1 else ()

    @cached_property
    def cols(self) -> tuple[str, ...]:
        """Every column, keys first: the order of the rows this module's scripts read and write."""
        return self.keys + self.values

    @cached_property
    def at(self) -> dict[str, int]:
        """Column name -> its position in a row."""
        return {name: i for i, name in enumerate(self.cols)}

    def create(self) -> str:
        """The `:create` script."""
        return f":create {self.name} {{{self.columns}}}"

    def index(self, name: str) -> str:
        """The script creating one of its indexes."""
        return f"::index create {self.name}:{name} {{{', '.join(self.indexes[name])}}}"

    def put(self, param: str, verb: str = "put") -> str:
        """A block writing whole rows given as the list parameter `param` (`verb` `insert` fails on an
        existing key)."""
        head = ", ".join(self.cols)
        return f"{{?[{head}] <- ${param} :{verb} {self.name} {{{', '.join(self.keys)} => {', '.join(self.values)}}}}}"

    def rm(self, param: str) -> str:
        """A block removing the keys given as the list parameter `param`."""
        head = ", ".join(self.keys)
        return f"{{?[{head}] <- ${param} :rm {self.name} {{{head}}}}}"

    def update(self, param: str, columns: Sequence[str]) -> str:
        """A block setting some value columns of existing rows, given as [keys..., columns...] rows."""
        head = ", ".join((*self.keys, *columns))
        return f"{{?[{head}] <- ${param} :update {self.name} {{{', '.join(self.keys)} => {', '.join(columns)}}}}}"

    def pattern(self, prefix: str = "") -> str:
        """`*name{col, ...}` binding every column (to `<prefix><col>` when a prefix is given)."""
        if not prefix:
            return f"*{self.name}{{{', '.join(self.cols)}}}"
        return f"*{self.name}{{{', '.join(f'{c}: {prefix}{c}' for c in self.cols)}}}"

    def scan(self) -> str:
        """A query returning every row, in column order."""
        return f"?[{', '.join(self.cols)}] := {self.pattern()}"

    def by_key(self, param: str) -> str:
        """A query returning the row whose (single) key is the parameter `param`. The equality comes first:
        after the pattern, CozoDB walks the whole relation and filters (50 ms against 0.24 ms at 20k rows)."""
        return f"?[{', '.join(self.cols)}] := {self.keys[0]} = ${param}, {self.pattern()}"

    def by_keys(self, param: str) -> str:
        """A query returning the rows whose (single) key is in the list parameter `param` (the test first, as in
        `by_key`)."""
        return f"?[{', '.join(self.cols)}] := {self.keys[0]} in ${param}, {self.pattern()}"

    @cached_property
    def _on_wire(self) -> tuple[tuple[str | None, bool], ...]:
        """Per column, worked out once (rows are converted on every read and write): its wire name (None for a
        derived column) and whether its stored value is JSON text."""
        return tuple(
            (None, False)
            if name in self.derived
            else (name[: -len(_JSON)], True)
            if name.endswith(_JSON)
            else (name, False)
            for name in self.cols
        )

    @cached_property
    def _wire_positions(self) -> tuple[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]]:
        """(wire name, position) of the plain columns, and of the JSON ones."""
        named = [(key, i, is_json) for i, (key, is_json) in enumerate(self._on_wire) if key is not None]
        return tuple((k, i) for k, i, j in named if not j), tuple((k, i) for k, i, j in named if j)

    def wire(self, row: Sequence[Any]) -> dict[str, Any]:
        """A stored row as its wire map: JSON columns decoded under their wire names, derived ones left out."""
        plain, encoded = self._wire_positions
        out = {key: row[i] for key, i in plain}
        for key, i in encoded:
            out[key] = json.loads(row[i])
        return out

    @cached_property
    def _row_getters(self) -> tuple[Callable[[Mapping[str, Any]], Any], ...]:
        """Per column, the function taking its stored value from a wire map."""
        return tuple(
            self.derived[name] if key is None else _json_of(key) if is_json else itemgetter(key)
            for name, (key, is_json) in zip(self.cols, self._on_wire, strict=True)
        )

    def row(self, wire: Mapping[str, Any]) -> list[Any]:
        """A wire map as a stored row (the inverse of `wire`)."""
        return [get(wire) for get in self._row_getters]


LEARNING = Relation(
    "learning",
    "id: String => scope: String, category: String, description: String, pattern_json: String, insight: String, "
    "confidence: Float, created_at: Int, updated_at: Int, source_type: String, source_json: String",
    derived={"source_type": lambda wire: wire["source"]["type"]},
)
USAGE = Relation(
    "usage_stats",
    "learning_id: String => times_injected: Int, times_helpful: Int, times_ignored: Int, times_contradicted: Int, "
    "last_used: Int?, confidence_alpha: Float, confidence_beta: Float",
)
# Vectors are stored as bytes (`records.vector_blob`): CozoDB took 89 µs a row to write a `<F32; 384>` column from
# its list of floats and 6 µs for the same 1,536 bytes, 17 against 5 µs to read one (2 vCPUs). Its own vector index
# is not used: the coordinator keeps its own (`search/vectors.py`).
EMBEDDINGS = Relation("learning_embeddings", "learning_id: String => embedding: Bytes")
PARAMS = Relation(
    "adaptive_params",
    "param_name: String => value: Float, uncertainty: Float, observations: Int, prior_alpha: Float, "
    "prior_beta: Float, updated_at: Int",
)
# The key starts with from_id, so lookups by from_id are prefix scans already; only the reverse direction needs
# an index (seed 000 also lists a by_from index, which would duplicate the key).
RELATIONS = Relation(
    "learning_relations",
    "from_id: String, relation_type: String, to_id: String => weight: Float, created_at: Int",
    indexes={"by_to": ("to_id",)},
)
# Request ids of applied writes, committed in the same transaction as the write, with the part of the reply
# this tier produced: a retried request is answered from here, never re-applied.
APPLIED = Relation(
    "applied_requests",
    'request_id: String => op: String, reply_json: String, applied_at: Int, digest: String default ""',
)
INJECTIONS = Relation(
    "injections",
    "injection_id: String => session_id: String, created_at: Int, learnings_json: String, had_task: Bool, "
    "params_json: String, outcome_at: Int?",
    # a session's open injection, for an outcome recorded during the session (`outcome.record` with `session_id`)
    indexes={"by_session": ("session_id",)},
)
# How each outcome turned out for a learning, and its confidence after: the learning's history (`learning.history`).
# `seq` tells apart outcomes of one learning recorded in the same millisecond; "" stands for no injection.
OUTCOME_LOG = Relation(
    "outcome_log",
    "learning_id: String, at: Int, seq: Int => outcome: String, injection_id: String, confidence: Float",
    indexes={"by_injection": ("injection_id",)},
)
# The task each injection was made for, as its query vector, in every tier whose learnings it chose (written with
# the injection): what the outcome votes of later searches are reckoned by (`search/votes.py`).
INJECTION_TASKS = Relation("injection_tasks", "injection_id: String => vector: Bytes, at: Int")
HASHES = Relation(
    "learning_hashes", "learning_id: String => scope: String, hash: String", indexes={"by_hash": ("hash", "scope")}
)
ARCHIVED = Relation("archived", "learning_id: String => archived_at: Int, reason: String")
MAINTENANCE = Relation("maintenance", "name: String => at: Int")
# Which saved derived index (`search/saved.py`: "keywords", "vectors", "counts") matches this tier: the token its
# files were saved with at the last checkpoint, and the last entry of `derived_log` they hold (`through`).
DERIVED_SAVED = Relation("derived_saved", "name: String => token: String, through: Int, saved_at: Int")
# The learnings whose derived entries (keyword entry, vector, content hash) each commit may have changed, as a JSON
# list, and how many learnings it added less those it removed: written in the commit's own transaction, so a start
# after a crash brings saved indexes up to date from the entries past their `through` instead of rebuilding them.
# Entries a checkpoint holds are removed once it is recorded.
DERIVED_LOG = Relation("derived_log", "seq: Int => ids_json: String, delta: Int, at: Int")
REVIEWS = Relation(
    "pending_reviews",
    "review_id: String => status: String, learning_json: String, from_tier: String, from_id: String, "
    "note: String?, flags_json: String, proposed_at: Int, decided_at: Int?, curator: String?, reason: String?, "
    "learning_id: String?",
)
REJECTIONS = Relation(
    "rejection_log", "review_id: String => reason: String, curator: String, rejected_at: Int, learning_json: String"
)
# The board (seed 004). A working memory and its tasks live in its project's tier: a task's learnings commit
# with its completion, and one project's swarm never waits on another's writes.
MEMORIES = Relation(
    "working_memories",
    "id: String => project: String, name: String, goal: String, constraints_json: String, owner: String?, "
    "status: String, max_attempts: Int, created_at: Int, updated_at: Int, completed_at: Int?",
)
TASKS = Relation(
    "tasks",
    "id: String => memory_id: String, seq: Int, title: String, description: String, status: String, "
    "priority: Int, role: String?, needs_review: Bool, depends_on_json: String, assigned_to: String?, "
    "assigned_at: Int?, lease_ms: Int?, lease_until: Int?, started_at: Int?, completed_at: Int?, attempts: Int, "
    "last_error: String?, result_json: String, review_status: String?, reviewed_by: String?, "
    "review_comments: String?, created_at: Int, updated_at: Int",
    indexes={"by_memory": ("memory_id", "status")},
)
DECISIONS = Relation(
    "decisions",
    "id: String => memory_id: String, question: String, choice: String, alternatives_json: String, "
    "rationale: String, made_by: String, made_at: Int, task_id: String?, affects_tasks_json: String, "
    "reversible: Bool, confidence: String, reversed_by: String?, reversed_at: Int?",
)
ARTIFACTS = Relation(
    "artifacts",
    "id: String => memory_id: String, task_id: String, type: String, path: String, checksum: String, "
    "created_by: String, created_at: Int, description: String, version: Int, previous_id: String?, "
    "git_commit: String?, git_branch: String?",
)
CHECKPOINTS = Relation(
    "checkpoints",
    "id: String => memory_id: String, agent_id: String, task_id: String?, branch: String, commit: String, "
    "worktree_path: String, trigger: String, description: String, staged_changes_json: String, "
    "unstaged_changes_json: String, stash_ref: String?, created_at: Int",
)
NUDGES = Relation(
    "nudges",
    "id: String => memory_id: String, target: String, message: String, priority: String, delivery: String, "
    "created_by: String, created_at: Int",
)
# One row per agent that acknowledged a nudge: a nudge to a role or to all reaches each agent once.
NUDGE_ACKS = Relation("nudge_acks", "nudge_id: String, agent_id: String => acked_at: Int")
# Notes a memory's agents share (`memory.note`), and their vectors (written by the embedding worker, like
# learning_embeddings): a memory's notes are searched by meaning.
NOTES = Relation(
    "memory_notes",
    "id: String => memory_id: String, content: String, kind: String, task_id: String?, created_by: String?, "
    "created_at: Int, expires_at: Int?",
    indexes={"by_memory": ("memory_id",)},
)
NOTE_EMBEDDINGS = Relation("note_embeddings", "note_id: String => embedding: Bytes")  # as EMBEDDINGS
SCHEMA_VERSION = Relation("schema_version", "version: Int => applied_at: Int, description: String")

ALL = (
    LEARNING,
    USAGE,
    EMBEDDINGS,
    PARAMS,
    RELATIONS,
    APPLIED,
    INJECTIONS,
    OUTCOME_LOG,
    INJECTION_TASKS,
    HASHES,
    ARCHIVED,
    MAINTENANCE,
    DERIVED_SAVED,
    DERIVED_LOG,
    REVIEWS,
    REJECTIONS,
    MEMORIES,
    TASKS,
    DECISIONS,
    ARTIFACTS,
    CHECKPOINTS,
    NUDGES,
    NUDGE_ACKS,
    NOTES,
    NOTE_EMBEDDINGS,
    SCHEMA_VERSION,
)

# A learning with its usage, as one row: the learning's columns, then the usage's values prefixed `u_`.
_USAGE_AS = tuple(f"u_{c}" for c in USAGE.values)
JOINED_COLS = LEARNING.cols + _USAGE_AS
JOINED_AT = {name: i for i, name in enumerate(JOINED_COLS)}
JOINED_HEAD = ", ".join(JOINED_COLS)
JOINED_BODY = (
    f"{LEARNING.pattern()}, *{USAGE.name}{{{USAGE.keys[0]}: {LEARNING.keys[0]}, "
    + ", ".join(f"{c}: {u}" for c, u in zip(USAGE.values, _USAGE_AS, strict=True))
    + "}"
)
