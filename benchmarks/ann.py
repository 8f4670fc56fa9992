"""Approximate nearest-neighbour libraries on real MiniLM vectors: recall@10 against exact search, query
latency, insert rate and memory, each library in a process of its own (so memory is its own).

The base set is `--size` distinct texts made from the bundled corpus (one entry's description with another's
insight: the length and vocabulary of real learnings), embedded once with all-MiniLM-L6-v2 and cached under
`--cache` (≈ 6 minutes for 100k on 2 cores). Queries are corpus descriptions alone, embedded the same way:
what an agent asks. Every library builds an HNSW graph with the parameters the coordinator uses (M 16,
construction depth 100) and searches at depth max(64, 2k), as `VectorIndex` does.

    python -m benchmarks.ann [--size 100000] [--queries 1000] [--libraries usearch-f16,usearch,faiss,hnswlib] [--random]

`usearch-f16` is what the coordinator runs (search/vectors.py). hnswlib, the library it replaced, builds from
source only: `pip install hnswlib` (with a compiler) to include it; a library not installed is reported and
skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import numpy as np
import numpy.typing as npt
import psutil

from benchmarks.common import machine
from groove.cli.output import table
from groove.coordinator.metrics import percentile
from groove.swarm.corpus import load

Matrix = npt.NDArray[np.float32]
_M, _EF_CONSTRUCTION, _EF_MIN = 16, 100, 64
_INSERT_BATCH = 256  # vectors per insert call once built: the embedding worker lands them this way
_INSERTS = 5000  # vectors added one batch at a time after the bulk build


def texts(size: int) -> list[str]:
    """`size` distinct learning-like texts: each corpus description with other entries' insights, in turn."""
    entries = load().entries
    n = len(entries)
    out: dict[str, None] = {}
    step = 0
    while len(out) < size:  # the corpus has 2,308 descriptions but only 285 distinct insights: skip repeats
        a, k = step % n, step // n
        out[f"{entries[a].description}\n{entries[(a + 1 + 37 * k) % n].insight}"] = None
        step += 1
    return list(out)[:size]


