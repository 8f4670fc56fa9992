"""How one coordinator uses a machine's cores, in one run: the figures and their ratios, measured side by side.

    python -m benchmarks.cores                                  # 32 agents x 16 in flight, 10 s a load
    python -m benchmarks.cores --commit-threads 1,2 --writers 1,2,4 --front-checks off,on --embed-devices cpu,cuda \
        --layouts 4x4

1. the write path (embedder off) with 1 and 2 commit threads (the writer alone, a transaction behind it), by writer
   threads (`--writers`), each with the coordinator checking requests itself and with its front checking the writes:
   writes/s, p99, CPU;
2. the same load with the embedder on, on the CPU pool and on the GPU, against it off: writes, p99, writes over 1 s;
3. embedding through the running coordinator (learnings put, until every one has its vector) for each CPU pool
   layout (workers x torch threads) and on the GPU, beside the bare model in one process with every core;
4. the peers of the same load: the storage limit (raw CozoDB, 256 per transaction), the SQLite-WAL peer, and
   three coordinators on this machine partitioning the projects.

Every load's acked writes are read back (nothing lost, duplicated or stored unacked). Prints tables, then one
JSON line, the source of docs/performance.md's figures.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from benchmarks import load, storage
from benchmarks.cluster import run_cluster
from benchmarks.common import machine, poll, ratio
from benchmarks.limits import load_args
from groove.cli.output import table
from groove.cli.processes import start_coordinator
from groove.client import GrooveClient
from groove.coordinator.net.config import Settings
from groove.coordinator.search.devices import default_workers
from groove.coordinator.write.batcher import MOST_WRITERS
from groove.coordinator.write.tiercommit import MOST_THREADS
from groove.swarm.fleet import stop_process

_READY_S = 300.0  # for every embedding worker to load the model
_EMBED_TEXTS_TIMEOUT_S = 600.0


def _counts(text: str, most: int, hint: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",") if part]
    except ValueError:
        raise click.BadParameter(f"{text!r}: give numbers separated by commas", param_hint=hint) from None
    if not counts or min(counts) < 1 or max(counts) > most:
        raise click.BadParameter(f"{text!r}: give at least one number, each 1 to {most}", param_hint=hint)
    return counts


def _checks(text: str) -> list[bool]:
    parts = [p for p in text.split(",") if p]
    if not parts or set(parts) - {"off", "on"}:
        raise click.BadParameter(f"{text!r}: off, on or off,on", param_hint="--front-checks")
    return [part == "on" for part in parts]


def _layouts(text: str) -> list[tuple[int, int]]:
    layouts = []
    for part in (p for p in text.split(",") if p):
        workers, _, threads = part.partition("x")
        if not (workers.isdigit() and threads.isdigit() and int(workers) > 0 and int(threads) > 0):
            raise click.BadParameter(f"{part!r}: give WORKERSxTHREADS, e.g. 4x4")
        layouts.append((int(workers), int(threads)))
    return layouts


def _step(name: str, figures: dict[str, Any]) -> None:
    """Each figure as soon as it is measured (stderr, one JSON line): a run cut short still leaves what it had."""
    click.echo(json.dumps({"step": name} | figures), err=True)


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    learn, rb, c = result["kinds"]["learn"], result["readback"], result["coordinator"]
    bad = rb["lost"] + rb["duplicates"] + rb["unacked_stored"] + result["errors"]
    summary = {k: learn[k] for k in ("per_s", "p50_ms", "p99_ms", "over_1s")}
    return summary | {"cpu_percent": c["cpu_percent_under_load"], "bad": bad}


def write_path(args: dict[str, Any], work: Path, serve: list[str]) -> dict[str, Any]:
    """One load against a fresh coordinator started with `serve` (after the run's common arguments)."""
    return _summary(load.run_groove(args | {"serve_arg": (*args["serve_arg"], *serve)}, work))


def embedding_rate(work: Path, serve: list[str], workers: int, texts: int) -> dict[str, Any]:
    """Learnings put through a fresh coordinator until each has its vector: texts/s, once its `workers` embedding
    workers have loaded the model."""
    work.mkdir(parents=True)
    proc, endpoint = start_coordinator(work, ["--embedder", "minilm", *serve])  # the common arguments included
    try:
        with GrooveClient(endpoint, timeout=600) as client:

            def ready() -> list[Any] | None:
                found = [p for p in client.stats().processes if p.name.startswith("embed-") and p.device]
                return found if len(found) >= workers else None

            pool = poll(ready, _READY_S)
            if pool is None:
                raise RuntimeError(f"{workers} embedding workers were not ready within {_READY_S:.0f} s ({serve})")
            started = time.perf_counter()
            for i in range(0, texts, 256):
                client.put_learnings([_learning(n) for n in range(i, min(texts, i + 256))])
            if poll(lambda: True if client.stats().vectors >= texts else None, _EMBED_TEXTS_TIMEOUT_S) is None:
                raise RuntimeError(f"{texts} texts were not embedded within {_EMBED_TEXTS_TIMEOUT_S:.0f} s")
            elapsed = time.perf_counter() - started
    finally:
        stop_process(proc, grace=30)
    return {"workers": len(pool), "device": pool[0].device, "texts_per_s": round(texts / elapsed, 1)}


_TEXT = "a flaky integration test passed alone and failed under the full suite because two tests shared a port"
_TIP = "Bind port 0 and read the port back; never hard-code one in tests that run side by side."


def _learning(n: int) -> dict[str, Any]:
    return {"scope": "user:cores", "category": "solution", "description": f"case {n}: {_TEXT}", "insight": _TIP}


def bare_rate(texts: int) -> float:
    """The model alone in this process, every core: what one process embedding in-line gets."""
    from groove.coordinator.search.embedder import MiniLM, embedding_text  # torch: only for this figure

    model = MiniLM("cpu")
    batch = [embedding_text(f"case {n}: {_TEXT}", _TIP) for n in range(texts)]
    model.encode(batch[:64])
    started = time.perf_counter()
    model.encode(batch)
    return round(texts / (time.perf_counter() - started), 1)


@click.command()
@click.option("--agents", type=click.IntRange(1, 512), default=32, show_default=True, help="Agent processes.")
@click.option("--in-flight", type=click.IntRange(1, 1024), default=16, show_default=True, help="Per agent.")
@click.option("--duration", type=click.FloatRange(1), default=10.0, show_default=True, help="Seconds of each load.")
@click.option("--commit-threads", "threads", default="1,2", show_default=True, help="Write path: threads to try.")
@click.option("--writers", default="1", show_default=True, help="Write path: writer threads to try.")
@click.option("--front-checks", "checks", default="on", show_default=True, help="Write path: off, on or off,on.")
@click.option("--embed-devices", default="cpu", show_default=True, help="Embedder on: cpu, cuda, or both.")
@click.option("--layouts", default="", help="CPU pools to time, WORKERSxTHREADS,... (default: the coordinator's).")
@click.option("--embed-texts", type=click.IntRange(64), default=2048, show_default=True, help="Texts per timing.")
@click.option("--cluster", type=click.IntRange(0, 6), default=3, show_default=True, help="Coordinators; 0: none.")
@click.option("--writes", type=click.IntRange(256), default=20_000, show_default=True, help="Raw storage writes.")
@click.option("--serve-arg", "common", multiple=True, help="A `groove serve` argument for every coordinator started.")
def main(
    agents: int,
    in_flight: int,
    duration: float,
    threads: str,
    writers: str,
    checks: str,
    embed_devices: str,
    layouts: str,
    embed_texts: int,
    cluster: int,
    writes: int,
    common: tuple[str, ...],
) -> None:
    """Measure the write path by commit threads, writers and front checks, the embedder's cost, embedding rates,
    and the peers."""
    counts, pools, checked = _counts(threads, MOST_THREADS, "--commit-threads"), _layouts(layouts), _checks(checks)
    lanes = _counts(writers, MOST_WRITERS, "--writers")
    devices = [d for d in embed_devices.split(",") if d]
    if set(devices) - {"cpu", "cuda"}:
        raise click.BadParameter(f"{embed_devices!r}: cpu, cuda or both", param_hint="--embed-devices")
    args = load_args(agents, in_flight, duration) | {"cluster": cluster, "serve_arg": common}
    # the embedder-on runs use the defaults, as users do
    default, one = Settings.model_fields["commit_threads"].default, Settings.model_fields["writers"].default
    out: dict[str, Any] = {"bench": "cores", "agents": agents, "in_flight": in_flight, "duration_s": duration}
    with tempfile.TemporaryDirectory(prefix="groove-cores-") as tmp:
        work = Path(tmp)
        click.echo("storage limit ...", err=True)
        limit = next(r for r in storage.measure(writes, (256,)) if r["batch"] == 256)["script_per_s"]
        _step("storage", {"per_s": limit})
        curve = []
        for n in counts:
            for w in lanes:
                for front in checked:
                    what = f"{n} commit threads, {w} writers, front checks {'on' if front else 'off'}"
                    click.echo(f"write path, {what} ...", err=True)
                    serve = [
                        f"--commit-threads={n}",
                        f"--writers={w}",
                        "--front-checks" if front else "--no-front-checks",
                    ]
                    row = {"commit_threads": n, "writers": w, "front_checks": front}
                    curve.append(row | write_path(args, work / f"threads-{n}-{w}-{front:d}", serve))
                    _step("write_path", curve[-1])
        defaults = {
            "commit_threads": default,
            "writers": one,
            "front_checks": Settings.model_fields["front_checks"].default,
        }
        off = next((r for r in curve if all(r[k] == v for k, v in defaults.items())), None)
        if off is None:
            click.echo("write path, the defaults ...", err=True)
            off = defaults | write_path(args, work / "default", [])
        embedder = []
        for device in devices:
            click.echo(f"embedder on ({device}) ...", err=True)
            args_on = args | {"embedder": "minilm"}
            on = write_path(args_on, work / f"on-{device}", [f"--embed-device={device}"])
            embedder.append(
                {"device": device}
                | on
                | {"writes_x_off": ratio(on["per_s"], off["per_s"]), "p99_x_off": ratio(on["p99_ms"], off["p99_ms"])}
            )
            _step("embedder_on", embedder[-1])
        rates = []
        for workers, per in pools:
            click.echo(f"embedding rate, CPU pool {workers} x {per} ...", err=True)
            serve = [*common, "--embed-device=cpu", f"--embed-workers={workers}", f"--embed-threads={per}"]
            rate = embedding_rate(work / f"rate-{workers}x{per}", serve, workers, embed_texts)
            rates.append({"layout": f"{workers}x{per}"} | rate)
            _step("embedding_rate", rates[-1])
        for device in devices:
            if device == "cpu" and pools:
                continue
            click.echo(f"embedding rate, {device} (the coordinator's default pool) ...", err=True)
            wanted = 1 if device == "cuda" else default_workers()[0]
            rate = embedding_rate(work / f"rate-{device}", [*common, f"--embed-device={device}"], wanted, embed_texts)
            rates.append({"layout": "default"} | rate)
            _step("embedding_rate", rates[-1])
        click.echo("bare model, one process ...", err=True)
        bare = bare_rate(embed_texts)
        _step("bare_model", {"texts_per_s": bare})
        peers: dict[str, float] = {"storage": limit}
        click.echo("peer sqlite ...", err=True)
        (work / "sqlite").mkdir()
        peers["sqlite"] = load.run_peer("sqlite", args, work / "sqlite")["per_s"]
        _step("sqlite", {"per_s": peers["sqlite"]})
        if cluster:
            click.echo(f"{cluster} coordinators ...", err=True)
            together = run_cluster(args, work / "cluster", load.serve_args(args))  # each as the load's coordinator
            peers[f"coordinators_{cluster}"] = together["writes_per_s"]
            _step("cluster", {"coordinators": cluster, "per_s": peers[f"coordinators_{cluster}"]})
    best = max(row["per_s"] for row in curve)
    click.echo(table(
        ("commit threads", "writers", "front checks", "writes/s", "p50 ms", "p99 ms", "> 1 s", "CPU %", "bad"), [
        (r["commit_threads"], r["writers"], r["front_checks"], r["per_s"], r["p50_ms"], r["p99_ms"], r["over_1s"],
         r["cpu_percent"], r["bad"])
        for r in curve
    ]))  # fmt: skip
    click.echo(table(("embedder", "writes/s", "p99 ms", "> 1 s", "x off", "p99 x off", "bad"), [
        (r["device"], r["per_s"], r["p99_ms"], r["over_1s"], r["writes_x_off"], r["p99_x_off"], r["bad"])
        for r in embedder
    ]))  # fmt: skip
    click.echo(table(("pool", "workers", "device", "texts/s", "x bare"), [
        (r["layout"], r["workers"], r["device"], r["texts_per_s"], ratio(r["texts_per_s"], bare)) for r in rates
    ]))  # fmt: skip
    ratios = {f"groove/{name}": ratio(best, rate) for name, rate in peers.items() if rate}
    click.echo(f"bare model: {bare} texts/s · peers {peers} · " + " · ".join(f"{k} {v}" for k, v in ratios.items()))
    out |= {"storage_per_s": limit, "curve": curve, "embedder_off": off, "embedder": embedder, "embedding": rates}
    out |= {"bare_texts_per_s": bare, "peers": peers, "ratios": ratios, "machine": machine()}
    click.echo(json.dumps(out))


if __name__ == "__main__":
    main()
