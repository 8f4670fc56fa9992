"""Semantic memory under load: ranking quality, embedding throughput, visibility lag, search latency and
throughput at 10k and 100k learnings, idle and with 8 agents writing.

One coordinator with the real model on a fresh data dir. Preloaded learnings carry random unit vectors
(computing 100k real embeddings would take ~7 minutes here); query vectors are random too, query texts are
the labelled paraphrases, embedded by the coordinator. Latencies are measured at the client (the round
trip) and at the coordinator (each reply's `took_ms`; `stats.op_ms` for the 8-client phase).

    python -m benchmarks.search [--sizes 10000,100000] [--duration 10]
"""

from __future__ import annotations

import json
import random
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from benchmarks.common import machine, ratio
from groove.cli.output import table
from groove.cli.processes import start_coordinator
from groove.client import GrooveClient
from groove.coordinator.metrics import percentile
from groove.protocol import constants as C
from groove.swarm.coding import groove_argv
from groove.swarm.fleet import stop_process

PAIRS = json.loads((Path(__file__).parent / "data" / "paraphrases.json").read_text())


def unit(rng: random.Random) -> list[float]:
    v = [rng.gauss(0.0, 1.0) for _ in range(C.EMBEDDING_DIM)]
    norm = sum(x * x for x in v) ** 0.5
    return [x / norm for x in v]


def preload(client: GrooveClient, rng: random.Random, count: int, first: int = 0) -> None:
    """`count` synthetic learnings with random vectors, numbered from `first` (so no two share a text)."""
    batch = 100
    calls = []
    for start in range(first, first + count, batch):
        items = [
            {
                "scope": "global",
                "category": "solution",
                "description": f"synthetic learning {start + i} "
                f"about {rng.choice(['retries', 'caching', 'logging', 'tests', 'schemas'])}",
                "insight": "synthetic",
                "embedding": unit(rng),
            }
            for i in range(min(batch, first + count - start))
        ]
        calls.append((C.OP_LEARNING_PUT, {"learnings": items}))
    for result in client.call_many(calls, window=4, timeout=300):
        if result.error is not None:
            raise RuntimeError(f"preload failed: {result.error}")


def latencies(client: GrooveClient, rng: random.Random, n: int, kind: str) -> dict[str, float]:
    """Sequential searches: latency at the client (round trip) and at the coordinator (its `took_ms`)."""
    rtt, took = [], []
    queries = [unit(rng) for _ in range(min(n, 64))] if kind == "vector" else []
    for i in range(n):
        body: dict[str, Any] = {"limit": 10}
        if kind == "vector":
            body["vector"] = queries[i % len(queries)]
        else:
            body["text"] = rng.choice(PAIRS)["query"]
        started = time.perf_counter()
        reply = client.call(C.OP_SEARCH, body)
        rtt.append((time.perf_counter() - started) * 1000)
        took.append(reply["took_ms"])
    rtt.sort()
    took.sort()
    return {
        "p50_ms": round(percentile(rtt, 50), 3),
        "p99_ms": round(percentile(rtt, 99), 3),
        "coord_p50_ms": round(percentile(took, 50), 3),
        "coord_p99_ms": round(percentile(took, 99), 3),
    }


def settle(client: GrooveClient) -> None:
    """Wait until nothing runs in the background: no learning waits for its embedding or its near-duplicate
    check, and no tier is still building its HNSW graph (searches are exact, and slower, until then)."""

    def idle() -> bool:
        stats = client.stats()
        return (
            stats.embedding_queue_depth == 0
            and stats.near_duplicate_backlog == 0
            and "building" not in stats.vector_index.values()
        )

    wait_for(idle)


_WRITES = ["--mix", "learn=1", "--no-verify"]  # single-learning writes only


def agents(endpoint: str, n: int, workload: str, duration: float, work: Path, extra: list[str]) -> list[Any]:
    procs = []
    for i in range(n):
        lat = work / f"{workload}-{i}-{time.monotonic_ns()}.json"
        argv = groove_argv(
            "--endpoint",
            endpoint,
            "--timeout",
            "60",
            "agent",
            "--agent-id",
            f"{workload}-{i}",
            "--workload",
            workload,
            "--duration",
            str(duration),
            "--seed",
            str(i),
            "--latencies-file",
            str(lat),
            *extra,
        )
        procs.append((subprocess.Popen(argv, stdout=subprocess.PIPE), lat))
    return procs


