"""Who may send what: an op's role, and the organisations, tiers and scopes a key may write. Kept apart from
`auth` (keys and the CURVE gate) because it needs the operation models, which the front process never loads."""

from __future__ import annotations

from typing import Any

from groove.coordinator.net.auth import Principal
from groove.protocol import constants as C
from groove.protocol.curation import ReviewDecideRequest, ReviewListRequest
from groove.protocol.models import LearningPutRequest
from groove.protocol.ops import OPS


def op_refusal(who: Principal, op: str) -> str | None:
    """Why `who` may not send `op` at all, or None; checked before anything else is done for the request
    (a resend is answered from its first attempt's reply, so this must come first)."""
    spec = OPS.get(op)
    if spec is None or spec.allows(who.role):  # an unknown op is answered `unknown_op` by validation
        return None
    return f"{op} needs the {spec.role} role; key {who.name!r} is {who.role}"


def body_refusal(who: Principal, body: Any) -> str | None:
    """Why `who` may not send this (validated) body: an organisation or tier or scope not its own."""
    if who.role == C.ROLE_ADMIN:
        return None
    if isinstance(body, ReviewListRequest | ReviewDecideRequest) and body.org not in who.orgs:
        return f"key {who.name!r} curates {', '.join(sorted(who.orgs))}, not {body.org!r}"
    if isinstance(body, LearningPutRequest):
        return put_refusal(who, body.tier, [learning.scope for learning in body.learnings])
    return None


def put_refusal(who: Principal, tier: str | None, scopes: list[str]) -> str | None:
    """Why `who`, not an admin, may not put learnings of these scopes into `tier` (None: each to its scope's tier),
    or None. A put built in the front is checked by its tier, which names an enterprise only where the request
    did (a scope's own tier is never one)."""
    if tier is not None and tier.startswith(C.TIER_ENTERPRISE_PREFIX):
        org = tier[len(C.TIER_ENTERPRISE_PREFIX) :]
        if org not in who.orgs:
            return f"writing tier {tier!r} needs the curator role for {org!r}; key {who.name!r} is {who.role}"
    own = C.SCOPE_USER_PREFIX + who.user
    for scope in scopes:
        if scope.startswith(C.SCOPE_USER_PREFIX) and scope != own:
            return f"key {who.name!r} may write scope {own!r}, not {scope!r}"
    return None