def queries(count: int) -> list[str]:
    """Query texts, alternately a corpus description (an agent describing its problem: near the ~43 base texts
    that share it) and an insight (advice looked up by its words: ~350 base texts share each, at near-equal
    distances, which makes the top 10 hard to get exactly)."""
    entries = load().entries
    insights = list(dict.fromkeys(e.insight for e in entries))
    return [
        entries[(i * 7) % len(entries)].description if i % 2 == 0 else insights[(i // 2) % len(insights)]
        for i in range(count)
    ]


def embedded(cache: Path, size: int, count: int) -> tuple[Matrix, Matrix]:
    """The base vectors and query vectors, computed once and cached."""
    base_file, query_file = cache / f"minilm-base-{size}.npy", cache / f"minilm-queries-mixed-{count}.npy"
    if base_file.exists() and query_file.exists():
        return np.load(base_file), np.load(query_file)
    from groove.coordinator.search.embedder import MiniLM

    model = MiniLM()
    cache.mkdir(parents=True, exist_ok=True)
    if not base_file.exists():
        started = time.monotonic()
        base_texts = texts(size)
        chunks = []
        for start in range(0, size, 4096):
            chunks.append(model.encode(base_texts[start : start + 4096]))
            done = start + len(chunks[-1])
            click.echo(f"embedded {done}/{size} ({done / (time.monotonic() - started):.0f}/s)", err=True)
        np.save(base_file, np.concatenate(chunks))
    np.save(query_file, model.encode(queries(count)))
    return np.load(base_file), np.load(query_file)


def random_unit(size: int, count: int) -> tuple[Matrix, Matrix]:
    """Random unit vectors: no structure at all, the hardest case for a graph index."""
    rng = np.random.default_rng(0)
    both = rng.standard_normal((size + count, 384)).astype(np.float32)
    both /= np.linalg.norm(both, axis=1, keepdims=True)
    return both[:size], both[size:]


class Candidate:
    """One library behind the operations the vector index needs."""

    def __init__(self, build: Callable[[Matrix], None], add: Callable[[Matrix, int], None], search: Any) -> None:
        self.build, self.add, self.search = build, add, search


def usearch_candidate(dim: int, threads: int, dtype: str = "f32", rescore: bool = False) -> Candidate:
    from usearch.index import Index

    index = Index(ndim=dim, metric="ip", dtype=dtype, connectivity=_M, expansion_add=_EF_CONSTRUCTION)
    stored: list[Matrix] = []  # the f32 vectors, for re-scoring (the coordinator keeps them in its matrix)

    def build(m: Matrix) -> None:
        stored.append(m)
        index.add(np.arange(len(m), dtype=np.uint64), m, threads=threads)

    def add(m: Matrix, first: int) -> None:
        stored.append(m)
        index.add(np.arange(first, first + len(m), dtype=np.uint64), m, threads=threads)

    def search(q: Matrix, k: int) -> list[int]:
        # usearch declares this setter apart from its getter, which mypy does not follow
        index.expansion_search = max(_EF_MIN, 2 * k)  # type: ignore[misc]
        keys = index.search(q, k, threads=1).keys.astype(np.intp)
        if rescore:
            if len(stored) > 1:
                stored[:] = [np.concatenate(stored)]
            keys = keys[np.argsort(-(stored[0][keys] @ q))]
        return [int(x) for x in keys]

    return Candidate(build, add, search)


def usearch_f16_candidate(dim: int, threads: int) -> Candidate:
    """What the coordinator runs: half-precision vectors in the graph, its answers re-scored from f32."""
    return usearch_candidate(dim, threads, dtype="f16", rescore=True)


def faiss_candidate(dim: int, threads: int) -> Candidate:
    import faiss

    faiss.omp_set_num_threads(threads)
    index = faiss.IndexHNSWFlat(dim, _M, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = _EF_CONSTRUCTION

    def build(m: Matrix) -> None:
        index.add(m)

    def add(m: Matrix, first: int) -> None:
        index.add(m)

    def search(q: Matrix, k: int) -> list[int]:
        index.hnsw.efSearch = max(_EF_MIN, 2 * k)
        _, labels = index.search(q.reshape(1, -1), k)
        return [int(x) for x in labels[0]]

    return Candidate(build, add, search)


def hnswlib_candidate(dim: int, threads: int) -> Candidate:
    import hnswlib

    index = hnswlib.Index(space="ip", dim=dim)

    def build(m: Matrix) -> None:
        index.init_index(max_elements=len(m) + _INSERTS, ef_construction=_EF_CONSTRUCTION, M=_M)
        index.add_items(m, np.arange(len(m)), num_threads=threads)

    def add(m: Matrix, first: int) -> None:
        index.add_items(m, np.arange(first, first + len(m)), num_threads=threads)

    def search(q: Matrix, k: int) -> list[int]:
        index.set_ef(max(_EF_MIN, 2 * k))
        labels, _ = index.knn_query(q.reshape(1, -1), k=k)
        return [int(x) for x in labels[0]]

    return Candidate(build, add, search)


CANDIDATES: dict[str, Callable[[int, int], Candidate]] = {
    "usearch-f16": usearch_f16_candidate,
    "usearch": usearch_candidate,
    "faiss": faiss_candidate,
    "hnswlib": hnswlib_candidate,
}


def measure(library: str, base: Matrix, qs: Matrix, threads: int) -> dict[str, Any]:
    """One library's figures (run in a process of its own)."""
    process = psutil.Process()
    rss_before = process.memory_info().rss
    bulk, extra = base[:-_INSERTS], base[-_INSERTS:]
    candidate = CANDIDATES[library](base.shape[1], threads)
    started = time.perf_counter()
    candidate.build(bulk)
    build_s = time.perf_counter() - started
    started = time.perf_counter()
    for first in range(0, len(extra), _INSERT_BATCH):
        candidate.add(extra[first : first + _INSERT_BATCH], len(bulk) + first)
    insert_s = time.perf_counter() - started
    rss_after = process.memory_info().rss
    exact = np.argsort(-(qs @ base.T), axis=1)
    figures: dict[str, Any] = {
        "library": library,
        "vectors": len(base),
        "build_per_s": round(len(bulk) / build_s),
        "insert_per_s": round(len(extra) / insert_s),
        "memory_mb": round((rss_after - rss_before) / 1e6, 1),
    }
    for k in (10, 50):
        latencies, hits = [], 0
        for q, truth in zip(qs, exact, strict=True):
            t0 = time.perf_counter()
            got = candidate.search(q, k)
            latencies.append((time.perf_counter() - t0) * 1000)
            hits += len(set(got[:10]) & {int(x) for x in truth[:10]})
        ordered = sorted(latencies)
        figures[f"k{k}_recall_at_10"] = round(hits / (10 * len(qs)), 4)
        figures[f"k{k}_p50_ms"] = round(percentile(ordered, 50), 3)
        figures[f"k{k}_p99_ms"] = round(percentile(ordered, 99), 3)
    # exact search of the same matrix, one query at a time: what the index replaces
    latencies = []
    for q in qs[:200]:
        t0 = time.perf_counter()
        scores = base @ q
        np.argpartition(-scores, 49)[:50]
        latencies.append((time.perf_counter() - t0) * 1000)
    figures["exact_p50_ms"] = round(percentile(sorted(latencies), 50), 3)
    return figures


@click.command()
@click.option("--size", default=100_000, show_default=True, help="Vectors in the index.")
@click.option("--queries", "count", default=1000, show_default=True, help="Queries measured.")
@click.option("--libraries", default="usearch-f16,usearch,faiss,hnswlib", show_default=True, help="Comma-separated.")
@click.option("--threads", default=1, show_default=True, help="Threads for building (the coordinator uses cores-1).")
@click.option(
    "--cache",
    type=click.Path(path_type=Path),
    default=Path.home() / ".cache" / "groove-bench",
    show_default=True,
    help="Where the embedded vectors are kept between runs.",
)
@click.option("--random", "use_random", is_flag=True, help="Random unit vectors instead (the worst case).")
@click.option("--child", hidden=True, help="Measure one library (internal).")
def main(size: int, count: int, libraries: str, threads: int, cache: Path, use_random: bool, child: str | None) -> None:
    """Compare ANN libraries on real MiniLM vectors (or, with --random, random ones)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    base, qs = random_unit(size, count) if use_random else embedded(cache, size, count)
    if child is not None:
        click.echo(json.dumps(measure(child, base, qs, threads)))
        return
    rows = []
    for library in libraries.split(","):
        argv = [sys.executable, "-m", "benchmarks.ann", "--size", str(size), "--queries", str(count)]
        argv += [
            "--threads",
            str(threads),
            "--cache",
            str(cache),
            "--child",
            library,
            *(["--random"] if use_random else []),
        ]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            click.echo(f"{library}: failed: {done.stderr.strip().splitlines()[-1:]}", err=True)
            continue
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    headers = ["library", "recall@10 (k=10 / k=50)", "query p50 / p99 ms (k=10)", "(k=50)", "build /s", "insert /s"]
    click.echo(
        table(
            [*headers, "memory MB"],
            [
                [
                    r["library"],
                    f"{r['k10_recall_at_10']:.3f} / {r['k50_recall_at_10']:.3f}",
                    f"{r['k10_p50_ms']:.3f} / {r['k10_p99_ms']:.3f}",
                    f"{r['k50_p50_ms']:.3f} / {r['k50_p99_ms']:.3f}",
                    r["build_per_s"],
                    r["insert_per_s"],
                    r["memory_mb"],
                ]
                for r in rows
            ],
        )
    )
    if rows:
        click.echo(f"exact search of the same {size} vectors: p50 {rows[0]['exact_p50_ms']:.2f} ms")
    vectors = "random" if use_random else "minilm"
    click.echo(json.dumps({"machine": machine(), "vectors": vectors, "size": size, "queries": count, "results": rows}))


if __name__ == "__main__":
    main()
