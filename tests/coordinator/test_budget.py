"""The memory budget's shares, and the per-entry sizes it divides them by, measured here with tracemalloc."""

from __future__ import annotations

import json
import random
import tracemalloc
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from groove.coordinator.budget import DEFAULT_MB, REPLY_BYTES, ROW_BYTES, VOTE_BYTES, Budget
from groove.swarm.corpus import load

_N = 5_000


def _per_entry(fill: Callable[[OrderedDict[Any, Any], int], None]) -> float:
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept: OrderedDict[Any, Any] = OrderedDict()
    for i in range(_N):
        fill(kept, i)
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(kept) == _N
    return used / _N


def test_a_cached_row_costs_about_row_bytes() -> None:
    corpus, rng = load(), random.Random(5)

    def fill(kept: OrderedDict[Any, Any], i: int) -> None:
        learning = corpus.learning(rng, noted_by="budget")
        lid = str(uuid.uuid4())
        kept[("project:/srv/app", lid)] = [
            lid,
            learning["scope"],
            learning["category"],
            learning["description"],
            "null",
            learning["insight"],
            learning["confidence"],
            1_795_000_000_000 + i,
            1_795_000_000_000 + i,
            "transcript",
            json.dumps(learning["source"]),
            i % 7,
            i % 3,
            i % 2,
            0,
            1_795_000_000_000 + i,
            1.5 + i % 4,
            1.0,
        ]  # JOINED_HEAD's 18 columns, as CozoDB returns them

    assert ROW_BYTES / 2 <= _per_entry(fill) <= ROW_BYTES * 2


def test_a_cached_reply_costs_about_reply_bytes() -> None:
    def fill(kept: OrderedDict[Any, Any], i: int) -> None:
        payload = bytes(random.Random(i).randbytes(120))  # a learning.put's msgpack reply
        kept[str(uuid.uuid4())] = ("learning.put", uuid.uuid4().hex, payload)

    assert REPLY_BYTES / 2 <= _per_entry(fill) <= REPLY_BYTES * 2


def test_a_past_task_costs_about_vote_bytes() -> None:
    def fill(kept: OrderedDict[Any, Any], i: int) -> None:
        kept[str(uuid.uuid4())] = np.random.default_rng(i).random(384, dtype=np.float32).tobytes()

    assert VOTE_BYTES / 2 <= _per_entry(fill) <= VOTE_BYTES * 2


@pytest.mark.parametrize("total", [256, DEFAULT_MB, 4096])
def test_the_shares_grow_with_the_budget_and_stay_within_it(total: int) -> None:
    budget = Budget(total)
    mb = 1024 * 1024
    shares = (
        budget.tiers_mb * mb
        + budget.row_cache() * ROW_BYTES
        + budget.reply_cache() * REPLY_BYTES
        + budget.votes_per_tier() * 8 * VOTE_BYTES
    )
    assert shares <= 0.66 * total * mb  # the rest: the interpreter, the vectors and keyword entries themselves
    assert Budget(total * 2).row_cache() == pytest.approx(2 * budget.row_cache(), rel=0.01)
