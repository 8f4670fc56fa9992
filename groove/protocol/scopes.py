"""Scope strings (seed 000, decision 5) and tier names (decision 7), parsed strictly.

A scope says who a learning is about: `global`, `user:<id>` or `project:<root>`. A tier says which
database holds it: `user`, `project:<root>` or `enterprise:<org>`. Unless a request names the tier, it
follows from the scope: a project scope lives in that project's tier, everything else in the user tier.
"""

from __future__ import annotations

import posixpath
import re

from groove.protocol import constants as C

_USER_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]*$")
_ORG_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
_DRIVE_RE = re.compile(r"^[A-Za-z]:[\\/]")


class ScopeError(ValueError):
    """A scope or tier string that does not follow the grammar; the message says what was expected."""


def is_absolute_root(root: str) -> bool:
    """Whether a project root is absolute: POSIX (`/...`) or a Windows drive path (`C:\\...`, `C:/...`)."""
    return root.startswith("/") or bool(_DRIVE_RE.match(root))


def normalise_root(root: str, what: str) -> str:
    """A project root in its one spelling: absolute, `.`/`..` and repeated or trailing slashes resolved, so
    `/a/b`, `/a/b/` and `/a/x/../b` name one project (one tier). Windows roots (`C:\\a\\b`) keep their drive,
    upper-cased, with forward slashes. Raises ScopeError for a relative or malformed root."""
    if not root:
        raise ScopeError(f"{what} needs a project root after 'project:', e.g. 'project:/home/alex/repo'")
    if root != root.strip():
        raise ScopeError(f"{what} project root must not start or end with whitespace")
    if _CONTROL_RE.search(root):
        raise ScopeError(f"{what} project root must not contain control characters")
    if not is_absolute_root(root):
        raise ScopeError(
            f"{what} project root {root[:80]!r} is relative; give the absolute path of the repository "
            "(the CLI resolves a relative one against the current directory)"
        )
    if _DRIVE_RE.match(root):
        return root[0].upper() + ":" + _normal(root[2:].replace("\\", "/"))
    return _normal(root)


def _normal(path: str) -> str:
    # normpath keeps a leading '//' (POSIX leaves its meaning open); groove does not
    return "/" + posixpath.normpath(path).lstrip("/")


def validate_scope(scope: str) -> str:
    """Return `scope` (a project root normalised) if it is valid, else raise ScopeError saying why."""
    if not scope:
        raise ScopeError("scope is empty; expected 'global', 'user:<id>' or 'project:<root>'")
    if len(scope) > C.MAX_SCOPE_CHARS:
        raise ScopeError(f"scope is {len(scope)} characters long; the limit is {C.MAX_SCOPE_CHARS}")
    if scope == C.SCOPE_GLOBAL:
        return scope
    if scope.startswith(C.SCOPE_USER_PREFIX):
        user_id = scope[len(C.SCOPE_USER_PREFIX) :]
        if not user_id:
            raise ScopeError("scope 'user:' needs a user id, e.g. 'user:alex'")
        if len(user_id) > C.MAX_USER_ID_CHARS or not _USER_ID_RE.match(user_id):
            raise ScopeError(
                f"scope {scope[:80]!r}: a user id is 1-{C.MAX_USER_ID_CHARS} characters of letters, digits "
                "and . _ @ + -, starting with a letter or digit"
            )
        return scope
    if scope.startswith(C.SCOPE_PROJECT_PREFIX):
        return C.SCOPE_PROJECT_PREFIX + normalise_root(scope[len(C.SCOPE_PROJECT_PREFIX) :], f"scope {scope[:80]!r}:")
    raise ScopeError(f"invalid scope {scope[:80]!r}; expected 'global', 'user:<id>' or 'project:<root>'")


def validate_tier(tier: str) -> str:
    """Return `tier` (a project root normalised) if it names a tier, else raise ScopeError saying why."""
    if tier == C.TIER_USER:
        return tier
    if len(tier) > C.MAX_SCOPE_CHARS:
        raise ScopeError(f"tier is {len(tier)} characters long; the limit is {C.MAX_SCOPE_CHARS}")
    if tier.startswith(C.TIER_PROJECT_PREFIX):
        return C.TIER_PROJECT_PREFIX + normalise_root(tier[len(C.TIER_PROJECT_PREFIX) :], f"tier {tier[:80]!r}:")
    if tier.startswith(C.TIER_ENTERPRISE_PREFIX):
        org = tier[len(C.TIER_ENTERPRISE_PREFIX) :]
        if len(org) > C.MAX_ORG_CHARS or not _ORG_RE.match(org):
            raise ScopeError(f"tier {tier[:80]!r}: an organisation id is 1-{C.MAX_ORG_CHARS} letters, digits and . _ -")
        return tier
    raise ScopeError(f"invalid tier {tier[:80]!r}; expected 'user', 'project:<root>' or 'enterprise:<org>'")


def tier_for_scope(scope: str) -> str:
    """The tier a learning of this (valid) scope lives in when the request names none."""
    if scope.startswith(C.SCOPE_PROJECT_PREFIX):
        return C.TIER_PROJECT_PREFIX + scope[len(C.SCOPE_PROJECT_PREFIX) :]
    return C.TIER_USER
