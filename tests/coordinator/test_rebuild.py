"""A checked body rebuilt from its dump after msgpack: the same model as validating it, nested models included; and
the models that cannot be rebuilt are known as such."""

from __future__ import annotations

import enum
from typing import Any

import msgpack
import pytest
from pydantic import BaseModel, Field, PrivateAttr

from groove.coordinator.wire.rebuild import rebuild, rebuildable
from groove.protocol.board import TaskAddRequest
from groove.protocol.ids import uuid7
from groove.protocol.models import Body, LearningPutRequest, OutcomeRecordRequest
from groove.protocol.ops import OPS
from tests.helpers import learning

VECTOR = [0.5] * 384

BODIES: list[tuple[type[BaseModel], dict[str, Any]]] = [
    (LearningPutRequest, {"learnings": [learning()]}),  # defaults: source, confidence, pattern
    (
        LearningPutRequest,
        {
            "learnings": [
                learning("project:/srv/x/../app/", 1, id=uuid7().upper(), pattern={"k": [1, None]}, embedding=VECTOR),
                learning("user:alex", 2, confidence=1, source={"type": "user_created", "by": "alex"}),
            ],
            "tier": "project:/srv/app",
        },
    ),
    (OutcomeRecordRequest, {"attributions": [{"learning_id": uuid7(), "outcome": "helpful", "injected": True}]}),
    (OutcomeRecordRequest, {"injection_id": uuid7(), "session_id": "s-1", "success": True}),
    (TaskAddRequest, {"memory_id": uuid7(), "tasks": [{"title": "a"}, {"title": "b", "depends_on": ["t-a"]}]}),
]


def through_msgpack(value: Any) -> Any:
    return msgpack.unpackb(msgpack.packb(value, use_bin_type=True), raw=False)


@pytest.mark.parametrize(("model", "body"), BODIES)
def test_a_rebuilt_body_is_the_validated_one(model: type[BaseModel], body: dict[str, Any]) -> None:
    checked = model.model_validate(body)
    rebuilt = rebuild(model, through_msgpack(checked.model_dump()))
    assert rebuilt == checked  # the same class, the same values (normalised scopes and ids, defaults)
    assert rebuilt.model_dump() == checked.model_dump()
    for name in model.model_fields:
        mine, theirs = getattr(rebuilt, name), getattr(checked, name)
        assert type(mine) is type(theirs), name
        if isinstance(theirs, list) and theirs:
            assert [type(x) for x in mine] == [type(x) for x in theirs], name


def test_every_write_of_the_registry_can_be_rebuilt() -> None:
    """The front checks every write: a model that could not be rebuilt would silently go unchecked there."""
    assert [name for name, op in OPS.items() if op.write and not rebuildable(op.request)] == []


class Colour(enum.Enum):
    RED = "red"


class Inner(Body):
    name: str


class Plain(Body):
    inner: Inner | None = None
    inners: list[Inner] = Field(default_factory=list)
    tags: dict[str, int] = Field(default_factory=dict)


class WithTuple(Body):
    pair: tuple[int, int]


class WithEnum(Body):
    colour: Colour


class WithPrivate(Body):
    _seen: int = PrivateAttr(0)


class WithUnionOfModels(Body):
    either: Inner | Plain


class WithBadNested(Body):
    inner: list[WithTuple]


def test_what_cannot_survive_msgpack_is_not_rebuildable() -> None:
    assert rebuildable(Plain)
    for model in (WithTuple, WithEnum, WithPrivate, WithUnionOfModels, WithBadNested):
        assert not rebuildable(model), model.__name__
    with pytest.raises(TypeError, match="WithTuple"):
        rebuild(WithTuple, {"pair": [1, 2]})


def test_optional_and_listed_models_are_rebuilt_as_models() -> None:
    checked = Plain.model_validate({"inner": {"name": "a"}, "inners": [{"name": "b"}], "tags": {"x": 1}})
    rebuilt = rebuild(Plain, through_msgpack(checked.model_dump()))
    assert rebuilt == checked
    assert isinstance(rebuilt.inner, Inner)
    assert isinstance(rebuilt.inners[0], Inner)
    assert rebuild(Plain, through_msgpack(Plain().model_dump())) == Plain()
