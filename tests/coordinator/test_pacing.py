"""How computed vectors wait for clients' writes: the writer counts as busy while clients write, and the embedding
pool then stores a chunk of vectors no faster than their index work can take a quarter of one thread."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zmq

from groove.coordinator.metrics import Metrics
from groove.coordinator.search import embedpool
from groove.coordinator.search.derived import Derived
from groove.coordinator.search.embedpool import STORE_CHUNK, EmbedPool
from groove.coordinator.search.vectors import WorkCost
from groove.coordinator.store.records import VectorBlob, vector_blob
from groove.coordinator.store.tierset import TierSet
from groove.coordinator.write.batcher import Batcher, Outcome
from groove.coordinator.write.internal import store_vectors, writer_busy
from groove.coordinator.write.ops import PUT, WriteItem
from groove.protocol import constants as C
from groove.protocol.ids import uuid7
from groove.protocol.models import LearningPutRequest


def test_the_cost_per_vector_starts_at_the_first_call_and_then_moves_a_fifth_of_the_way() -> None:
    cost = WorkCost()
    cost.add(0.5, 0)  # nothing to divide by: ignored
    assert cost.per_vector == 0.0
    cost.add(0.064, 64)
    assert cost.per_vector == 0.001
    cost.add(0.0, 64)
    assert abs(cost.per_vector - 0.0008) < 1e-12


class Stored:
    """The batcher's side of `store`: what the pool handed over."""

    def __init__(self) -> None:
        self.chunks: list[int] = []

    def __call__(self, tier: str, rows: list[tuple[str, VectorBlob]], notes: bool) -> bool:
        self.chunks.append(len(rows))
        return True


@pytest.fixture
def context() -> Iterator[zmq.Context[Any]]:
    made: zmq.Context[Any] = zmq.Context()
    yield made
    made.destroy(linger=0)  # the pool's sockets with it


def pool_holding(
    context: zmq.Context[Any], tmp_path: Path, derived: Derived, busy: list[bool], chunks: int
) -> tuple[EmbedPool, Stored]:
    """A pool, never started, holding `chunks` chunks of computed vectors."""
    stored = Stored()
    pool = EmbedPool(derived, stored, lambda: busy[0], context, tmp_path, ("cpu", 1, 1), "info")
    row = ("id", vector_blob([0.0] * C.EMBEDDING_DIM))
    pool._unstored.extend(("user", [row] * STORE_CHUNK, False) for _ in range(chunks))
    return pool, stored


def test_while_clients_write_a_chunk_waits_for_its_vectors_index_work_to_fit_a_quarter_of_a_thread(
    context: zmq.Context[Any], tmp_path: Path
) -> None:
    derived = Derived(10, embeddings=True)
    derived.upsert_cost.add(0.064, 64)  # a millisecond a vector: a graph insert on one core
    busy = [True]
    pool, stored = pool_holding(context, tmp_path, derived, busy, chunks=4)
    pool._store(100.0)
    assert stored.chunks == [STORE_CHUNK]
    gap = STORE_CHUNK * 0.001 / embedpool._DERIVED_SHARE  # 0.256 s: longer than the 50 ms floor
    pool._store(100.0 + gap - 0.01)
    assert len(stored.chunks) == 1
    pool._store(100.0 + gap)
    assert len(stored.chunks) == 2
    busy[0] = False  # the clients stopped: what is left goes at once
    pool._store(100.0 + gap)
    assert len(stored.chunks) == 4


def test_cheap_vectors_go_a_chunk_every_fifty_ms_while_clients_write(context: zmq.Context[Any], tmp_path: Path) -> None:
    derived = Derived(10, embeddings=True)  # no cost measured yet: the floor alone
    pool, stored = pool_holding(context, tmp_path, derived, [True], chunks=3)
    pool._store(100.0)
    pool._store(100.0 + embedpool._TRICKLE_S / 2)
    assert len(stored.chunks) == 1
    pool._store(100.0 + embedpool._TRICKLE_S)
    assert len(stored.chunks) == 2


def test_the_writer_is_busy_for_a_moment_after_it_takes_a_clients_write_but_not_the_pools(tmp_path: Path) -> None:
    tiers = TierSet(tmp_path)
    tiers.open_user()
    acked: list[Outcome] = []
    batcher = Batcher(tiers, Metrics(), acked.extend, max_batch=8, max_wait_ms=0, capacity=100)
    batcher.start()
    try:
        assert not writer_busy(batcher)
        assert store_vectors(batcher, C.TIER_USER, [], notes=False)  # the pool's own write
        deadline = time.monotonic() + 10
        while batcher.depth() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert batcher.client_at == 0.0
        assert not writer_busy(batcher)
        body = {"scope": "global", "category": "solution", "description": "d", "insight": "x"}
        batcher.submit(WriteItem(uuid7(), PUT, LearningPutRequest.model_validate({"learnings": [body]})))
        while not acked and time.monotonic() < deadline:
            time.sleep(0.01)
        assert acked
        assert 0.0 < batcher.client_at <= time.monotonic()  # taken when the writer took the client's write
        batcher.client_at = time.monotonic()  # (the commit may take longer than the window on a slow machine)
        assert writer_busy(batcher)  # clients write, though one queued write is far from a quarter of a batch
        batcher.client_at -= 1.0  # a second later, with nothing more from them
        assert not writer_busy(batcher)
    finally:
        batcher.request_stop()
        deadline = time.monotonic() + 30
        while batcher.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        tiers.close()
