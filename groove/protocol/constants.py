"""Every name, key and limit of the wire protocol, in one place.

Anything a client in another language must agree on lives here and is restated in PROTOCOL.md.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

GROOVE_VERSION: Final = "0.1.0"  # the package's version (pyproject.toml reads it from here)

PROTOCOL_VERSION: Final = 1

# Operation names.
OP_PING: Final = "ping"
OP_HELLO: Final = "hello"
OP_HEARTBEAT: Final = "heartbeat"
OP_LEARNING_PUT: Final = "learning.put"
OP_LEARNING_GET: Final = "learning.get"
OP_LEARNING_LIST: Final = "learning.list"
OP_LEARNING_DELETE: Final = "learning.delete"
OP_OUTCOME_RECORD: Final = "outcome.record"
OP_RELATION_PUT: Final = "relation.put"
OP_RELATION_LIST: Final = "relation.list"
OP_STATS: Final = "stats"
OP_AGENTS_LIST: Final = "agents.list"
OP_SEARCH: Final = "search"
OP_REINDEX: Final = "index.rebuild"
OP_REEMBED: Final = "embeddings.rebuild"
OP_PARAMS_LIST: Final = "params.list"
OP_INJECT_PREPARE: Final = "inject.prepare"
OP_INJECTION_GET: Final = "injection.get"
OP_INJECTION_LIST: Final = "injection.list"
OP_LEARNING_HISTORY: Final = "learning.history"
OP_INJECT_CANDIDATES: Final = "inject.candidates"
OP_INJECTION_RECORD: Final = "injection.record"
OP_MAINTAIN: Final = "maintain"
OP_LEARNING_RESTORE: Final = "learning.restore"
OP_LEARNING_ARCHIVE: Final = "learning.archive"
OP_LEARNING_PROMOTE: Final = "learning.promote"
OP_LEARNING_PROPOSE: Final = "learning.propose"
OP_REVIEW_LIST: Final = "review.list"
OP_REVIEW_DECIDE: Final = "review.decide"
OP_BACKUP: Final = "backup"
OP_EXPORT: Final = "export"
OP_IMPORT: Final = "import"
OP_MEMORY_CREATE: Final = "memory.create"
OP_MEMORY_GET: Final = "memory.get"
OP_MEMORY_LIST: Final = "memory.list"
OP_MEMORY_UPDATE: Final = "memory.update"
OP_TASK_ADD: Final = "task.add"
OP_TASK_CLAIM: Final = "task.claim"
OP_TASK_HEARTBEAT: Final = "task.heartbeat"
OP_TASK_START: Final = "task.start"
OP_TASK_COMPLETE: Final = "task.complete"
OP_TASK_FAIL: Final = "task.fail"
OP_TASK_RELEASE: Final = "task.release"
OP_TASK_REVIEW: Final = "task.review"
OP_TASK_CANCEL: Final = "task.cancel"
OP_TASK_PRIORITIZE: Final = "task.prioritize"
OP_TASK_GET: Final = "task.get"
OP_TASK_LIST: Final = "task.list"
OP_DECISION_RECORD: Final = "decision.record"
OP_DECISION_REVERSE: Final = "decision.reverse"
OP_DECISION_LIST: Final = "decision.list"
OP_ARTIFACT_RECORD: Final = "artifact.record"
OP_ARTIFACT_LIST: Final = "artifact.list"
OP_CHECKPOINT_RECORD: Final = "checkpoint.record"
OP_CHECKPOINT_LIST: Final = "checkpoint.list"
OP_NUDGE_SEND: Final = "nudge.send"
OP_NUDGE_POLL: Final = "nudge.poll"
OP_NUDGE_ACK: Final = "nudge.ack"
OP_NUDGE_LIST: Final = "nudge.list"
OP_MEMORY_NOTE: Final = "memory.note"
OP_NOTE_LIST: Final = "note.list"

# Roles a client key may have (with CURVE), least privileged first: each may do what the ones before it may.
Role = Literal["agent", "curator", "admin"]
ROLES: Final = get_args(Role)
ROLE_AGENT, ROLE_CURATOR, ROLE_ADMIN = ROLES

# Learning categories (seed 000, decision 15).
Category = Literal["code_pattern", "preference", "solution", "error_recovery", "tool_usage", "harness_knowledge"]
CATEGORIES: Final = get_args(Category)

# Where a learning came from (seed 000, decision 15: LearningSource::source_type).
SourceType = Literal["transcript", "user_created", "promoted", "imported", "enterprise_curated", "task"]
SOURCE_TYPES: Final = get_args(SourceType)
DEFAULT_SOURCE_TYPE: Final = "user_created"
# the session `groove inject` records and `groove outcome` rates for, unless told another
CLI_SESSION_ID: Final = "cli"
SOURCE_TASK: Final = "task"  # a learning a completed task reported (seed 004, TaskResult.learnings)

# Relation types (seed 000, decision 12).
RelationType = Literal["supersedes", "contradicts", "derived_from", "related_to", "specializes"]
RELATION_TYPES: Final = get_args(RelationType)
RELATION_SUPERSEDES: Final = "supersedes"
RELATION_RELATED_TO: Final = "related_to"
RELATION_DERIVED_FROM: Final = "derived_from"
Direction = Literal["out", "in", "both"]
RELATION_DIRECTIONS: Final = get_args(Direction)

# Attribution outcomes (seed 000, UsageStats::record_outcome).
OUTCOME_HELPFUL: Final = "helpful"
OUTCOME_IGNORED: Final = "ignored"
OUTCOME_CONTRADICTED: Final = "contradicted"
OutcomeKind = Literal["helpful", "ignored", "contradicted"]
OUTCOMES: Final = get_args(OutcomeKind)

# Scopes (seed 000, decision 5) and the tiers they map to (decision 7).
SCOPE_GLOBAL: Final = "global"
SCOPE_USER_PREFIX: Final = "user:"
SCOPE_PROJECT_PREFIX: Final = "project:"
TIER_USER: Final = "user"
TIER_PROJECT_PREFIX: Final = "project:"
TIER_ENTERPRISE_PREFIX: Final = "enterprise:"

# Limits. A request breaking one gets `bad_request`; the transport drops anything over MAX_FRAME_BYTES.
MAX_MESSAGE_BYTES: Final = 1024 * 1024
MAX_FRAME_BYTES: Final = 4 * MAX_MESSAGE_BYTES
MAX_REQUEST_ID_CHARS: Final = 128
MAX_SCOPE_CHARS: Final = 1024
MAX_USER_ID_CHARS: Final = 128
MAX_ORG_CHARS: Final = 128
MAX_DESCRIPTION_CHARS: Final = 4000
MAX_INSIGHT_CHARS: Final = 8000
MAX_PATTERN_BYTES: Final = 64 * 1024
MAX_LEARNINGS_PER_PUT: Final = 500
MAX_ATTRIBUTIONS_PER_OUTCOME: Final = 500
MAX_LIST_LIMIT: Final = 1000
DEFAULT_LIST_LIMIT: Final = 100
MAX_HISTORY_LIMIT: Final = 500  # injections or outcomes in one `injection.list` or `learning.history` reply
DEFAULT_HISTORY_LIMIT: Final = 50
MAX_AGENT_FIELD_CHARS: Final = 256

# Embeddings (seed 000, decision 6): 384-dim, L2-normalised, from this model unless a client sends its own.
EMBEDDING_DIM: Final = 384
EmbeddingModel = Literal["all-MiniLM-L6-v2"]
(EMBEDDING_MODEL,) = get_args(EmbeddingModel)

# Search.
SearchMode = Literal["hybrid", "semantic", "keyword"]
SEARCH_MODES: Final = get_args(SearchMode)
DEFAULT_SEARCH_LIMIT: Final = 10
MAX_SEARCH_LIMIT: Final = 100
MAX_SEARCH_DEPTH: Final = 3
MAX_QUERY_CHARS: Final = 2000
EXPANSION_RELATIONS: Final = ("related_to", "derived_from", "specializes")

# Learning defaults. A new learning's Beta prior carries PRIOR_STRENGTH pseudo-observations split by its
# confidence, so confidence == alpha / (alpha + beta) holds from the start (0.5 gives seed 000's 1, 1).
DEFAULT_CONFIDENCE: Final = 0.5
PRIOR_STRENGTH: Final = 2.0

# record_outcome increments (seed 000, UsageStats::record_outcome).
HELPFUL_ALPHA_STEP: Final = 1.0
IGNORED_BETA_STEP: Final = 0.1
CONTRADICTED_BETA_STEP: Final = 1.5
# Learning the same content again adds this to alpha: at the uniform prior, confidence 0.5 -> 0.6 (seed 003
# adds 0.1), approaching 1 the more often it recurs.
REINFORCE_ALPHA_STEP: Final = 0.5
# Being superseded weighs like a contradiction.
SUPERSEDED_BETA_STEP: Final = 1.5
# Two learnings of one tier whose embeddings are at least this similar are near-duplicates: related_to.
NEAR_DUPLICATE_COSINE: Final = 0.9

# The learning loop (seed 000 decision 11, seed 001 "Adaptive Parameters").
PARAM_INJECTION_BUDGET: Final = "injection_budget"
PARAM_CONFIDENCE_THRESHOLD: Final = "confidence_threshold"
PARAM_SIMILARITY_THRESHOLD: Final = "semantic_similarity_threshold"
MAX_INJECTION_BUDGET: Final = 20
MAX_OFFERED: Final = 50  # candidates one tier offers an injection chosen elsewhere (the chooser's own pool)
MAX_OFFER_LINKS: Final = 10_000  # relations an offer hands on with its candidates
# The block `inject.prepare` renders for a CLAUDE.md-style file sits between these lines, so it can be
# found and replaced in place.
INJECT_BEGIN: Final = "<!-- groove:learnings:begin -->"
INJECT_END: Final = "<!-- groove:learnings:end -->"

# Lifecycle (seeds 002 and 003). A learning is idle once neither used nor created for DECAY_IDLE_DAYS; from
# then on its evidence decays: alpha and beta shrink toward the uniform prior (1, 1) by DECAY_WEEKLY_FACTOR
# per week idle. Unused for ARCHIVE_IDLE_DAYS, or below ARCHIVE_BELOW_CONFIDENCE, it is archived; archived
# for PURGE_ARCHIVED_DAYS, it is deleted.
DAY_MS: Final = 24 * 3600 * 1000
DECAY_IDLE_DAYS: Final = 30
DECAY_WEEKLY_FACTOR: Final = 0.9
ARCHIVE_IDLE_DAYS: Final = 90
ARCHIVE_BELOW_CONFIDENCE: Final = 0.1
PURGE_ARCHIVED_DAYS: Final = 365
ArchiveReason = Literal["unused", "low_confidence"]
ARCHIVE_REASONS: Final = get_args(ArchiveReason)

# Curation (seed 000 decision 8): proposals to an enterprise tier wait in its review queue.
ReviewStatus = Literal["pending", "approved", "rejected"]
REVIEW_STATUSES: Final = get_args(ReviewStatus)
ReviewDecision = Literal["approve", "reject"]
REVIEW_DECISIONS: Final = get_args(ReviewDecision)
# What the proposal pre-filter flags (coordinator/risks.py).
RiskKind = Literal["secret", "private_key", "password", "absolute_path", "email"]
RISK_KINDS: Final = get_args(RiskKind)
MAX_REVIEW_LIST: Final = 500

# The board (seed 004): working memories and their task graphs. A task's state machine is in PROTOCOL.md.
MemoryStatus = Literal["active", "paused", "completed", "cancelled", "archived"]
MEMORY_STATUSES: Final = get_args(MemoryStatus)
TaskStatus = Literal["pending", "assigned", "in_progress", "blocked", "review", "completed", "failed", "cancelled"]
TASK_STATUSES: Final = get_args(TaskStatus)
TaskReview = Literal["approved", "needs_rework", "rejected"]
TASK_REVIEWS: Final = get_args(TaskReview)
DEFAULT_MAX_ATTEMPTS: Final = 3  # failures and lease expiries before a task is `failed` for good
MAX_TASKS_PER_ADD: Final = 5000
MAX_DEPENDENCIES: Final = 100
MAX_TASK_ID_CHARS: Final = 128  # a client-chosen task id: letters, digits and . _ : -
MIN_LEASE_MS: Final = 100
MAX_LEASE_MS: Final = 24 * 3600 * 1000
DEFAULT_LEASE_MS: Final = 10 * 60 * 1000  # what an agent tool claims a task for when it does not say
MAX_TASK_LIST: Final = 20_000
MAX_BOARD_TEXT_CHARS: Final = 8000  # goals, descriptions, summaries, errors

# Nudges (seed 004): a message to an agent, to every agent of a role (`role:<role>`) or to `all`.
NudgePriority = Literal["low", "normal", "high", "critical"]
NUDGE_PRIORITIES: Final = get_args(NudgePriority)  # lowest first
NudgeDelivery = Literal["immediate", "next_turn", "when_idle"]
NUDGE_DELIVERIES: Final = get_args(NudgeDelivery)
NUDGE_TARGET_ROLE: Final = "role:"
NUDGE_TARGET_ALL: Final = "all"
PUSH_NUDGE: Final = "nudge"  # the `push` of an unsolicited message carrying an immediate nudge
MAX_NUDGES_PER_POLL: Final = 100
MAX_NUDGE_LIST: Final = 1000

# Notes (seed 004): what agents working a memory share as they go, searchable by meaning within the memory.
NoteKind = Literal["context", "discovery", "artifact_ref"]
NOTE_KINDS: Final = get_args(NoteKind)
MAX_NOTE_LIST: Final = 1000

# Suggested client behaviour.
DEFAULT_BUSY_RETRY_MS: Final = 50
MAX_BUSY_RETRY_MS: Final = 5000
HEARTBEAT_INTERVAL_S: Final = 5.0
AGENT_ALIVE_WINDOW_S: Final = 3 * HEARTBEAT_INTERVAL_S
AgentState = Literal["alive", "gone"]
AgentStatus = Literal["idle", "working", "blocked", "error"]  # what an agent says it is doing (seed 004)
AGENT_STATUSES: Final = get_args(AgentStatus)
AGENT_STATES: Final = get_args(AgentState)

# A real coding agent run by a swarm worker learns who it is from its environment: the worker sets these, and
# groove's hooks and MCP server in the agent read them (a nudge for the agent reaches it at its next tool call).
ENV_AGENT_ID: Final = "GROOVE_AGENT_ID"
ENV_MEMORY_ID: Final = "GROOVE_MEMORY_ID"
ENV_TASK_ID: Final = "GROOVE_TASK_ID"
ENV_INJECTION_ID: Final = "GROOVE_INJECTION_ID"  # set: the worker prepared and closes the session, not the hooks
ENV_ROLE: Final = "GROOVE_ROLE"
