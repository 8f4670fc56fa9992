"""What an outcome reads of its session before it is planned: the stored injections it may close, each session's
open one, and what the session rated so far in each tier's outcome log.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from groove.coordinator.store.tiers import Tier


@dataclass(frozen=True)
class Injected:
    """A stored injection, as an outcome needs it."""

    learnings: list[tuple[str, str]]  # (learning id, tier)
    had_task: bool
    closed: bool  # its outcome was recorded already


def load_injections(user: Tier, ids: list[str]) -> dict[str, Injected]:
    """These stored injections (unknown ids are left out)."""
    rows = user.run(
        "?[injection_id, learnings_json, had_task, outcome_at] := injection_id in $ids, "
        "*injections{injection_id, learnings_json, had_task, outcome_at}",
        {"ids": ids},
    )
    return {r[0]: Injected([(a, b) for a, b in json.loads(r[1])], r[2], r[3] is not None) for r in rows}


def open_injections(user: Tier, sessions: list[str]) -> dict[str, str]:
    """Each of these sessions' newest injection whose outcome is not recorded yet: session id -> injection id."""
    rows = user.run(
        "?[session_id, injection_id, created_at] := session_id in $sessions, "
        "*injections:by_session{session_id, injection_id}, *injections{injection_id, created_at, outcome_at}, "
        "is_null(outcome_at)",
        {"sessions": sessions},
    )
    return {session: injection for session, injection, _ in sorted(rows, key=lambda r: (r[2], r[1]))}


def session_ratings(tiers: list[Tier], injections: list[str]) -> dict[str, dict[str, str]]:
    """What these open sessions rated so far: injection id -> {learning id: its first outcome}, from the outcome
    log of each tier holding some of their learnings (a close logs its own ratings only as it closes)."""
    rated: dict[str, dict[str, str]] = {}
    for tier in tiers:
        rows = tier.run(
            "?[injection_id, at, seq, learning_id, outcome] := injection_id in $ids, "
            "*outcome_log:by_injection{injection_id, learning_id, at, seq}, "
            "*outcome_log{learning_id, at, seq, outcome}",
            {"ids": injections},
        )
        for injection, _, _, lid, outcome in sorted(rows):
            rated.setdefault(injection, {}).setdefault(lid, outcome)
    return rated