def collect(procs: list[Any]) -> tuple[list[dict[str, Any]], list[float]]:
    reports, lat = [], []
    for proc, path in procs:
        out, _ = proc.communicate(timeout=600)
        reports.append(json.loads(out.decode().strip().splitlines()[-1]))
        lat += [x for values in json.loads(path.read_text()).values() for x in values]
    return reports, sorted(lat)


def quality(client: GrooveClient) -> dict[str, Any]:
    items = [
        {"scope": "user:bench", "category": "solution", "description": p["learning"], "insight": p["learning"]}
        for p in PAIRS
    ]
    ids = client.put_learnings(items).ids
    wait_for(lambda: client.stats().vectors >= len(ids))
    out: dict[str, Any] = {}
    for mode in ("semantic", "hybrid"):
        ranks = []
        for pair, lid in zip(PAIRS, ids, strict=True):
            found = [h.learning.id for h in client.search(pair["query"], limit=10, mode=mode, scope_prefix="user:")]
            ranks.append(found.index(lid) + 1 if lid in found else 0)
        out[mode] = {
            "top1": sum(r == 1 for r in ranks),
            "top3": sum(0 < r <= 3 for r in ranks),
            "mrr": round(sum(1 / r for r in ranks if r) / len(ranks), 3),
            "pairs": len(ranks),
        }
    return out


