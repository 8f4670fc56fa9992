"""Where the embedding backlog runs: `--embed-device` on a machine without a GPU (CI's)."""

from __future__ import annotations

import pytest

from coordinator.errors import CoordinatorError
from coordinator.search.embedder import CPU_BATCH, resolve_device


def test_cpu_is_cpu_and_auto_is_the_gpu_when_there_is_one() -> None:
    assert resolve_device("cpu") == "cpu"
    has_gpu = pytest.importorskip("torch").cuda.is_available()
    assert resolve_device("auto") == ("cuda" if has_gpu else "cpu")


def test_cuda_without_a_gpu_is_a_clear_error() -> None:
    if pytest.importorskip("torch").cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    with pytest.raises(CoordinatorError, match="sees no CUDA GPU"):
        resolve_device("cuda")


def test_the_cpu_model_embeds_in_cpu_sized_passes_and_matches_itself_on_one_text() -> None:
    from coordinator.search.embedder import MiniLM

    model = MiniLM("cpu")
    assert model.batch_size == CPU_BATCH
    texts = [f"flaky test number {i} under load" for i in range(CPU_BATCH + 3)]
    vectors = model.encode(texts)
    assert vectors.shape == (len(texts), 384)
    alone = model.encode([texts[-1]])[0]
    assert float(vectors[-1] @ alone) > 0.9999  # padding in a bigger pass does not change a text's vector
