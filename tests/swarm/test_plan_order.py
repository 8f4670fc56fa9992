"""A plan's tasks put in an order the coordinator takes chunk by chunk: each after those it depends on."""

from __future__ import annotations

from typing import Any

import pytest

from groove.client.board import plan_order


def test_dependencies_come_first_and_the_plan_s_order_is_kept_where_it_already_is() -> None:
    tasks: list[dict[str, Any]] = [
        {"id": "docs", "depends_on": ["api"]},
        {"id": "schema"},
        {"id": "api", "depends_on": ["schema"]},
        {"id": "lint"},
        {"title": "no id", "depends_on": ["schema"]},
        {"id": "old", "depends_on": ["added-before"]},  # not in the plan: the coordinator checks it
    ]
    order = plan_order(tasks)
    assert [tasks[i].get("id", "-") for i in order] == ["schema", "api", "docs", "lint", "-", "old"]
    assert sorted(order) == list(range(len(tasks)))


def test_a_cycle_is_named() -> None:
    with pytest.raises(ValueError, match="cycle among a, b"):
        plan_order([{"id": "a", "depends_on": ["b"]}, {"id": "b", "depends_on": ["a"]}, {"id": "c"}])
