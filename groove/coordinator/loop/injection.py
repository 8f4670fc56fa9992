"""Choosing what an agent session is told: `inject.prepare`, and `params.list`.

Selection follows seed 000 "How They Work Together", with every cut-off Thompson-sampled from the system's
adaptive parameters for this one session:

1. candidates: with a task text, the best `search` matches in the context's tiers (superseded learnings
   are already left out: of a `supersedes` chain only the newest remains); without one, the most
   confident learnings of those tiers;
2. a learning is dropped if its confidence is below the sampled `confidence_threshold`, if (with a task)
   its relevance is below the sampled `semantic_similarity_threshold`, or if it was contradicted more
   often than it helped. The session's best candidate (the top score among those left by the relevance
   cut-off) is spared the confidence threshold while no session has been given it yet: with the priors of
   a fresh install the drawn threshold exceeds a new learning's 0.5 in about 6-7 % of sessions, which
   withheld exact matches from a user's first sessions. From its first injection on, the threshold applies
   to it like any other, so the exemption cannot keep a learning that proved harmful in play;
3. of two candidates joined by `contradicts`, only one stays: in a project context the project tier's,
   otherwise the better scored;
4. the best `budget` remain, `budget` being the sampled `injection_budget`, capped by the request's.

The choice runs on a reader thread; recording it (the injection, and each chosen learning's
`times_injected` and `last_used`) is a write that goes through the batcher like any other, and the reply
is sent once that write committed. In a cluster, the home chooses: the owners of the context's other tiers
offer their candidates first (offers.py), and count the chosen ones in their usage after (`injection.record`).
"""

from __future__ import annotations

import json
import random
from typing import Any

from pydantic import BaseModel

from groove.coordinator.errors import Rejected
from groove.coordinator.loop import adaptive
from groove.coordinator.loop.adaptive import SPECS, AdaptiveParam
from groove.coordinator.loop.offers import POOL, Pick, held, local_picks, offered_picks
from groove.coordinator.search.derived import Derived
from groove.coordinator.store.reads import Archived, learnings_in
from groove.coordinator.store.records import vector_blob
from groove.coordinator.store.relations import INJECTIONS, PARAMS
from groove.coordinator.store.tiers import Tier
from groove.coordinator.store.tierset import TierSet
from groove.protocol import constants as C
from groove.protocol.errors import ErrorCode
from groove.protocol.ids import uuid7
from groove.protocol.loop import InjectionGetRequest, InjectPrepareRequest


class InjectRecord(BaseModel):
    """An injection chosen on a reader thread, on its way to the batcher (never on the wire)."""

    injection_id: str
    session_id: str
    learnings: list[tuple[str, str]]  # (learning id, tier), in the order injected
    had_task: bool
    params: dict[str, float]
    reply: dict[str, Any]
    elsewhere: list[str] = []  # tiers whose owner counts the injection in its learnings' usage
    task_vector: bytes | None = None  # the task's vector, stored with the injection for outcome votes (votes.py)


def load_params(tier: Tier) -> dict[str, tuple[AdaptiveParam, int | None]]:
    """Every system parameter with when it was last updated (None: still at its prior)."""
    stored = {row[0]: (adaptive.from_row(row), row[-1]) for row in tier.run(PARAMS.scan())}
    return {name: stored.get(name, (spec.prior(), None)) for name, spec in SPECS.items()}


def params_list(tiers: TierSet) -> dict[str, Any]:
    """The `params.list` reply body."""
    params = load_params(tiers.open_user())
    return {"params": [adaptive.wire(name, param, at) for name, (param, at) in params.items()]}


