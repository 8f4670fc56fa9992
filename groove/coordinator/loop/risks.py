"""The pre-filter a proposal passes on its way to an enterprise: what should not leave a machine or a person.

It flags, it does not block: a curator sees every flag with the field it was found in and a masked
excerpt (the middle of a secret is never echoed), and decides. Kinds:

- `private_key`: a PEM private key block;
- `secret`: well-known token shapes (AWS access key ids, GitHub, GitLab, Slack, Stripe, OpenAI-style
  `sk-` keys, Google API keys, JWTs, bearer tokens) and `api_key=...`-style assignments;
- `password`: `password=...`, `passwd: ...`, `pwd=...` assignments, `password hunter2` and `the password
  is "..."` (a quoted value, or a word with letters and digits: `password reset` is prose, not a secret),
  and credentials in URLs (`scheme://user:secret@host`);
- `absolute_path`: paths that name one machine or person: home directories (`/home/<user>`,
  `/Users/<user>`, `C:\\Users\\<user>`, `~user`), `/root`, macOS `/private/var/folders`;
- `email`: e-mail addresses.
"""

from __future__ import annotations

import re
from typing import Any

_RULES: list[tuple[str, re.Pattern[str]]] = [
    ("private_key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----")),
    (
        "secret",
        re.compile(
            r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"
            r"|\bgh[pousr]_[A-Za-z0-9]{30,}\b"
            r"|\bgithub_pat_[A-Za-z0-9_]{30,}\b"
            r"|\bglpat-[A-Za-z0-9_-]{20,}\b"
            r"|\bxox[abposr]-[A-Za-z0-9-]{10,}\b"
            r"|\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}\b"
            r"|\bsk-[A-Za-z0-9_-]{20,}\b"
            r"|\bAIza[0-9A-Za-z_-]{35}\b"
            r"|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b"
            r"|\b[Bb]earer\s+[A-Za-z0-9._~+/-]{20,}=*"
            r"|\b(?:api[_-]?key|secret[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret|token)"
            r"\s*[:=]\s*['\"]?[A-Za-z0-9/+._-]{8,}",
            re.IGNORECASE,
        ),
    ),
    (
        "password",
        re.compile(
            r"\b(?:password|passwd|pwd|pass)\s*[:=]\s*['\"]?[^\s'\"]{4,}"
            # without `=` or `:` ("password hunter2", "the password is 'x y z'"), only what looks like a value:
            # a quoted string, or a word with both letters and digits ("password reset" is prose)
            r"|\b(?:password|passwd|pwd)\s+(?:is\s+|was\s+|of\s+)?"
            r"(?:'[^'\n]{4,}'|\"[^\"\n]{4,}\"|(?=[^\s'\"]*\d)(?=[^\s'\"]*[A-Za-z])[^\s'\"]{4,})"
            r"|\b[a-z][a-z0-9+.-]*://[^\s:/@]+:[^\s@/]+@[^\s/]+",
            re.IGNORECASE,
        ),
    ),
    (
        "absolute_path",
        re.compile(
            r"(?<![\w.])/(?:home|Users)/[A-Za-z0-9._-]+"
            r"|(?<![\w.])/root(?:/|\b)"
            r"|(?<![\w.])/private/var/folders/"
            r"|\b[A-Za-z]:\\\\?Users\\\\?[A-Za-z0-9._ -]+"
            r"|(?<![\w/])~[A-Za-z][A-Za-z0-9._-]*/"
        ),
    ),
    ("email", re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")),
]


def mask(text: str) -> str:
    """An excerpt that shows what was found without repeating a secret: the ends kept, the middle starred."""
    if len(text) <= 8:
        return text[:2] + "*" * (len(text) - 2)
    return text[:4] + "*" * min(len(text) - 8, 16) + text[-4:]


def scan(fields: dict[str, str]) -> list[dict[str, Any]]:
    """Every risk in these named texts, in field order: {"kind", "field", "excerpt"}."""
    flags: list[dict[str, Any]] = []
    for name, text in fields.items():
        for kind, pattern in _RULES:
            for match in pattern.finditer(text):
                excerpt = match.group(0)
                shown = excerpt if kind in ("absolute_path", "email") else mask(excerpt)
                flags.append({"kind": kind, "field": name, "excerpt": shown[:80]})
    return flags
