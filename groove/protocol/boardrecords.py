"""What a swarm records on the board beside its tasks (protocol version 1): decisions, artifacts, checkpoints, notes and
nudges.

Each belongs to a working memory (protocol/board.py) and is stored in its tier. PROTOCOL.md, section 5,
has each operation's fields and errors.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import Field

from groove.protocol import constants as C
from groove.protocol.board import BoardText, MemoryId, TaskId
from groove.protocol.models import Body, Millis, Reply, ShortText, UuidV7

DecisionConfidence = Literal["high", "medium", "low"]
ArtifactType = Literal["code", "test", "config", "document", "migration", "schema"]
ARTIFACT_TYPES = get_args(ArtifactType)
CheckpointTrigger = Literal["manual", "periodic", "before_risky", "milestone", "before_restore"]
Paths = Annotated[list[ShortText], Field(max_length=1000)]


class DecisionRecordRequest(Body):
    """`decision.record`: a choice made while working a memory, with why and what it affects."""

    memory_id: MemoryId
    question: BoardText
    choice: BoardText
    alternatives: Annotated[list[BoardText], Field(max_length=50)] = Field(default_factory=list)
    rationale: BoardText
    made_by: ShortText
    task_id: TaskId | None = None
    affects_tasks: Annotated[list[TaskId], Field(max_length=1000)] = Field(default_factory=list)
    reversible: bool = True
    confidence: DecisionConfidence = "medium"


class DecisionReverseRequest(Body):
    """`decision.reverse`: a reversible decision no longer holds."""

    id: UuidV7
    reversed_by: ShortText


class Decision(Reply):
    """A recorded decision."""

    id: str
    memory_id: str
    question: str
    choice: str
    alternatives: list[str]
    rationale: str
    made_by: str
    made_at: int
    task_id: str | None
    affects_tasks: list[str]
    reversible: bool
    confidence: str
    reversed_by: str | None
    reversed_at: int | None


class DecisionListRequest(Body):
    """`decision.list`: a memory's decisions, newest first; of one task, or only those standing."""

    memory_id: MemoryId
    task_id: TaskId | None = None
    standing: bool = False


class DecisionListReply(Reply):
    """The decisions."""

    decisions: list[Decision]


class ArtifactRecordRequest(Body):
    """`artifact.record`: a file a task produced. A new checksum for a path is a new version of it."""

    memory_id: MemoryId
    task_id: TaskId
    type: ArtifactType
    path: ShortText
    checksum: ShortText
    created_by: ShortText
    description: Annotated[str, Field(max_length=4000)] = ""
    git_commit: ShortText | None = None
    git_branch: ShortText | None = None


class ArtifactRecordReply(Reply):
    """The artifact's id and version (the existing one, when the checksum is the latest version's)."""

    id: str
    version: int


class Artifact(Reply):
    """A recorded artifact version."""

    id: str
    memory_id: str
    task_id: str
    type: str
    path: str
    checksum: str
    created_by: str
    created_at: int
    description: str
    version: int
    previous_id: str | None
    git_commit: str | None
    git_branch: str | None


class ArtifactListRequest(Body):
    """`artifact.list`: a memory's artifacts (of one task, or every version of one path), by path and version."""

    memory_id: MemoryId
    task_id: TaskId | None = None
    path: ShortText | None = None


class ArtifactListReply(Reply):
    """The artifacts."""

    artifacts: list[Artifact]


class CheckpointRecordRequest(Body):
    """`checkpoint.record`: where an agent's work stood in git."""

    memory_id: MemoryId
    agent_id: ShortText
    task_id: TaskId | None = None
    branch: ShortText
    commit: ShortText
    worktree_path: ShortText
    trigger: CheckpointTrigger = "manual"
    description: Annotated[str, Field(max_length=4000)] = ""
    staged_changes: Paths = Field(default_factory=list)
    unstaged_changes: Paths = Field(default_factory=list)
    stash_ref: ShortText | None = None


class Checkpoint(Reply):
    """A recorded checkpoint."""

    id: str
    memory_id: str
    agent_id: str
    task_id: str | None
    branch: str
    commit: str
    worktree_path: str
    trigger: str
    description: str
    staged_changes: list[str]
    unstaged_changes: list[str]
    stash_ref: str | None
    created_at: int


class CheckpointListRequest(Body):
    """`checkpoint.list`: a memory's checkpoints (of one agent or task), newest first."""

    memory_id: MemoryId
    agent_id: ShortText | None = None
    task_id: TaskId | None = None


class CheckpointListReply(Reply):
    """The checkpoints."""

    checkpoints: list[Checkpoint]


class NudgeSendRequest(Body):
    """`nudge.send`: a message to an agent (`target` its id), a role (`role:<role>`) or `all`."""

    target: ShortText
    memory_id: MemoryId
    message: BoardText
    priority: C.NudgePriority = "normal"
    delivery: C.NudgeDelivery = "next_turn"
    created_by: ShortText


class Nudge(Reply):
    """A nudge as delivered."""

    id: str
    memory_id: str
    target: str
    message: str
    priority: str
    delivery: str
    created_by: str
    created_at: int


class NudgePollRequest(Body):
    """`nudge.poll`: the nudges for this agent not yet delivered to it, highest priority first, now delivered.
    `role` receives those sent to its role; `idle` also those waiting for it to be idle; `again` those
    delivered before but not acknowledged (a client sets it on its first poll after connecting)."""

    agent_id: ShortText
    role: ShortText | None = None
    idle: bool = False
    again: bool = False


class NudgePollReply(Reply):
    """The nudges delivered by this poll."""

    nudges: list[Nudge]


class NudgeAckRequest(Body):
    """`nudge.ack`: the agent has read these nudges; they are never delivered to it again."""

    agent_id: ShortText
    ids: Annotated[list[UuidV7], Field(min_length=1, max_length=C.MAX_NUDGES_PER_POLL)]


class NudgeAckReply(Reply):
    """How many were not acknowledged before."""

    acked: int


class NudgeListRequest(Body):
    """`nudge.list`: a memory's nudges, newest first, with who acknowledged each (what `groove board` shows)."""

    memory_id: MemoryId
    target: ShortText | None = None
    limit: Annotated[int, Field(ge=1, le=C.MAX_NUDGE_LIST)] = 50


class ListedNudge(Nudge):
    """A nudge with the agents that acknowledged it."""

    acked_by: list[str]


class NudgeListReply(Reply):
    """The nudges."""

    nudges: list[ListedNudge]


class MemoryNoteRequest(Body):
    """`memory.note`: something an agent wants the others working the memory to know, searchable by meaning
    (`search` with `memory_id`) until `expires_at`."""

    memory_id: MemoryId
    content: BoardText
    kind: C.NoteKind
    task_id: TaskId | None = None
    created_by: ShortText | None = None
    expires_at: Millis | None = None


class Note(Reply):
    """A stored note."""

    id: str
    memory_id: str
    content: str
    kind: str
    task_id: str | None
    created_by: str | None
    created_at: int
    expires_at: int | None


class NoteListRequest(Body):
    """`note.list`: a memory's notes, newest first (of one kind or task); expired ones only if asked."""

    memory_id: MemoryId
    kind: C.NoteKind | None = None
    task_id: TaskId | None = None
    include_expired: bool = False
    limit: Annotated[int, Field(ge=1, le=C.MAX_NOTE_LIST)] = 100


class NoteListReply(Reply):
    """The notes."""

    notes: list[Note]
