"""Text embeddings: all-MiniLM-L6-v2 (384 dims, L2-normalised), shipped with groove (`minilm/`, where its files come
from is in `buildtools/minilm.py`) and run offline: on the CPU by ONNX Runtime, on a GPU by torch when the `gpu`
extra is installed (`bert.py`). The embedding worker processes load it (`embedworker.py`); the coordinator imports
this module for its types and never loads a model.

Why ONNX Runtime on the CPU: the same model without torch's 750 MB, and faster where it counts. Measured in one
sitting on the 2-vCPU machine (`python -m benchmarks.embed`, 1,024 corpus learnings): the performance page has the
figures. Its vectors match sentence-transformers' own to a cosine of 0.99999 (`tests/coordinator/test_embedder.py`).

Memory: ONNX Runtime's arena keeps the largest pass's buffers for good, and a worker's RSS ratcheted up with
the longest texts it met. So the arena is off (each pass allocates what it needs and frees it), a pass holds at
most `PASS_TOKENS` tokens (64 short texts, or 8 of the longest: a pass's activations stay bounded whatever the
texts), and after each bulk call the C allocator is told to give back what it holds free (`malloc_trim`).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from groove.coordinator.errors import CoordinatorError
from groove.coordinator.search.duty import Pace
from groove.protocol import constants as C

log = logging.getLogger(__name__)

Vectors = npt.NDArray[np.float32]
Tokens = npt.NDArray[np.int64]

MODEL_DIR = Path(__file__).resolve().parent / "minilm"
GRAPH = "minilm.onnx"
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model: longer texts are truncated alike

# Texts per forward pass. On the CPU bigger passes pad more and gain nothing; an H100 in fp16 embedded 1,520
# texts/s at 64 and 4,850 at 512 (the write-path issue's measurement).
CPU_BATCH = 64
GPU_BATCH = 512
# Tokens in one CPU pass at most (texts x the longest's tokens). A pass's activations grow with it (and its
# attention scores with texts x tokens squared): 64 texts of 256 tokens took 1 GB of RSS. 2,048 bounds a pass at
# about 30 MB and embedded as fast as no bound (2 vCPUs, the corpus's learnings: 53 tokens at the median).
PASS_TOKENS = 2048

GPU_EXTRA = "groove[gpu]"


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of EMBEDDING_DIM dimensions."""

    name: str
    batch_size: int  # texts per forward pass

    def encode(self, texts: list[str]) -> Vectors:
        """One row per text."""
        ...


def resolve_device(wanted: str) -> str:
    """The device for `--embed-device`: `cuda` when asked for, or with `auto` when torch (the `gpu` extra) sees a
    GPU. Raises CoordinatorError when `cuda` is asked for and torch is not installed or sees none."""
    if wanted == "cpu" or (wanted == "auto" and not _nvidia_driver()):
        return "cpu"  # without importing torch: 300 MB of a worker's RSS for nothing
    try:
        import torch  # noqa: PLC0415 - seconds to import: only once a GPU could be used
    except ImportError:
        if wanted == "cuda":
            raise CoordinatorError(
                f"--embed-device cuda needs torch: pip install '{GPU_EXTRA}' (or use --embed-device cpu)"
            ) from None
        return "cpu"
    if torch.cuda.is_available():
        return "cuda"
    if wanted == "cuda":
        raise CoordinatorError(
            f"--embed-device cuda: torch {torch.__version__} sees no CUDA GPU (its build has CUDA "
            f"{torch.version.cuda or 'none'}); use --embed-device auto or cpu"
        )
    return "cpu"


def _nvidia_driver() -> bool:
    """Whether an NVIDIA driver is loaded (CUDA can see a GPU only then): on Linux its /proc entry, which GPU
    containers mount too; elsewhere it might be."""
    return not sys.platform.startswith("linux") or Path("/proc/driver/nvidia").exists()


def _tokenizer(max_length: int) -> Any:
    from tokenizers import Tokenizer  # noqa: PLC0415 - only in the worker, with the model

    tokenizer = Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json"))
    tokenizer.enable_truncation(max_length)
    tokenizer.no_padding()  # tokenizer.json pads to 128; each pass pads to its own longest instead
    return tokenizer


