"""all-MiniLM-L6-v2's encoder in plain torch, for a GPU (the `gpu` extra: torch and safetensors): its weights
from the `model.safetensors` groove ships (the same file ONNX Runtime reads on the CPU), and the BERT forward pass
written out.

Why not sentence-transformers or transformers: importing them is most of a worker's start. Measured on the 2-vCPU
machine: `from sentence_transformers import SentenceTransformer` 7-10 s (it imports scikit-learn and most of
transformers), `from transformers import BertModel` 4.6 s, beside 2.5 s for torch. The forward pass is BERT's
(post-LayerNorm, exact GELU, absolute positions); in fp32 its vectors matched sentence-transformers' own to a cosine
of 0.99999, in fp16 on an H100 0.9997.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from safetensors.torch import load_file
from torch import nn
from torch.nn import functional as F


class _Layer(nn.Module):
    """One encoder layer: self-attention, then the feed-forward block, each followed by add and LayerNorm."""

    def __init__(self, hidden: int, heads: int, inner: int, eps: float) -> None:
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attention_out = nn.Linear(hidden, hidden)
        self.attention_norm = nn.LayerNorm(hidden, eps=eps)
        self.inner = nn.Linear(hidden, inner)
        self.out = nn.Linear(inner, hidden)
        self.out_norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        batch, length, hidden = x.shape

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(batch, length, self.heads, hidden // self.heads).transpose(1, 2)

        attended = F.scaled_dot_product_attention(split(self.query(x)), split(self.key(x)), split(self.value(x)), bias)
        attended = attended.transpose(1, 2).reshape(batch, length, hidden)
        x = self.attention_norm(x + self.attention_out(attended))
        out: torch.Tensor = self.out_norm(x + self.out(F.gelu(self.inner(x))))
        return out


class Bert(nn.Module):
    """BERT's encoder (no pooler: the sentence vector is the mean of the last hidden states)."""

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__()
        if (
            config.get("hidden_act", "gelu") != "gelu"
            or config.get("position_embedding_type", "absolute") != "absolute"
        ):
            raise ValueError("only BERT with exact GELU and absolute positions is supported")
        hidden, eps = int(config["hidden_size"]), float(config["layer_norm_eps"])
        self.words = nn.Embedding(int(config["vocab_size"]), hidden)
        self.positions = nn.Embedding(int(config["max_position_embeddings"]), hidden)
        self.types = nn.Embedding(int(config["type_vocab_size"]), hidden)
        self.norm = nn.LayerNorm(hidden, eps=eps)
        heads, inner = int(config["num_attention_heads"]), int(config["intermediate_size"])
        self.layers = nn.ModuleList(_Layer(hidden, heads, inner, eps) for _ in range(int(config["num_hidden_layers"])))

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The last hidden states, `ids` and `mask` (1 for a token, 0 for padding) of shape (batch, length)."""
        positions = torch.arange(ids.shape[1], device=ids.device)
        x: torch.Tensor = self.norm(self.words(ids) + self.positions(positions) + self.types(torch.zeros_like(ids)))
        # padding is never attended to: the lowest value the dtype has, added to its scores
        bias = (1.0 - mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for layer in self.layers:
            x = layer(x, bias)
        return x


# the checkpoint's names (transformers' BertModel) for each of ours in a layer
_LAYER_NAMES = {
    "query": "attention.self.query",
    "key": "attention.self.key",
    "value": "attention.self.value",
    "attention_out": "attention.output.dense",
    "attention_norm": "attention.output.LayerNorm",
    "inner": "intermediate.dense",
    "out": "output.dense",
    "out_norm": "output.LayerNorm",
}
_TOP_NAMES = {
    "words": "embeddings.word_embeddings",
    "positions": "embeddings.position_embeddings",
    "types": "embeddings.token_type_embeddings",
    "norm": "embeddings.LayerNorm",
}


def _checkpoint_name(ours: str) -> str:
    module, _, param = ours.rpartition(".")
    if module.startswith("layers."):
        _, number, name = module.split(".")
        return f"encoder.layer.{number}.{_LAYER_NAMES[name]}.{param}"
    return f"{_TOP_NAMES[module]}.{param}"


def runner(
    directory: Path, device: str
) -> Callable[[npt.NDArray[np.int64], npt.NDArray[np.int64]], npt.NDArray[np.float32]]:
    """The model from a sentence-transformers directory, on `device` (in fp16 on a GPU), as a function of token
    ids and attention mask (numpy, batch x tokens) to unit-length float32 sentence vectors."""
    config = json.loads((directory / "config.json").read_text())
    model = Bert(config)
    weights = load_file(str(directory / "model.safetensors"))
    model.load_state_dict({ours: weights[_checkpoint_name(ours)] for ours in model.state_dict()})
    model.eval()
    model.to(device)
    if device != "cpu":
        model.half()

    def run(ids: npt.NDArray[np.int64], mask: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        with torch.inference_mode():
            tokens, present = torch.from_numpy(ids).to(device), torch.from_numpy(mask).to(device)
            hidden = model(tokens, present).float()  # pooled in fp32
            weights = present.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            out: npt.NDArray[np.float32] = F.normalize(pooled, dim=1).cpu().numpy()
        return out

    return run
