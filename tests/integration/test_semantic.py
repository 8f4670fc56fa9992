"""The real embedding model inside a real coordinator: paraphrases find their learning, writes become
searchable by meaning in the background, and keywords work before the embedding exists.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from groove.client import GrooveClient
from tests.helpers import RunningCoordinator, learning

PAIRS = json.loads((Path(__file__).parents[2] / "benchmarks" / "data" / "paraphrases.json").read_text())
CATEGORIES = ["code_pattern", "solution", "tool_usage", "error_recovery"]


@pytest.fixture(scope="module")
def semantic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GrooveClient, list[str]]]:
    """One coordinator with the model for the whole module (loading it costs seconds), the set stored."""
    from groove.cli.processes import start_coordinator
    from groove.swarm.fleet import stop_process

    data = tmp_path_factory.mktemp("semantic")
    proc, endpoint = start_coordinator(data, [])
    client = GrooveClient(endpoint, timeout=60)
    try:
        items = [
            learning(n=i, description=p["learning"], insight=p["learning"], category=CATEGORIES[i % 4])
            for i, p in enumerate(PAIRS)
        ]
        ids = client.put_learnings(items).ids
        deadline = time.monotonic() + 180
        while client.stats().vectors < len(ids):
            assert time.monotonic() < deadline, "the embedding worker never caught up"
            time.sleep(0.2)
        yield client, ids
    finally:
        client.close()
        stop_process(proc)


@pytest.mark.slow
def test_paraphrased_queries_find_their_learning_in_the_top_3(semantic: tuple[GrooveClient, list[str]]) -> None:
    client, ids = semantic
    assert len(PAIRS) >= 30
    ranks = {}
    for pair, lid in zip(PAIRS, ids, strict=True):
        found = [h.learning.id for h in client.search(pair["query"], limit=10)]
        ranks[pair["query"]] = found.index(lid) + 1 if lid in found else None
    top3 = sum(1 for r in ranks.values() if r is not None and r <= 3)
    print(f"paraphrase top-3: {top3}/{len(PAIRS)}; misses: {[q for q, r in ranks.items() if not r or r > 3]}")
    assert top3 == len(PAIRS), ranks


@pytest.mark.slow
def test_a_new_learning_is_found_by_words_at_once_and_by_meaning_soon(
    semantic: tuple[GrooveClient, list[str]],
) -> None:
    client, _ = semantic
    lid = client.learn(
        "global",
        "solution",
        "Debounce filesystem watcher events before rebuilding",
        "Wait 200 ms after the last change event, then rebuild once",
    )
    assert lid in [h.learning.id for h in client.search("debounce watcher", mode="keyword")]
    deadline = time.monotonic() + 60
    while lid not in [
        h.learning.id for h in client.search("rebuilding too often when files change", mode="semantic", limit=3)
    ]:
        assert time.monotonic() < deadline, "never became searchable by meaning"
        time.sleep(0.1)
    stats = client.stats()
    assert stats.embedder == "all-MiniLM-L6-v2"
    assert stats.visibility_lag_ms.samples >= 1


def test_without_a_model_hybrid_search_falls_back_to_keywords(
    coordinator_factory: Callable[..., RunningCoordinator], client_factory: Callable[..., GrooveClient]
) -> None:
    running = coordinator_factory("--embedder", "none")
    client = client_factory(running.endpoint)
    lid = client.learn("global", "tool_usage", "pytest -x stops at the first failure", "use -x while debugging")
    hits = client.search("first failure")
    assert [h.learning.id for h in hits] == [lid]
    assert client.stats().embedder == "none"


@pytest.mark.slow
def test_reembed_recomputes_every_vector(semantic: tuple[GrooveClient, list[str]]) -> None:
    client, ids = semantic
    before = client.stats().vectors
    reply = client.reembed()
    assert reply.count >= len(ids)
    deadline = time.monotonic() + 180
    while client.stats().embedding_queue_depth:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert client.stats().vectors == before
    pair = PAIRS[0]
    assert client.search(pair["query"], limit=3, mode="semantic")[0].learning.id == ids[0]