def passes(tokenizer: Any, texts: list[str], batch: int, tokens: int) -> Iterator[tuple[list[int], Tokens, Tokens]]:
    """The forward passes for `texts`: each pass's text indices, token ids and attention mask (padded to its
    longest). Texts of similar length go together, at most `batch` texts and `tokens` tokens (texts x longest) in
    a pass, and always at least one text."""
    encoded = tokenizer.encode_batch(texts)
    lengths = [len(e.ids) for e in encoded]
    order = sorted(range(len(texts)), key=lengths.__getitem__)
    start = 0
    while start < len(order):
        end = start + 1
        while end < len(order) and end - start < batch and (end + 1 - start) * lengths[order[end]] <= tokens:
            end += 1
        chunk = order[start:end]
        longest = lengths[chunk[-1]]
        ids = np.zeros((len(chunk), longest), dtype=np.int64)
        mask = np.zeros((len(chunk), longest), dtype=np.int64)
        for row, index in enumerate(chunk):
            ids[row, : lengths[index]] = encoded[index].ids
            mask[row, : lengths[index]] = 1
        yield chunk, ids, mask
        start = end


def missing_files() -> list[str]:
    """The model's files this install lacks (a checkout where `make install` has not put them in place)."""
    return [
        name
        for name in ("model.safetensors", "tokenizer.json", "config.json", GRAPH)
        if not (MODEL_DIR / name).is_file()
    ]


def _onnx_session(threads: int) -> Callable[[Tokens, Tokens], Vectors]:
    import onnxruntime as ort  # noqa: PLC0415 - only in the worker

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.enable_cpu_mem_arena = False  # the arena keeps the largest pass's buffers for good
    options.enable_mem_pattern = False
    # idle threads sleep instead of spinning: on 2 cores a spinning pool takes the core from the writer
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    session = ort.InferenceSession(str(MODEL_DIR / GRAPH), options, providers=["CPUExecutionProvider"])

    def run(ids: Tokens, mask: Tokens) -> Vectors:
        out: Vectors = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        return out

    return run


class MiniLM:
    """all-MiniLM-L6-v2 as groove ships it; never touches the network.

    On the CPU it runs on ONNX Runtime with `threads` threads. On a GPU (`cuda`, `cuda:N`) it runs on torch in
    fp16 (cosine to the fp32 CPU model ≥ 0.9997 measured), in passes of GPU_BATCH texts.
    """

    name = C.EMBEDDING_MODEL

    def __init__(self, device: str = "cpu", batch_size: int | None = None, threads: int | None = None) -> None:
        started = time.monotonic()
        if absent := missing_files():
            raise CoordinatorError(
                f"the embedding model's files are missing from {MODEL_DIR} ({', '.join(absent)}): reinstall groove, "
                "or in a checkout run `make install`"
            )
        self.device = device
        self.batch_size = batch_size or (CPU_BATCH if device == "cpu" else GPU_BATCH)
        self._tokens = PASS_TOKENS if device == "cpu" else self.batch_size * MAX_TOKENS
        self._tokenizer = _tokenizer(MAX_TOKENS)
        if device == "cpu":
            self._run = _onnx_session(threads or 1)
        else:
            try:
                from groove.coordinator.search import bert  # noqa: PLC0415 - torch: the gpu extra
            except ImportError as exc:
                raise CoordinatorError(f"a GPU embedder needs torch ({exc}): pip install '{GPU_EXTRA}'") from None
            self._run = bert.runner(MODEL_DIR, device)
        log.info("embedding model %s loaded on %s in %.1f s", self.name, device, time.monotonic() - started)

    def encode(self, texts: list[str], pace: Pace | None = None) -> Vectors:
        """Embed in passes of similar length (`passes`); with a `pace`, each pass rests first for what the pace
        owes (the backlog's duty, `duty.py`)."""
        out = np.empty((len(texts), C.EMBEDDING_DIM), dtype=np.float32)
        for chunk, ids, mask in passes(self._tokenizer, texts, self.batch_size, self._tokens):
            if pace is not None:
                pace.rest()
            began = time.monotonic()
            out[chunk] = self._run(ids, mask)
            if pace is not None:
                pace.ran(time.monotonic() - began)
        return out


def normalise(vector: list[float]) -> Vectors:
    """A client-supplied vector as a unit-length float32 row; raises ValueError for a zero vector."""
    row = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(row))
    if not norm > 0.0:
        raise ValueError("the embedding is all zeros")
    return (row / norm).reshape(1, -1)


def embedding_text(description: str, insight: str) -> str:
    """What a learning is embedded (and keyword-indexed) by."""
    return f"{description}\n{insight}"
