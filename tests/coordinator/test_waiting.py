"""Vectors waiting for a graph: one dense matrix through puts, drops and takes, searched exactly."""

from __future__ import annotations

import numpy as np

from groove.coordinator.search.waiting import WaitingVectors, merged


def _unit(n: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, 8)).astype(np.float32)
    normalised: np.ndarray = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return normalised


def test_puts_drops_and_takes_keep_each_row_s_vector_and_nearest_is_exact() -> None:
    vectors = _unit(40, seed=1)
    waiting = WaitingVectors(8)
    waiting.put(list(range(30)), vectors[:30])
    waiting.put([5, 30, 31], vectors[[39, 30, 31]])  # one replaced, two new
    waiting.drop([0, 7, 99])  # the last rows fill the freed places; one never held
    expected = {row: vectors[row] for row in [*range(1, 30), 30, 31] if row != 7} | {5: vectors[39]}
    assert len(waiting) == len(expected)
    assert 0 not in waiting
    assert 5 in waiting
    assert np.array_equal(waiting.vectors(sorted(expected)), np.vstack([expected[r] for r in sorted(expected)]))
    (rows, scores), *_ = waiting.nearest(vectors[39:40], 3)
    brute = sorted(expected, key=lambda r: -float(expected[r] @ vectors[39]))[:3]
    assert rows.tolist() == brute
    assert abs(float(scores[0]) - float(expected[5] @ vectors[39])) < 1e-6
    taken, held = waiting.take(4)
    assert len(taken) == 4
    assert all(row not in waiting for row in taken)
    assert np.array_equal(held, np.vstack([expected[r] for r in taken]))
    rest, _ = waiting.take(100)
    assert len(waiting) == 0
    assert sorted(taken + rest) == sorted(expected)
    assert waiting.nearest(vectors[:2], 3)[1][0].size == 0
    assert waiting.memory_bytes() == 0


def test_merged_keeps_the_best_k_of_both_best_first() -> None:
    graph = (np.array([1, 2, 3]), np.array([0.9, 0.5, 0.1], dtype=np.float32))
    waiting = (np.array([7, 8]), np.array([0.7, 0.2], dtype=np.float32))
    rows, scores = merged(graph, waiting, 3)
    assert rows.tolist() == [1, 7, 2]
    assert scores.tolist() == np.array([0.9, 0.7, 0.5], dtype=np.float32).tolist()
    empty = (np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float32))
    assert merged(graph, empty, 2)[0].tolist() == [1, 2]
