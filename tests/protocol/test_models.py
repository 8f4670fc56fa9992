"""Operation bodies: scopes, tiers, categories, confidence and ids are checked strictly."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from groove.protocol.ids import is_uuid7, now_ms, uuid7, uuid7_ms
from groove.protocol.models import LearningIn, LearningListRequest, LearningPutRequest, OutcomeRecordRequest
from groove.protocol.scopes import ScopeError, tier_for_scope, validate_scope, validate_tier
from groove.protocol.search import SearchContext


def base(**over: Any) -> dict[str, Any]:
    return {"scope": "global", "category": "solution", "description": "d", "insight": "i"} | over


@pytest.mark.parametrize("scope", ["global", "user:alex", "user:a.b@c", "project:/home/alex/repo", "project:C:/src/x"])
def test_valid_scopes(scope: str) -> None:
    assert validate_scope(scope) == scope


@pytest.mark.parametrize(
    "spelling",
    ["/a/b", "/a/b/", "/a/x/../b", "/a/./b", "//a//b", "/a/b/.", "/../a/b"],
)
def test_every_spelling_of_a_project_root_is_one_scope_and_one_tier(spelling: str) -> None:
    assert validate_scope("project:" + spelling) == "project:/a/b"
    assert validate_tier("project:" + spelling) == "project:/a/b"
    body = {"learnings": [base(scope="project:" + spelling)], "tier": "project:" + spelling}
    request = LearningPutRequest.model_validate(body)
    assert (request.learnings[0].scope, request.tier) == ("project:/a/b", "project:/a/b")
    assert SearchContext.model_validate({"project": spelling}).tiers() == ["user", "project:/a/b"]


def test_windows_roots_keep_their_drive_with_forward_slashes() -> None:
    assert validate_scope("project:c:\\src\\app\\") == "project:C:/src/app"
    assert validate_scope("project:C:/src/x/../app") == "project:C:/src/app"


@pytest.mark.parametrize("root", ["rel", "a/b", "./a", "../a", "~/repo"])
def test_a_relative_project_root_is_refused_saying_so(root: str) -> None:
    with pytest.raises(ScopeError, match="relative"):
        validate_scope("project:" + root)
    with pytest.raises(ScopeError, match="relative"):
        validate_tier("project:" + root)
    with pytest.raises(ValidationError, match="relative"):
        SearchContext.model_validate({"project": root})


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


@pytest.mark.parametrize("field", ["description", "insight"])
@pytest.mark.parametrize("blank", [" ", "\t\n ", "\u3000"])
def test_a_learning_of_only_whitespace_is_refused(field: str, blank: str) -> None:
    # stored, it would match no search and be injected as an empty bullet
    with pytest.raises(ValidationError, match="more than whitespace"):
        LearningIn.model_validate(base(**{field: blank}))