def prepare(tiers: TierSet, derived: Derived, body: InjectPrepareRequest, request_id: str) -> InjectRecord:
    """Choose this session's learnings; the returned record still has to be committed.

    The tiers of `body.elsewhere` are not read here: their owners offered their candidates, which are weighed
    with this coordinator's own. A request already applied in some tier (a retry after a crash that lost the
    ack, or one between two tiers' commits) gets the choice it was first given, so every tier ends up with the
    same injection.
    """
    foreign = [t for offer in body.elsewhere for t in offer.tiers]
    own = [name for name in body.context.tiers() if name not in foreign]
    earlier = _applied(tiers, body, request_id, own, foreign)
    if earlier is not None:
        return earlier
    rng = random.Random(body.seed)
    params = load_params(tiers.open_user())
    drawn = {name: param.sample(rng) for name, (param, _) in params.items()}
    budget = adaptive.budget(drawn[C.PARAM_INJECTION_BUDGET])
    if body.budget is not None:
        budget = min(budget, body.budget)
    min_confidence = SPECS[C.PARAM_CONFIDENCE_THRESHOLD].mapped(drawn[C.PARAM_CONFIDENCE_THRESHOLD])
    min_relevance = SPECS[C.PARAM_SIMILARITY_THRESHOLD].mapped(drawn[C.PARAM_SIMILARITY_THRESHOLD])
    sampled = {
        C.PARAM_INJECTION_BUDGET: float(budget),
        C.PARAM_CONFIDENCE_THRESHOLD: min_confidence,
        C.PARAM_SIMILARITY_THRESHOLD: min_relevance,
    }
    read = held(tiers, own)
    candidates = _pool(tiers, derived, body, own, read)
    if body.task is not None:
        candidates = [c for c in candidates if c.relevance >= min_relevance]
    # best score first, equal scores by id: the order does not depend on which tier (or coordinator) gave what
    candidates.sort(key=lambda c: (-c.score, c.learning_id))
    best = candidates[0] if candidates else None
    spared = best if best is not None and best.fresh else None
    candidates = [c for c in candidates if (c.confidence >= min_confidence or c is spared) and not c.harmful]
    candidates = _settle_contradictions(read, body, candidates)
    chosen = candidates[:budget]
    injection_id = uuid7()
    learnings = [{"learning": c.wire(), "score": c.score, "reasoning": c.reasoning} for c in chosen]
    reply = {
        "injection_id": injection_id,
        "learnings": learnings,
        "markdown": markdown(injection_id, body.session_id, learnings),
        "params": sampled,
    }
    return InjectRecord(
        injection_id=injection_id,
        session_id=body.session_id,
        learnings=[(c.learning_id, c.tier) for c in chosen],
        had_task=body.task is not None,
        params=sampled,
        reply=reply,
        elsewhere=foreign,
        task_vector=_task_vector(derived, body.task),
    )


def _task_vector(derived: Derived, task: str | None) -> bytes | None:
    """The task's vector as the search for its candidates used it (None without a task, or words only)."""
    if task is None:
        return None
    _, vector = derived.queries.get(task)  # the search for the candidates kept it (or consumed its failure)
    return None if vector is None else vector_blob(vector)


def _pool(
    tiers: TierSet, derived: Derived, body: InjectPrepareRequest, own: list[str], read: dict[str, Tier]
) -> list[Pick]:
    """This coordinator's candidates and those offered by the owners of the other tiers, weighed as one pool:
    with a task the best `POOL` of both by score (what one coordinator holding every tier would take)."""
    picks = local_picks(tiers, derived, body.context, body.task, own)
    if not body.elsewhere:
        return picks
    offered = offered_picks([c for offer in body.elsewhere for c in offer.candidates])
    # a supersedes relation lives in the newer learning's tier: either side may hide the other's learnings
    hidden = {lid for offer in body.elsewhere for lid in offer.superseded}
    hidden |= derived.supersessions.superseded(list(read), [p.learning_id for p in offered])
    pool = [p for p in picks + offered if p.learning_id not in hidden]
    if body.task is not None:
        pool = sorted(pool, key=lambda p: (-p.score, p.learning_id))[:POOL]
    return pool


