"""A checked request body rebuilt from the map a front process sends, without checking it again.

A front that decodes and validates a request sends the coordinator the body's `model_dump()` through msgpack.
Validating that map again would cost the coordinator what the front saved it; building the model from it
directly costs a fifth of that (1.5 µs against 3.5 for one learning, 2 vCPUs). That is sound only where the map
survives msgpack as the same values: strings, numbers, booleans, None, bytes, lists, string-keyed maps and
nested models of those. A model with anything else in it (a tuple turns into a list, a set or an enum cannot
be packed, private attributes are not dumped) is not `rebuildable`, and its requests stay with the coordinator,
which checks them as it always has.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

# a field whose value is used as it comes; None for a field that cannot be rebuilt
_Convert = Callable[[Any], Any]
_SAME: _Convert = lambda value: value  # noqa: E731
_PLAIN = (str, int, float, bool, bytes, type(None), typing.Any, object)


def rebuildable(model: type[BaseModel]) -> bool:
    """Whether a checked body of this model can be rebuilt from its dump after a trip through msgpack."""
    return _fields(model) is not None


def rebuild(model: type[M], data: dict[str, Any]) -> M:
    """The model a front checked, from its `model_dump()` (after msgpack). Takes over `data`. The model must be
    `rebuildable`; nothing is validated."""
    fields = _fields(model)
    if fields is None:
        raise TypeError(f"{model.__name__} cannot be rebuilt from its dump")
    for name, convert in fields:
        data[name] = convert(data[name])
    built = model.__new__(model)
    # what `BaseModel.model_construct` sets, without its per-field default handling: the dump has every field
    object.__setattr__(built, "__dict__", data)
    object.__setattr__(built, "__pydantic_fields_set__", set(data))
    object.__setattr__(built, "__pydantic_extra__", None)
    object.__setattr__(built, "__pydantic_private__", None)
    return built


@functools.cache
def _fields(model: type[BaseModel]) -> tuple[tuple[str, _Convert], ...] | None:
    """The fields that hold nested models, each with how to rebuild it; None if the model cannot be rebuilt."""
    if model.__private_attributes__ or model.model_config.get("extra") == "allow" or model.__pydantic_root_model__:
        return None
    nested = []
    for name, info in model.model_fields.items():
        convert = _converter(info.annotation)
        if convert is None:
            return None
        if convert is not _SAME:
            nested.append((name, convert))
    return tuple(nested)


def _converter(annotation: Any) -> _Convert | None:
    """How a value of this type is rebuilt from its dump: as it is, by rebuilding a nested model, or not at all."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _converter(args[0])
    if annotation in _PLAIN:
        return _SAME
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return None if _fields(annotation) is None else functools.partial(rebuild, annotation)
    if origin is typing.Literal:
        return _SAME if all(isinstance(arg, str | int | bool) or arg is None for arg in args) else None
    if origin is list:
        item = _converter(args[0]) if args else _SAME
        if item is None or item is _SAME:
            return item
        return lambda values: [item(value) for value in values]
    if origin is dict:
        return _SAME if args and args[0] is str and _converter(args[1]) is _SAME else None
    if origin in (typing.Union, types.UnionType):
        converters = [_converter(arg) for arg in args if arg is not type(None)]
        if all(c is _SAME for c in converters):
            return _SAME
        if len(converters) == 1 and converters[0] is not None:  # an optional nested model
            only = converters[0]
            return lambda value: None if value is None else only(value)
        return None  # a union of models: which one a map is would need checking again
    return None