def wait_for(condition: Any, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError("timed out waiting")
        time.sleep(0.2)


def embedding_throughput(client: GrooveClient, count: int) -> dict[str, float]:
    from groove.coordinator.search.embedder import MiniLM, embedding_text

    texts = [f"While working on case {i}, we learned that {PAIRS[i % len(PAIRS)]['learning']}" for i in range(count)]
    insight = "Apply this in every project."
    model = MiniLM()
    model.encode(texts[:64])
    started = time.perf_counter()
    model.encode([embedding_text(t, insight) for t in texts])  # exactly what the worker embeds
    bare = len(texts) / (time.perf_counter() - started)
    del model
    before = client.stats().vectors
    started = time.perf_counter()
    for i in range(0, len(texts), 128):
        client.put_learnings(
            [
                {"scope": "user:embed", "category": "solution", "description": t, "insight": insight}
                for t in texts[i : i + 128]
            ]
        )
    wait_for(lambda: client.stats().vectors >= before + len(texts))
    worker = len(texts) / (time.perf_counter() - started)
    return {
        "bare_texts_per_s": round(bare, 1),
        "worker_texts_per_s": round(worker, 1),
        "ratio": ratio(worker, bare),
    }


@click.command()
@click.option("--sizes", default="10000,100000", show_default=True)
@click.option("--duration", type=float, default=10.0, show_default=True, help="Seconds of each loaded phase.")
@click.option("--queries", type=int, default=300, show_default=True, help="Sequential queries per latency figure.")
@click.option("--clients", type=click.IntRange(1), default=8, show_default=True,
              help="Agent processes writing, then searching, in the loaded phases.")  # fmt: skip
@click.option("--lag-seconds", type=click.FloatRange(1), default=20.0, show_default=True,
              help="Seconds of writes at 100/s for the visibility lag (20 fill its window of 2,048).")  # fmt: skip
@click.option("--texts", type=click.IntRange(64), default=1280, show_default=True,
              help="Texts embedded for the throughput figure, by the bare model and through the worker.")  # fmt: skip
def main(sizes: str, duration: float, queries: int, clients: int, lag_seconds: float, texts: int) -> None:
    """Run every phase, print a table, then one JSON line."""
    rng = random.Random(7)
    result: dict[str, Any] = {"bench": "search", "clients": clients, "machine": machine()}
    with tempfile.TemporaryDirectory(prefix="groove-search-") as tmp:
        work = Path(tmp)
        (work / "data").mkdir()
        proc, endpoint = start_coordinator(work / "data", ["--bind", "tcp://127.0.0.1:0"])
        try:
            client = GrooveClient(endpoint, timeout=120)
            wait_for(lambda: client.stats().embedder != "loading")
            click.echo("ranking quality on the labelled set ...", err=True)
            result["quality"] = quality(client)
            # the lag window holds the last 2,048 learnings embedded: 20 s at 100/s fills it with this phase only
            click.echo("visibility lag at 100 writes/s ...", err=True)
            procs = agents(endpoint, 1, "synthetic", lag_seconds, work, [*_WRITES, "--rate", "100"])
            collect(procs)
            wait_for(lambda: client.stats().embedding_queue_depth == 0)
            lag = client.stats().visibility_lag_ms
            result["lag_100_per_s"] = {"p50_ms": round(lag.p50, 1), "p99_ms": round(lag.p99, 1)}
            click.echo("embedding throughput ...", err=True)
            result["embedding"] = embedding_throughput(client, texts)
            loaded = client.stats().vectors
            result["sizes"] = []
            for size in (int(s) for s in sizes.split(",")):
                click.echo(f"preloading to {size} learnings ...", err=True)
                preload(client, rng, max(0, size - loaded), first=loaded)
                loaded = max(loaded, size)
                settle(client)
                row: dict[str, Any] = {"learnings": client.stats().vectors}
                row["idle_vector"] = latencies(client, rng, queries, "vector")
                row["idle_text"] = latencies(client, rng, min(queries, 100), "text")
                writers = agents(endpoint, clients, "synthetic", duration, work, _WRITES)
                time.sleep(1.0)
                row["writing_vector"] = latencies(client, rng, queries, "vector")
                row["writing_text"] = latencies(client, rng, min(queries, 100), "text")
                reports, _ = collect(writers)
                row["writes_during"] = sum(r["ops"].get("learn", 0) for r in reports)
                settle(client)  # the writers' learnings are embedded before the next phase
                searchers = agents(endpoint, clients, "search", duration, work, [])
                reports, lat = collect(searchers)
                row["clients_qps"] = round(sum(r["ops"].get("search", 0) for r in reports) / duration, 1)
                row["clients_p99_ms"] = round(percentile(lat, 99), 3)
                served = client.stats().op_ms[C.OP_SEARCH]  # the last 2,048 searches: all of this phase
                row["clients_coord_p50_ms"] = round(served.p50, 3)
                row["clients_coord_p99_ms"] = round(served.p99, 3)
                result["sizes"].append(row)
                loaded = client.stats().vectors
            client.close()
        finally:
            stop_process(proc)
    q = result["quality"]
    click.echo(
        f"ranking (labelled set, {q['hybrid']['pairs']} pairs): semantic top1 {q['semantic']['top1']} top3 "
        f"{q['semantic']['top3']} MRR {q['semantic']['mrr']}; hybrid top1 {q['hybrid']['top1']} top3 "
        f"{q['hybrid']['top3']} MRR {q['hybrid']['mrr']}"
    )
    e = result["embedding"]
    click.echo(
        f"embedding: bare model {e['bare_texts_per_s']}/s, worker {e['worker_texts_per_s']}/s ({e['ratio']:.0%})"
    )
    click.echo(
        f"visibility lag at 100 writes/s: p50 {result['lag_100_per_s']['p50_ms']} ms, "
        f"p99 {result['lag_100_per_s']['p99_ms']} ms"
    )
    click.echo("latency ms as p50/p99, at the client (round trip) | at the coordinator (took_ms)")

    def both(figures: dict[str, float]) -> str:
        return f"{figures['p50_ms']}/{figures['p99_ms']} | {figures['coord_p50_ms']}/{figures['coord_p99_ms']}"

    click.echo(
        table(
            (
                "learnings",
                "vector query",
                "text query",
                f"{clients} writing: vector",
                f"{clients} writing: text",
                f"{clients} clients q/s",
                f"{clients} clients p99 | coord",
            ),
            [
                (
                    r["learnings"],
                    both(r["idle_vector"]),
                    both(r["idle_text"]),
                    both(r["writing_vector"]),
                    both(r["writing_text"]),
                    r["clients_qps"],
                    f"{r['clients_p99_ms']} | {r['clients_coord_p99_ms']}",
                )
                for r in result["sizes"]
            ],
        )
    )
    click.echo(json.dumps(result))


if __name__ == "__main__":
    main()
