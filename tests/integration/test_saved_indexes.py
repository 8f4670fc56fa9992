"""Derived indexes across restarts: the last checkpoint's are loaded, after a clean stop or a crash, and brought
up to date from the tier's derived log; a damaged one is rebuilt; every learning stays findable by its words and
by its vector either way (real coordinators, real RocksDB dirs)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from groove.client import GrooveClient
from groove.coordinator.search.saved import VECTOR_DIR
from groove.coordinator.search.vectors import MATRIX_FILE
from groove.coordinator.store.tiers import tier_dir
from groove.protocol import constants as C
from tests.helpers import RunningCoordinator, wait_for


def _put(client: GrooveClient, word: str, seed: int) -> tuple[str, list[float]]:
    vector = np.random.default_rng(seed).standard_normal(C.EMBEDDING_DIM)
    vector = (vector / np.linalg.norm(vector)).tolist()
    learning = {"scope": "global", "category": "solution", "description": f"the {word} case", "insight": "x"}
    return client.put_learnings([{**learning, "embedding": vector}]).ids[0], vector


def _found(client: GrooveClient, lid: str, word: str, vector: list[float]) -> bool:
    by_words = client.search(word, mode="keyword")
    by_meaning = client.search(vector=vector, mode="semantic", limit=1)
    return [hit.learning.id for hit in by_words] == [lid] and by_meaning[0].learning.id == lid


def _load(client: GrooveClient) -> str:
    """How the user tier came by its indexes at this start (`stats.index_loads`)."""
    return client.stats().index_loads["user"]


def test_a_clean_stop_keeps_the_indexes_and_a_crash_reads_again_only_what_came_after_the_last_checkpoint(
    coordinator: RunningCoordinator, client_factory: Callable[..., GrooveClient]
) -> None:
    client = client_factory(coordinator.endpoint)
    first = _put(client, "alpha", 1)
    coordinator.stop()
    coordinator.restart()
    client = client_factory(coordinator.endpoint)
    assert _found(client, first[0], "alpha", first[1])
    assert _load(client) == "kept"
    # its count and content hashes were kept too: the same content is still known, and counted once
    assert "opened tier user (1 learnings kept" in coordinator.log()
    assert _put(client, "alpha", 1)[0] == first[0]
    assert [t.learnings for t in client.stats().tiers if t.tier == "user"] == [1]
    second = _put(client, "beta", 2)  # then a crash: the derived log holds what came after the checkpoint
    client.delete(first[0])
    coordinator.kill()
    coordinator.restart()
    client = client_factory(coordinator.endpoint)
    assert client.search("alpha", mode="keyword") == []
    assert _found(client, second[0], "beta", second[1])
    assert _load(client) == "kept, 2 read again"
    assert [t.learnings for t in client.stats().tiers if t.tier == "user"] == [1]
    coordinator.stop()
    coordinator.restart()
    client = client_factory(coordinator.endpoint)
    assert _found(client, second[0], "beta", second[1])
    assert _load(client) == "kept"


@pytest.mark.parametrize(
    ("damaged", "load"),
    [
        ("vectors", "keywords kept, vectors rebuilt"),
        ("keywords", "vectors kept, keywords rebuilt"),
        ("both", "rebuilt"),
    ],
)
def test_a_damaged_saved_index_is_rebuilt_and_loses_nothing(
    coordinator: RunningCoordinator, client_factory: Callable[..., GrooveClient], damaged: str, load: str
) -> None:
    client = client_factory(coordinator.endpoint)
    saved = [_put(client, word, seed) for seed, word in enumerate(("gamma", "delta"))]
    coordinator.stop()
    if damaged in ("vectors", "both"):
        (matrix,) = (tier_dir(coordinator.data_dir, C.TIER_USER) / VECTOR_DIR).glob(f"*/{MATRIX_FILE}")
        matrix.write_bytes(b"not a matrix")
    if damaged in ("keywords", "both"):
        (coordinator.data_dir / "keywords.sqlite").write_bytes(b"not a database either")
    coordinator.restart()
    client = client_factory(coordinator.endpoint)
    for (lid, vector), word in zip(saved, ("gamma", "delta"), strict=True):
        assert _found(client, lid, word, vector)
    assert _load(client) == load


def test_a_checkpoint_while_serving_spares_a_crash_the_rebuild_even_of_a_tier_the_crashed_run_never_opened(
    coordinator_factory: Callable[..., RunningCoordinator], client_factory: Callable[..., GrooveClient]
) -> None:
    coordinator = coordinator_factory("--checkpoint-every-s", "0.1")
    client = client_factory(coordinator.endpoint)
    vector = np.random.default_rng(7).standard_normal(C.EMBEDDING_DIM)
    learning = {"category": "solution", "description": "the epsilon case", "insight": "x", "embedding": list(vector)}
    (lid,) = client.put_learnings([{**learning, "scope": "project:/srv/shop"}]).ids
    wait_for(lambda: "checkpointed the derived indexes" in coordinator.log(), "a checkpoint while serving")
    coordinator.kill()
    coordinator.restart()
    client = client_factory(coordinator.endpoint)
    _put(client, "zeta", 8)  # the user tier only: the project's tier is not opened in this run
    coordinator.kill()
    coordinator.restart()
    client = client_factory(coordinator.endpoint)
    assert [hit.learning.id for hit in client.search("epsilon", mode="keyword", project="/srv/shop")] == [lid]
    assert client.stats().index_loads["project:/srv/shop"] == "kept"
    by_meaning = client.search(vector=list(vector), mode="semantic", limit=1, project="/srv/shop")
    assert by_meaning[0].learning.id == lid
