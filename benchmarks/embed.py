"""Embedding throughput of the ways the coordinator could run MiniLM, against the one it runs.

    python -m benchmarks.embed [--texts 1024]

On corpus learnings (the text the coordinator embeds: description, newline, insight):
- `torch fp32 cpu`: `MiniLM("cpu")`, what the coordinator runs without a GPU (the reference);
- `torch int8 cpu`: the same model with its Linear layers quantized to int8 (`quantize_dynamic`);
- `onnxruntime cpu`: the transformer exported to ONNX and run by ONNX Runtime (when `onnxruntime` and `onnx`
  are installed; groove does not depend on them);
- `torch fp16 cuda`: `MiniLM("cuda")`, batch 64 and 512, when torch sees a GPU.

For each: texts/s embedding the whole set as the worker does (256 texts per call on the CPU, 2,048 on a GPU),
one query's latency (median of 50), and the cosine of its vectors to the reference (min and mean). Prints a
table, then one JSON line.
"""

from __future__ import annotations

import importlib.util
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import numpy as np

from benchmarks.common import machine
from groove.agents.corpus import load
from groove.cli.output import table
from groove.coordinator.search.embedder import MiniLM, Vectors, embedding_text
from groove.protocol import constants as C

_SINGLES = 20  # one-text encodes timed for the query latency (their median)

Encode = Callable[[list[str]], Vectors]


def corpus_texts(n: int) -> list[str]:
    """`n` learnings' embedding texts from the synthetic corpus."""
    corpus, rng = load(), random.Random(7)
    texts = []
    for _ in range(n):
        learning = corpus.learning(rng, noted_by="bench")
        texts.append(embedding_text(learning["description"], learning["insight"]))
    return texts


def measure(name: str, encode: Encode, texts: list[str], per_call: int, reference: Vectors) -> dict[str, Any]:
    """Throughput, single-query latency and agreement with the reference of one way to embed."""
    encode(texts[:per_call])  # warm: first calls allocate
    started = time.perf_counter()
    vectors = np.concatenate([encode(texts[i : i + per_call]) for i in range(0, len(texts), per_call)])
    elapsed = time.perf_counter() - started
    singles = []
    for text in texts[:_SINGLES]:
        t0 = time.perf_counter()
        encode([text])
        singles.append((time.perf_counter() - t0) * 1000)
    cosines = np.sum(vectors * reference, axis=1)
    return {
        "how": name,
        "texts_per_s": round(len(texts) / elapsed, 1),
        "query_ms": round(statistics.median(singles), 2),
        "cosine_min": round(float(cosines.min()), 5),
        "cosine_mean": round(float(cosines.mean()), 5),
    }


def int8(model: MiniLM) -> Encode:
    """The CPU model with its Linear layers dynamically quantized to int8."""
    import copy

    import torch

    quantized = copy.copy(model)
    quantized._model = torch.ao.quantization.quantize_dynamic(  # type: ignore[no-untyped-call]
        copy.deepcopy(model._model), {torch.nn.Linear}, dtype=torch.qint8
    )
    return quantized.encode


def onnx_runtime(model: MiniLM, work: Path) -> Encode:
    """The transformer exported to ONNX, run by ONNX Runtime on the CPU with mean pooling as MiniLM does it."""
    import onnxruntime as ort
    import torch

    from groove.coordinator.search.bert import tokenized

    path = work / "minilm.onnx"
    ids, mask = (torch.tensor(rows, dtype=torch.long) for rows in tokenized(model._tokenizer, ["a sample text"]))
    names = ["ids", "mask"]
    axes = {name: {0: "batch", 1: "tokens"} for name in [*names, "hidden"]}
    torch.onnx.export(
        model._model,
        (ids, mask),
        str(path),
        input_names=names,
        output_names=["hidden"],
        dynamic_axes=axes,
        opset_version=17,
        dynamo=False,
    )
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])

    def encode(texts: list[str]) -> Vectors:
        out = np.empty((len(texts), C.EMBEDDING_DIM), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), model.batch_size):
            chunk = order[start : start + model.batch_size]
            ids, mask = (
                np.asarray(rows, dtype=np.int64) for rows in tokenized(model._tokenizer, [texts[i] for i in chunk])
            )
            (hidden,) = session.run(None, {"ids": ids, "mask": mask})
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(1) / np.clip(weights.sum(1), 1e-9, None)
            out[chunk] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return out

    return encode


@click.command()
@click.option("--texts", type=click.IntRange(64), default=1024, show_default=True, help="Texts embedded per way.")
def main(texts: int) -> None:
    """Time each way of embedding against the coordinator's CPU model."""
    import torch

    corpus = corpus_texts(texts)
    cpu = MiniLM("cpu")
    reference = cpu.encode(corpus)
    results = [measure("torch fp32 cpu", cpu.encode, corpus, 256, reference)]
    results.append(measure("torch int8 cpu", int8(cpu), corpus, 256, reference))
    if importlib.util.find_spec("onnxruntime") and importlib.util.find_spec("onnx"):
        with tempfile.TemporaryDirectory(prefix="groove-embed-") as tmp:
            results.append(measure("onnxruntime cpu", onnx_runtime(cpu, Path(tmp)), corpus, 256, reference))
    else:
        click.echo("onnxruntime cpu skipped: onnxruntime and onnx are not installed", err=True)
    if torch.cuda.is_available():
        for batch in (64, 512):
            gpu = MiniLM("cuda", batch_size=batch)
            results.append(measure(f"torch fp16 cuda, batch {batch}", gpu.encode, corpus, 2048, reference))
    else:
        click.echo("cuda skipped: torch sees no GPU", err=True)
    columns = ("how", "texts_per_s", "query_ms", "cosine_min", "cosine_mean")
    click.echo(table(columns, [tuple(r[c] for c in columns) for r in results]))
    info = machine() | {"torch_threads": torch.get_num_threads()}
    click.echo(json.dumps({"bench": "embed", "texts": texts, "results": results, "machine": info}))


if __name__ == "__main__":
    main()
