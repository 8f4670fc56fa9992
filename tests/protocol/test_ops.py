"""The operation registry against PROTOCOL.md: one section per operation, the writes listed as writes, and the
role table of section 1 saying what `Op.role` says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from groove.protocol import constants as C
from groove.protocol.models import Body, Reply
from groove.protocol.ops import OPS

DOC = (Path(__file__).parents[2] / "groove" / "protocol" / "PROTOCOL.md").read_text()
TICKED = re.compile(r"`([a-z_.]+)`")


def section(title: str) -> str:
    """The text of a `## title` section."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", DOC, re.S | re.M)
    assert match is not None, f"PROTOCOL.md has no section {title!r}"
    return match.group(1)


def test_every_operation_has_exactly_one_section_and_every_section_is_an_operation() -> None:
    documented = re.findall(r"^### `([^`]+)`$", section("5. Operations"), re.M)
    assert sorted(documented) == sorted(OPS)
    assert len(documented) == len(set(documented))


def test_the_writes_listed_in_section_5_are_the_registry_s_writes() -> None:
    intro = section("5. Operations").split("###")[0]
    listed = {name for name in TICKED.findall(intro.split("are group-committed")[0]) if name in OPS}
    assert listed == {name for name, op in OPS.items() if op.write}


def test_the_role_table_says_what_the_registry_says() -> None:
    rows = dict(re.findall(r"^\s*\| `(agent|curator|admin)` \| (.*) \|$", section("1. Transport and framing"), re.M))
    named = {role: {name for name in TICKED.findall(text) if name in OPS} for role, text in rows.items()}
    by_role = {role: {name for name, op in OPS.items() if op.role == role} for role in C.ROLES}
    assert named[C.ROLE_AGENT] == by_role[C.ROLE_AGENT]
    # a curator's row names what it adds; it may name agent operations it may use on its enterprise tiers
    assert by_role[C.ROLE_CURATOR] <= named[C.ROLE_CURATOR] <= by_role[C.ROLE_CURATOR] | by_role[C.ROLE_AGENT]
    assert named[C.ROLE_ADMIN] == by_role[C.ROLE_ADMIN]


@pytest.mark.parametrize("role", C.ROLES)
def test_each_role_may_do_what_the_roles_below_it_may(role: C.Role) -> None:
    rank = C.ROLES.index(role)
    for op in OPS.values():
        assert op.allows(role) == (C.ROLES.index(op.role) <= rank)
    assert all(op.allows(C.ROLE_ADMIN) for op in OPS.values())


def test_every_operation_names_its_models_and_its_name() -> None:
    for name, op in OPS.items():
        assert op.name == name
        assert issubclass(op.request, Body)
        assert issubclass(op.reply, Reply)
        assert op.deduped == op.write  # every write, and only a write, answers a resend from its first attempt
