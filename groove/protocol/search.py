"""Models of the semantic-memory operations: `search`, `index.rebuild` and `embeddings.rebuild`."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from groove.protocol import constants as C
from groove.protocol.boardrecords import Note
from groove.protocol.models import (
    Body,
    Category,
    LearningOut,
    Millis,
    Probability,
    ProjectRoot,
    Reply,
    Tier,
    UuidV7,
    Vector,
)
from groove.protocol.scopes import validate_tier


class SearchContext(Body):
    """Which tiers a search reads: always the user tier, plus a project's and an enterprise's if named."""

    project: ProjectRoot | None = None
    enterprise: Annotated[str, Field(min_length=1, max_length=C.MAX_ORG_CHARS)] | None = None

    @model_validator(mode="after")
    def _valid_names(self) -> SearchContext:
        if self.enterprise is not None:
            validate_tier(C.TIER_ENTERPRISE_PREFIX + self.enterprise)
        return self

    def tiers(self) -> list[str]:
        """The tier names this context reads, user tier first."""
        names = [C.TIER_USER]
        if self.project is not None:
            names.append(C.TIER_PROJECT_PREFIX + self.project)
        if self.enterprise is not None:
            names.append(C.TIER_ENTERPRISE_PREFIX + self.enterprise)
        return names


class SearchRequest(Body):
    """`search`: learnings by meaning and by words, ranked, filtered, optionally expanded over relations."""

    text: Annotated[str, Field(min_length=1, max_length=C.MAX_QUERY_CHARS)] | None = None
    vector: Vector | None = None
    limit: Annotated[int, Field(ge=1, le=C.MAX_SEARCH_LIMIT)] = C.DEFAULT_SEARCH_LIMIT
    context: SearchContext = Field(default_factory=SearchContext)
    scope_prefix: Annotated[str, Field(max_length=C.MAX_SCOPE_CHARS)] | None = None
    category: Category | None = None
    since: Millis | None = None
    until: Millis | None = None
    min_confidence: Probability | None = None
    depth: Annotated[int, Field(ge=0, le=C.MAX_SEARCH_DEPTH)] = 0
    include_superseded: bool = False
    include_archived: bool = False
    mode: C.SearchMode = "hybrid"
    # a working memory: search its notes (memory.note) instead of learnings
    memory_id: UuidV7 | None = None

    @model_validator(mode="after")
    def _coherent(self) -> SearchRequest:
        if self.text is None and self.vector is None:
            raise ValueError("give 'text', 'vector' or both")
        if self.memory_id is not None:
            for name in _LEARNINGS_ONLY:
                if name in self.model_fields_set:
                    raise ValueError(f"'{name}' applies to learnings, not to a working memory's notes")
        if self.mode == "keyword" and self.text is None:
            raise ValueError("mode 'keyword' needs 'text'")
        if self.since is not None and self.until is not None and self.since > self.until:
            raise ValueError("'since' is after 'until'")
        return self


# Fields that filter or expand learnings: meaningless for a search of a working memory's notes.
_LEARNINGS_ONLY = (
    "context",
    "scope_prefix",
    "category",
    "min_confidence",
    "depth",
    "include_superseded",
    "include_archived",
)


class SearchHit(Reply):
    """One result: the learning, its fused score, its tier and why it is there."""

    learning: LearningOut
    score: float
    tier: str
    reasoning: str


class NoteHit(Reply):
    """One note found in a working memory: the note, its score and why it is there."""

    note: Note
    score: float
    reasoning: str


class SearchReply(Reply):
    """Results, best first: learnings, or with `memory_id` the memory's notes (then `results` is empty)."""

    results: list[SearchHit]
    notes: list[NoteHit] = Field(default_factory=list)
    took_ms: float = 0.0
    words_only: int = 0  # results asked for by meaning and found by words alone: no vector for them (or the query) yet


class RebuildRequest(Body):
    """`index.rebuild` / `embeddings.rebuild`: for the named tiers (default every tier on disk)."""

    tiers: list[Tier] | None = None


class RebuildReply(Reply):
    """How much work was started: vectors indexed, or learnings queued for embedding."""

    tiers: list[str]
    count: int
