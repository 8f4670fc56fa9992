"""The vector index: exact and HNSW search agree, removals move rows (free them, in the graph), a background
graph build keeps every change made while it runs, and a saved index loads as it was."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from groove.coordinator.errors import DamagedIndex
from groove.coordinator.search.vectors import IDS_FILE, VectorIndex
from groove.protocol.ids import uuid7


def unit_rows(n: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, 384)).astype(np.float32)
    normalised: np.ndarray = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return normalised


def test_exact_search_ranks_by_cosine() -> None:
    index = VectorIndex(exact_limit=100)
    vectors = unit_rows(50, seed=1)
    index.upsert([f"v{i}" for i in range(50)], vectors)
    hits = index.search(vectors[7], 5)
    assert hits[0][0] == "v7"
    assert abs(hits[0][1] - 1.0) < 1e-5
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert index.state == "exact"
    assert not index.uses_hnsw


def test_removal_moves_the_last_row_and_forgets_the_id() -> None:
    index = VectorIndex(exact_limit=100)
    vectors = unit_rows(10, seed=2)
    index.upsert([f"v{i}" for i in range(10)], vectors)
    index.remove(["v3", "v9", "unknown"])
    assert len(index) == 8
    assert "v3" not in index
    assert "v8" in index
    assert index.search(vectors[8], 1)[0][0] == "v8"
    assert all(lid not in ("v3", "v9") for lid, _ in index.search(vectors[3], 8))


def test_a_background_build_keeps_changes_made_while_it_runs() -> None:
    index = VectorIndex(exact_limit=1500)
    vectors = unit_rows(4000, seed=3)
    ids = [f"v{i}" for i in range(4000)]
    index.upsert(ids[:2000], vectors[:2000])  # crosses the limit: the graph is built from a snapshot
    assert index.state in ("building", "hnsw")
    # while it builds: searches stay exact, and rows are added, replaced and removed
    assert index.search(vectors[5], 1)[0][0] == "v5"
    index.upsert(ids[2000:], vectors[2000:])
    index.upsert(["v10"], vectors[3999:4000])  # v10 now points where v3999 does
    index.remove([f"v{i}" for i in range(100, 400)])
    assert index.wait_built(timeout=120)
    assert index.state == "hnsw"
    live = [i for i in range(4000) if not 100 <= i < 400 and i != 10]
    assert len(index) == len(live) + 1
    found = sum(index.search(vectors[i], 1)[0][0] == ids[i] for i in live[::10])
    assert found >= 0.98 * len(live[::10])
    removed = {f"v{i}" for i in range(100, 400)}
    for i in range(100, 400, 20):
        assert not removed & {lid for lid, _ in index.search(vectors[i], 10)}
    assert {lid for lid, _ in index.search(vectors[3999], 2)} == {"v10", "v3999"}
    # the graph keeps serving changes after it took over
    index.upsert(["fresh"], unit_rows(1, seed=4))
    assert index.search(unit_rows(1, seed=4)[0], 1)[0][0] == "fresh"


def near_copies(n: int, seed: int) -> np.ndarray:
    """`n` unit vectors all within cosine 0.99 of one another (a swarm's many wordings of one lesson)."""
    base = unit_rows(1, seed)[0]
    rows = base + 0.01 * np.random.default_rng(seed + 1).normal(size=(n, 384)).astype(np.float32)
    normalised: np.ndarray = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return normalised


def test_near_duplicates_are_a_learnings_k_nearest_not_every_similar_one_searched_exactly_or_not() -> None:
    far = unit_rows(20, seed=4)
    for exact_limit in (10_000, 10):
        index = VectorIndex(exact_limit=exact_limit)
        ids = [f"n{i}" for i in range(60)]
        index.upsert(ids, near_copies(60, seed=3))
        index.upsert([f"f{i}" for i in range(20)], far)
        assert index.wait_built(30)
        assert index.uses_hnsw == (exact_limit == 10)
        found = index.neighbours([*ids, "f0"], threshold=0.9, k=4)
        per_learning = {lid: [other for a, other, _ in found if a == lid] for lid in ids}
        assert all(1 <= len(others) <= 4 for others in per_learning.values()), per_learning
        assert all(other.startswith("n") and other != a and score >= 0.9 for a, other, score in found)
        assert not [pair for pair in found if pair[0] == "f0"]  # nothing near it


def test_past_the_limit_each_vector_lives_in_the_graph_alone_and_a_removal_frees_its_row() -> None:
    index = VectorIndex(exact_limit=10)
    vectors = unit_rows(40, seed=5)
    index.upsert([f"v{i}" for i in range(40)], vectors)
    assert index.wait_built(30)
    assert index.uses_hnsw
    assert index.heap_bytes() == 0  # no matrix beside the graph (whose memory usearch maps itself)
    index.remove(["v3"])
    index.upsert(["new"], vectors[3:4])
    assert len(index) == 40
    assert index.search(vectors[3], 1)[0][0] == "new"
    similarity = index.similarity("v5", vectors[5])
    assert similarity is not None
    assert abs(similarity - 1.0) < 2e-3


def test_a_saved_index_loads_as_it_was_in_either_regime_and_damaged_files_are_refused(tmp_path: Path) -> None:
    vectors = unit_rows(40, seed=6)
    for limit in (100, 10):
        index = VectorIndex(exact_limit=limit)
        index.upsert([f"v{i}" for i in range(40)], vectors)
        assert index.wait_built(30)
        index.remove(["v0", "v17"])
        folder = tmp_path / f"limit{limit}"
        index.save(folder)
        loaded = VectorIndex.load(folder, exact_limit=limit)
        assert len(loaded) == 38
        assert loaded.uses_hnsw == (limit == 10)
        assert "v0" not in loaded
        for i in (1, 16, 39):
            assert loaded.search(vectors[i], 3) == index.search(vectors[i], 3)
        loaded.upsert(["more"], vectors[0:1])  # a loaded index takes writes as any other
        assert loaded.search(vectors[0], 1)[0][0] == "more"
        for damage in (b"v1\nv2", b"\x93NUMPY garbage"):  # not numpy's, or cut short
            (folder / IDS_FILE).write_bytes(damage)
            with pytest.raises(DamagedIndex):
                VectorIndex.load(folder, exact_limit=limit)
        np.save(folder / IDS_FILE, np.zeros((2, 2), dtype=np.uint64))  # ids that do not match the vectors
        with pytest.raises(DamagedIndex):
            VectorIndex.load(folder, exact_limit=limit)


def test_missing_names_the_learnings_without_a_vector_across_lookup_chunks() -> None:
    index = VectorIndex(exact_limit=100_000)
    held = [uuid7() for _ in range(5000)]  # past one hold of the lock's 4,096 lookups
    index.upsert(held, unit_rows(len(held), seed=8))
    index.remove(held[4500:4510])
    others = [uuid7(), "not-a-uuid"]
    asked = [*held, *others, *held[:10]]  # 5,012 ids: two chunks
    assert index.missing(asked) == [*held[4500:4510], *others]


def _graph_of(n: int, vectors: np.ndarray) -> VectorIndex:
    index = VectorIndex(exact_limit=100)
    index.upsert([f"v{i}" for i in range(n)], vectors[:n])
    assert index.wait_built(timeout=60)
    assert index.state == "hnsw"
    return index


def test_vectors_put_later_are_found_exactly_until_they_are_moved_into_the_graph(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    vectors = unit_rows(400, seed=7)
    index = _graph_of(300, vectors)
    move = VectorIndex._start_moving
    monkeypatch.setattr(VectorIndex, "_start_moving", lambda self: None)  # they wait, as a tier's catch-up leaves them
    # as a tier opening after a crash: learnings new since its checkpoint, and one whose vector changed
    index.upsert([f"v{i}" for i in range(300, 400)] + ["v5"], np.vstack([vectors[300:], vectors[399:]]), later=True)
    index.remove(["v360"])
    for moved in (False, True):
        assert index.state == ("hnsw" if moved else "building")
        assert index.search(vectors[350], 1)[0][0] == "v350"
        assert {lid for lid, _ in index.search(vectors[399], 2)} == {"v5", "v399"}
        assert index.similarity("v5", vectors[399]) == pytest.approx(1.0, abs=2e-3)
        assert ("v5", "v399") in {(a, b) for a, b, _ in index.neighbours(["v5"], 0.99)}
        assert "v360" not in index
        assert index.search(vectors[360], 1)[0][0] != "v360"
        assert len(index) == 399
        if not moved:
            monkeypatch.setattr(VectorIndex, "_start_moving", move)
            with index._lock:
                index._start_moving()
            assert index.wait_built(timeout=60)


def test_a_saved_index_holds_its_waiting_vectors_in_its_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vectors = unit_rows(400, seed=8)
    index = _graph_of(300, vectors)
    monkeypatch.setattr(VectorIndex, "_start_moving", lambda self: None)
    index.upsert([f"v{i}" for i in range(300, 400)], vectors[300:], later=True)
    index.save(tmp_path)
    loaded = VectorIndex.load(tmp_path, exact_limit=100)
    assert loaded.state == "hnsw"
    assert len(loaded) == 400
    assert loaded.search(vectors[350], 1)[0][0] == "v350"
