"""What happened to learnings over time (reader threads): `injection.list` and `learning.history`.

Injections are kept in the user tier; each outcome is logged in its learning's tier (`outcome_log`) with the
confidence it left behind, so a learning's confidence curve is read back, not recomputed.
"""

from __future__ import annotations

from typing import Any

from groove.coordinator.errors import not_found
from groove.coordinator.store.relations import INJECTIONS, OUTCOME_LOG
from groove.coordinator.store.tierset import TierSet
from groove.protocol.loop import InjectionListRequest, LearningHistoryRequest

_INJECTION_COLS = ", ".join(INJECTIONS.cols)
_LOG_COLS = ", ".join(OUTCOME_LOG.cols)


def list_injections(tiers: TierSet, body: InjectionListRequest) -> dict[str, Any]:
    """`injection.list`: the newest injections made before the one `before` names, with each learning's logged
    outcome."""
    # ids are UUIDv7, ordered by the time they were made: paging by id skips and repeats nothing, even between
    # two injections of the same millisecond
    before = "" if body.before is None else ", injection_id < $before"
    rows = tiers.open_user().run(
        f"?[{_INJECTION_COLS}] := {INJECTIONS.pattern()}{before} :order -injection_id :limit $limit",
        {"before": body.before, "limit": body.limit + 1},
    )
    more = len(rows) > body.limit
    stored = [INJECTIONS.wire(row) for row in rows[: body.limit]]
    outcomes: dict[str, dict[str, str]] = {}
    closed = [s["injection_id"] for s in stored if s["outcome_at"] is not None]
    # outcomes are logged in each learning's tier
    names = dict.fromkeys(name for s in stored if s["outcome_at"] is not None for _, name in s["learnings"])
    for name in names:
        tier = tiers.get(name, create=False)
        if tier is not None:  # a tier since purged or moved: its outcomes are gone with it
            logged = tier.run(
                "?[injection_id, learning_id, outcome] := injection_id in $ids, "
                "*outcome_log:by_injection{injection_id, learning_id, at, seq}, "
                "*outcome_log{learning_id, at, seq, outcome}",
                {"ids": closed},
            )
            for injection_id, learning_id, outcome in logged:
                outcomes.setdefault(injection_id, {})[learning_id] = outcome
    injections = [
        {
            "injection_id": s["injection_id"],
            "session_id": s["session_id"],
            "created_at": s["created_at"],
            "had_task": s["had_task"],
            "params": s["params"],
            "closed_at": s["outcome_at"],
            "learnings": [lid for lid, _ in s["learnings"]],
            "outcomes": outcomes.get(s["injection_id"], {}),
        }
        for s in stored
    ]
    return {"injections": injections, "before": injections[-1]["injection_id"] if more else None}


def learning_history(tiers: TierSet, body: LearningHistoryRequest) -> dict[str, Any]:
    """`learning.history`: the learning's logged outcomes and the injections that held it."""
    tier = tiers.locate([body.id]).get(body.id)
    if tier is None:
        raise not_found(body.id)
    rows = tier.run(
        f"?[{_LOG_COLS}] := learning_id = $id, {OUTCOME_LOG.pattern()} :order -at, -seq :limit $limit",
        {"id": body.id, "limit": body.limit},
    )
    outcomes = [
        {
            "at": r["at"],
            "outcome": r["outcome"],
            "injection_id": r["injection_id"] or None,
            "confidence": r["confidence"],
        }
        for r in map(OUTCOME_LOG.wire, reversed(rows))
    ]
    # the injection's learnings are JSON text: a substring test finds the ones that name this id
    given = tiers.open_user().run(
        "?[injection_id, session_id, created_at, outcome_at] := "
        "*injections{injection_id, session_id, created_at, outcome_at, learnings_json}, "
        "str_includes(learnings_json, $id) :order -created_at :limit $limit",
        {"id": body.id, "limit": body.limit},
    )
    given_to = [{"injection_id": i, "session_id": s, "created_at": c, "closed_at": o} for i, s, c, o in given]
    return {"id": body.id, "outcomes": outcomes, "given_to": given_to}
