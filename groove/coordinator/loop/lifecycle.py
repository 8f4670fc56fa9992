"""Lifecycle: decay of idle evidence, archiving of cold learnings, purging of old archive entries.

The rules (constants in protocol/constants.py, documented in PROTOCOL.md `maintain`), all evaluated at an
injectable `now`:

- **Decay.** A learning is idle from DECAY_IDLE_DAYS after it was last used (or created, if never used).
  While idle, its evidence fades: alpha and beta shrink toward the uniform prior (1, 1) by
  DECAY_WEEKLY_FACTOR per week, `x -> 1 + (x - 1) * f`. A run decays by the idle time since the tier's
  previous run (or since the learning became idle, if later), so the result does not depend on how
  often maintenance runs. Confidence drifts toward 0.5 and becomes easier to move again: forgotten
  evidence, not a verdict.
- **Archive.** Unused for ARCHIVE_IDLE_DAYS, or confidence below ARCHIVE_BELOW_CONFIDENCE (after this
  run's decay): the learning is marked archived. It stays stored, leaves search (unless
  `include_archived`) and injection, and `learning.restore` brings it back.
- **Purge.** Archived for PURGE_ARCHIVED_DAYS: deleted like `learning.delete` (relations in every tier go).

Planning reads a whole tier once per run on the writer thread; applying is part of the same batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from groove.coordinator.store.records import UsageRow
from groove.coordinator.store.tiers import Tier
from groove.protocol import constants as C

_WEEK_MS = 7 * C.DAY_MS
_RUN = "lifecycle"  # the `maintenance` row recording when this tier's last run was


@dataclass(slots=True)
class MaintainPart:
    """One tier's share of a maintenance run."""

    now: int
    decay: dict[str, float] = field(default_factory=dict)  # learning id -> factor its evidence shrinks by
    archive: list[tuple[str, str]] = field(default_factory=list)  # (learning id, reason)
    purge: list[str] = field(default_factory=list)  # archived learnings of this tier to delete
    unlink: list[str] = field(default_factory=list)  # learnings purged elsewhere: drop relations to them
    ran: bool = True  # False: this tier only drops relations to learnings another tier purged


@dataclass(slots=True)
class RestorePart:
    """A `learning.restore`, in the learning's tier."""

    learning_id: str


def plan_tier(tier: Tier, now: int) -> MaintainPart:
    """What a run at `now` does to this tier."""
    part = MaintainPart(now)
    runs = tier.run("?[at] := *maintenance{name, at}, name = $name", {"name": _RUN})
    previous = int(runs[0][0]) if runs else None
    archived = dict(tier.run("?[id, at] := *archived{learning_id: id, archived_at: at}"))
    part.purge = sorted(lid for lid, at in archived.items() if now - at >= C.PURGE_ARCHIVED_DAYS * C.DAY_MS)
    rows = tier.run(
        "?[id, created_at, last_used, alpha, beta] := *learning{id, created_at}, "
        "*usage_stats{learning_id: id, last_used, confidence_alpha: alpha, confidence_beta: beta}"
    )
    for lid, created_at, last_used, alpha, beta in rows:
        if lid in archived:
            continue
        touched = last_used if last_used is not None else created_at
        idle_since = touched + C.DECAY_IDLE_DAYS * C.DAY_MS
        start = max(idle_since, previous) if previous is not None else idle_since
        usage = UsageRow(0, 0, 0, 0, last_used, alpha, beta)
        if now > start:
            factor = C.DECAY_WEEKLY_FACTOR ** ((now - start) / _WEEK_MS)
            part.decay[lid] = factor
            usage.decay(factor)
        if now - touched >= C.ARCHIVE_IDLE_DAYS * C.DAY_MS:
            part.archive.append((lid, "unused"))
        elif usage.confidence < C.ARCHIVE_BELOW_CONFIDENCE:
            part.archive.append((lid, "low_confidence"))
    return part


def last_run_row(now: int) -> list[object]:
    """The `maintenance` row saying a run happened at `now`."""
    return [_RUN, now]
