"""Models of `backup`, `export` and `import`, and of the export file itself (a documented JSON format).

Paths in these requests are on the coordinator's host and must be absolute: the coordinator reads and
writes them, so a client on another host names a directory the coordinator can reach.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from groove.protocol.models import (
    Body,
    Category,
    LearningId,
    Millis,
    Pattern,
    Probability,
    RelationType,
    Reply,
    Scope,
    Source,
    Text,
    Tier,
)

EXPORT_FORMAT = "groove-export"
EXPORT_VERSION = 1
_MAX_PATH_CHARS = 4096


def _absolute(path: str) -> str:
    if not PurePosixPath(path).is_absolute():
        raise ValueError(f"{path[:200]!r} is relative; give an absolute path on the coordinator's host")
    if "\x00" in path:
        raise ValueError("a path may not contain NUL")
    return path


HostPath = Annotated[str, Field(min_length=1, max_length=_MAX_PATH_CHARS), AfterValidator(_absolute)]


class BackupRequest(Body):
    """`backup`: a consistent snapshot of every tier, written into `directory` (new or empty)."""

    directory: HostPath


class BackedUpTier(Reply):
    """One tier in a backup: its file (relative to the backup directory) and what it held."""

    tier: str
    file: str
    learnings: int
    bytes: int


class BackupReply(Reply):
    """The backup's directory, its tiers, and how long writes were held while it was taken."""

    directory: str
    tiers: list[BackedUpTier]
    took_ms: float


class ExportRequest(Body):
    """`export`: every learning (with usage and archive state) and relation of the tiers, as one JSON file."""

    path: HostPath
    tiers: list[Tier] | None = None


class ExportReply(Reply):
    """What was written."""

    path: str
    tiers: int
    learnings: int
    relations: int


class ImportRequest(Body):
    """`import`: add an export file's learnings and relations; ids that exist already are skipped."""

    path: HostPath


class ImportReply(Reply):
    """Counts: imported, skipped because the id exists, and learnings queued for embedding."""

    tiers: int
    learnings_imported: int
    learnings_skipped: int
    relations_imported: int
    relations_skipped: int
    queued_for_embedding: int


# --- the export file -----------------------------------------------------------------------------------


class ExportedUsage(Body):
    """A learning's usage statistics as exported."""

    times_injected: Annotated[int, Field(ge=0)]
    times_helpful: Annotated[int, Field(ge=0)]
    times_ignored: Annotated[int, Field(ge=0)]
    times_contradicted: Annotated[int, Field(ge=0)]
    last_used: Millis | None
    confidence_alpha: Annotated[float, Field(gt=0)]
    confidence_beta: Annotated[float, Field(gt=0)]


class ExportedArchive(Body):
    """Set when the learning is archived."""

    archived_at: Millis
    reason: Text


class ExportedLearning(Body):
    """One learning, exactly as stored (no embedding: import queues it to be embedded again)."""

    id: LearningId
    scope: Scope
    category: Category
    description: Text
    insight: Text
    pattern: Pattern = None
    confidence: Probability
    source: Source
    created_at: Millis
    updated_at: Millis
    usage: ExportedUsage
    archived: ExportedArchive | None = None


class ExportedRelation(Body):
    """One relation, stored in its from_id's tier."""

    from_id: LearningId
    relation_type: RelationType
    to_id: LearningId
    weight: Probability
    created_at: Millis


class ExportedTier(Body):
    """One tier's learnings and relations."""

    tier: Tier
    learnings: list[ExportedLearning]
    relations: list[ExportedRelation]


class ExportFile(Body):
    """The whole file: `{"format": "groove-export", "version": 1, "exported_at": ms, "tiers": [...]}`."""

    format: Literal["groove-export"]
    version: Literal[1]
    exported_at: Millis
    tiers: list[ExportedTier]
