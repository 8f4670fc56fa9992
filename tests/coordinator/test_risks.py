"""The proposal pre-filter: each kind it flags, the field it was found in, and secrets masked in excerpts."""

from __future__ import annotations

import pytest

from groove.coordinator.loop.risks import mask, scan
from groove.protocol import constants as C

CASES = [
    ("private_key", "-----BEGIN RSA PRIVATE KEY-----\nMIIE..."),
    ("secret", "use AKIAIOSFODNN7EXAMPLE for the bucket"),
    ("secret", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("secret", "set api_key=sk_live_0123456789abcdef in the env"),
    ("secret", "Authorization: Bearer abcdefghijklmnopqrstuvwxyz.0123"),
    ("password", "log in with password=hunter22"),
    ("password", "log in with password hunter2"),
    ("password", 'the staging password is "correct horse battery"'),
    ("password", "postgres://admin:s3cret@db.internal/app"),
    ("absolute_path", "the cache lives in /home/alex/.cache/pip"),
    ("absolute_path", r"see C:\Users\dana\AppData"),
    ("email", "ask alex@example.com about it"),
]


@pytest.mark.parametrize(("kind", "text"), CASES)
def test_each_kind_is_flagged_in_its_field(kind: str, text: str) -> None:
    flags = scan({"insight": text})
    assert kind in {f["kind"] for f in flags}
    assert all(f["field"] == "insight" for f in flags)
    assert {f["kind"] for f in flags} <= set(C.RISK_KINDS)


def test_secrets_are_masked_but_paths_and_addresses_shown() -> None:
    (flag,) = scan({"description": "AKIAIOSFODNN7EXAMPLE"})
    assert flag["excerpt"] == mask("AKIAIOSFODNN7EXAMPLE")
    assert "IOSFODNN7EXA" not in flag["excerpt"]
    assert flag["excerpt"].startswith("AKIA")
    assert flag["excerpt"].endswith("MPLE")
    (email,) = scan({"note": "mail alex@example.com"})
    assert email["excerpt"] == "alex@example.com"


def test_ordinary_advice_is_not_flagged() -> None:
    text = "Pin the lock file, run the tests with --timeout 30 and read /etc/hosts when DNS fails"
    assert scan({"insight": text, "description": "retry with exponential backoff"}) == []
    prose = "the password reset flow hashes with argon2; use a password manager"
    assert scan({"insight": prose}) == []


def test_flags_come_in_field_order() -> None:
    flags = scan({"description": "a@b.io", "insight": "password=longenough"})
    assert [f["field"] for f in flags] == ["description", "insight"]
