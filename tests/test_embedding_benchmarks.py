"""The embedding benchmarks run as users run them, at small sizes: ONNX Runtime against torch, and a worker's RSS."""

from __future__ import annotations

import pytest

from tests.helpers import benchmark


@pytest.mark.slow
def test_the_embedding_benchmark_times_onnx_runtime_against_torch() -> None:
    _, result = benchmark("embed", "--texts", "64", "--rounds", "1")
    ways = {r["how"]: r for r in result["results"]}
    assert {"torch fp32 cpu", "onnxruntime fp32 cpu (groove)"} <= set(ways)
    assert all(r["cosine_min"] > 0.9999 for r in ways.values())  # both against sentence-transformers' own
    assert all(r["texts_per_s"] > 0 for r in ways.values())
    assert result["ratios"]["texts_per_s_x_torch"] > 0


@pytest.mark.slow
def test_the_embedding_memory_benchmark_reads_the_worker_at_each_mark() -> None:
    _, result = benchmark("embedmem", "--texts", "100", "--long", "8")
    marks = result["mb"]
    assert 0 < marks["loaded"] <= marks["after_texts"] + 50  # the model is loaded before the first mark
    assert all(marks[key] > 0 for key in ("after_texts", "after_long", "after_more_texts"))
