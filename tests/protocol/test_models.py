"""Operation bodies: scopes, tiers, categories, confidence and ids are checked strictly."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from protocol.ids import is_uuid7, now_ms, uuid7, uuid7_ms
from protocol.models import LearningIn, LearningListRequest, LearningPutRequest, OutcomeRecordRequest
from protocol.scopes import ScopeError, tier_for_scope, validate_scope, validate_tier


def base(**over: Any) -> dict[str, Any]:
    return {"scope": "global", "category": "solution", "description": "d", "insight": "i"} | over


@pytest.mark.parametrize("scope", ["global", "user:alex", "user:a.b@c", "project:/home/alex/repo", "project:rel"])
def test_valid_scopes(scope: str) -> None:
    assert validate_scope(scope) == scope


@pytest.mark.parametrize(
    "scope",
    [
        "",
        "proj:/x",
        "user:",
        "project:",
        "user:al ex",
        "Global",
        "project: /x",
        "project:/a\nb",
        "user:" + "a" * 200,
        "project:/" + "x" * 10_000,
    ],
)
def test_invalid_scopes(scope: str) -> None:
    with pytest.raises(ScopeError):
        validate_scope(scope)


def test_tiers() -> None:
    assert validate_tier("user") == "user"
    assert validate_tier("enterprise:acme-corp") == "enterprise:acme-corp"
    for bad in ("enterprise:", "enterprise:a/b", "team:x", "project:"):
        with pytest.raises(ScopeError):
            validate_tier(bad)
    assert tier_for_scope("project:/r") == "project:/r"
    assert tier_for_scope("user:alex") == "user"
    assert tier_for_scope("global") == "user"


@pytest.mark.parametrize(
    "override",
    [
        {"confidence": float("nan")},
        {"confidence": 7},
        {"confidence": -0.1},
        {"confidence": "0.5"},
        {"category": "gossip"},
        {"description": ""},
        {"insight": "x" * 9000},
        {"id": "not-a-uuid"},
        {"id": "01890a5d-ac96-4ed1-9b4a-1a2b3c4d5e6f"},
        {"source": {"kind": "x"}},
        {"source": {"type": "rumour"}},
        {"pattern": b"bytes"},
        {"pattern": {1: "non-string key"}},
        {"extra": 1},
    ],
)
def test_invalid_learnings(override: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        LearningIn.model_validate(base(**override))


def test_learning_defaults_and_id_normalisation() -> None:
    lid = uuid7()
    item = LearningIn.model_validate(base(id=lid.upper(), confidence=1, pattern={"k": [1, "x"]}))
    assert item.id == lid
    assert item.confidence == 1.0
    assert item.source == {"type": "user_created"}


def test_put_and_outcome_sizes() -> None:
    with pytest.raises(ValidationError):
        LearningPutRequest.model_validate({"learnings": []})
    with pytest.raises(ValidationError):
        OutcomeRecordRequest.model_validate({"attributions": [{"learning_id": uuid7(), "outcome": "meh"}]})
    with pytest.raises(ValidationError):
        LearningListRequest.model_validate({"limit": 0})
    assert LearningListRequest.model_validate({}).limit == 100


def test_uuid7_is_ordered_and_carries_its_time() -> None:
    before = now_ms()
    ids = [uuid7() for _ in range(5000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert all(is_uuid7(i) for i in ids)
    assert before <= uuid7_ms(ids[0]) <= now_ms()