def get_injection(tiers: TierSet, archived: Archived, body: InjectionGetRequest) -> dict[str, Any]:
    """`injection.get`: a recorded injection (kept in the user tier), each learning as it is now."""
    rows = tiers.open_user().run(INJECTIONS.by_key("id"), {"id": body.injection_id})
    if not rows:
        raise Rejected(ErrorCode.NOT_FOUND, f"no injection with id {body.injection_id}")
    stored = INJECTIONS.wire(rows[0])
    given: list[tuple[str, str]] = [(lid, tier) for lid, tier in stored["learnings"]]
    now: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(tier for _, tier in given):
        tier = tiers.get(name, create=False)
        if tier is not None:  # a tier since purged or moved: its learnings read as deleted
            now |= learnings_in(tier, archived, [lid for lid, t in given if t == name])
    return {
        "injection_id": body.injection_id,
        "session_id": stored["session_id"],
        "created_at": stored["created_at"],
        "had_task": stored["had_task"],
        "params": stored["params"],
        "closed_at": stored["outcome_at"],
        "learnings": [{"id": lid, "tier": tier, "learning": now.get(lid)} for lid, tier in given],
    }


def _applied(
    tiers: TierSet, body: InjectPrepareRequest, request_id: str, own: list[str], foreign: list[str]
) -> InjectRecord | None:
    """The injection this request id was given before, from any tier of its own it reads, or None."""
    for name in own:
        tier = tiers.get(name, create=False)
        if tier is None:
            continue
        op, _, reply = tier.replies([request_id]).get(request_id, ("", "", {}))
        # another op or body under this id is refused by the batcher; earlier versions stored only the user tier's
        # empty share of an injection
        if op == C.OP_INJECT_PREPARE and "injection_id" in reply:
            return InjectRecord(
                injection_id=reply["injection_id"],
                session_id=body.session_id,
                learnings=[(x["learning"]["id"], x["learning"]["tier"]) for x in reply["learnings"]],
                had_task=body.task is not None,
                params=reply["params"],
                reply=reply,
                elsewhere=foreign,
            )
    return None


def _settle_contradictions(read: dict[str, Tier], body: InjectPrepareRequest, cands: list[Pick]) -> list[Pick]:
    """Of two candidates that contradict each other, keep one (the project tier's in a project context)."""
    by_id = {c.learning_id: c for c in cands}
    if len(by_id) < 2:
        return cands
    dropped: set[str] = set()
    project = C.TIER_PROJECT_PREFIX + body.context.project if body.context.project is not None else None
    pairs = [(x.from_id, x.to_id) for offer in body.elsewhere for x in offer.contradicts]
    for tier in read.values():
        rows = tier.run(
            "?[a, b] := a in $ids, *learning_relations{from_id: a, relation_type: 'contradicts', to_id: b}, b in $ids",
            {"ids": list(by_id)},
        )
        pairs += [(a, b) for a, b in rows]
    # in id order, wherever a pair is stored, so that a chain of contradictions settles alike on one
    # coordinator and across several
    for a, b in sorted(set(pairs)):
        if a not in by_id or b not in by_id or a in dropped or b in dropped:
            continue
        first, second = by_id[a], by_id[b]
        if project is not None and (first.tier == project) != (second.tier == project):
            loser = second if first.tier == project else first
        else:
            loser = second if first.score >= second.score else first
        dropped.add(loser.learning_id)
    return [c for c in cands if c.learning_id not in dropped]


def markdown(injection_id: str, session_id: str, learnings: list[dict[str, Any]]) -> str:
    """The block for a CLAUDE.md-style file, between stable markers, grouped by category."""
    lines = [
        C.INJECT_BEGIN,
        f"<!-- groove injection {injection_id} for session {json.dumps(session_id)}; "
        "report outcomes with this injection id -->",
        "## Learnings from groove",
        "",
    ]
    if not learnings:
        lines.append("_No stored learning matched this session._")
    for category in C.CATEGORIES:
        group = [item["learning"] for item in learnings if item["learning"]["category"] == category]
        if not group:
            continue
        lines += [f"### {category.replace('_', ' ').capitalize()}", ""]
        for learning in group:
            insight = learning["insight"].strip()
            line = f"- **{_one_line(learning['description'])}**"
            lines.append(f"{line} {_one_line(insight)}" if insight else line)
        lines.append("")
    lines.append(C.INJECT_END)
    return "\n".join(lines) + "\n"


def _one_line(text: str) -> str:
    return " ".join(text.split())
