"""A year of a team's learnings: as one coordinator fills to each mark, its process tree's RSS, the data dir's
size, and search latency by words and by meaning; then, at each mark, a stop (SIGTERM) and a start on the same
data, timed to serving, to every tier's newest learning findable by its words and by its vector, and to settled
(no graph build running, nothing waiting to be embedded); then a crash: a burst of writes (`--crash-burst`, fewer
than make a tier due for a checkpoint, so the start reads them all again from the derived log), kill -9, and a
start timed the same way.

    python -m benchmarks.scale --marks 100000,300000,1000000

Texts are the bundled corpus's, each with its noter and session appended (2,308 entries over six projects, so
most words are common ones: the hard case for a search by words). Vectors are random unit vectors sent with each
learning: embedding a million texts on 2 cores would take over an hour, and the coordinator stores and indexes a
vector it is given exactly as one it computed. The coordinator runs `--embedder none`: no model is loaded, so the
RSS is the data's. Several writer threads fill it, 100 learnings a request. The last line is JSON.
"""

from __future__ import annotations

import json
import random
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import click
import numpy as np

from benchmarks.common import ProcessTree, latency_summary, machine, poll
from groove.cli.output import table
from groove.cli.processes import start_coordinator
from groove.client import GrooveClient
from groove.protocol import constants as C
from groove.swarm.corpus import Corpus
from groove.swarm.corpus import load as load_corpus
from groove.swarm.fleet import stop_process

_SERVE = ["--embedder", "none"]
_PER_REQUEST = 100
_QUERIES = 200  # of each kind, at each mark
_COMMON = "the test code in a call"  # words most learnings hold: a query the rarest-words cut must keep cheap
_FINDABLE_S = 600.0  # longest wait for a restarted coordinator to find every probe


def _vectors(rng: np.random.Generator, n: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    raw = rng.standard_normal((n, C.EMBEDDING_DIM)).astype(np.float32)
    unit: np.ndarray[Any, np.dtype[np.float32]] = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    return unit


class Filler:
    """Puts corpus learnings with random vectors from several threads, each its own client; keeps, per project,
    the newest learning's id, a word only it holds, and its vector: the probes a restart must find."""

    def __init__(self, endpoint: str, corpus: Corpus, threads: int) -> None:
        self.endpoint, self.corpus, self.threads = endpoint, corpus, threads
        self.done = 0
        self.probes: dict[str, tuple[str, str, list[float]]] = {}  # project -> (id, word, vector)
        self.sample: list[list[float]] = []  # vectors stored, to search by meaning near
        self._lock = threading.Lock()
        self._rounds = 0

    def to(self, total: int) -> None:
        """Fill until `total` learnings are stored (to the nearest request)."""

        def work(seed: int) -> None:
            rng, vrng = random.Random(seed), np.random.default_rng(seed)
            with GrooveClient(self.endpoint, timeout=300) as client:
                while True:
                    with self._lock:
                        if self.done >= total:
                            return
                        self.done += _PER_REQUEST
                        self._rounds += 1
                        word = f"probe{self._rounds}x"
                    learnings = [self.corpus.learning(rng, noted_by="scale", repeat=0.0) for _ in range(_PER_REQUEST)]
                    vectors = _vectors(vrng, _PER_REQUEST)
                    last = learnings[-1]
                    last["insight"] += f" {word}"
                    for learning, vector in zip(learnings, vectors.tolist(), strict=True):
                        learning["embedding"] = vector
                    ids = client.put_learnings(learnings).ids
                    with self._lock:
                        self.probes[last["scope"]] = (ids[-1], word, vectors[-1].tolist())
                        if len(self.sample) < 4 * _QUERIES:
                            self.sample.append(vectors[0].tolist())

        failures: list[BaseException] = []

        def guarded(seed: int) -> None:
            try:
                work(seed)
            except BaseException as exc:  # said once all threads are done: a fill that lost a thread is no figure
                failures.append(exc)

        threads = [threading.Thread(target=guarded, args=(self._rounds * 7919 + i,)) for i in range(self.threads)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failures:
            raise click.ClickException(f"a writer thread failed: {failures[0]!r}")


def _project(scope: str) -> str | None:
    """The project a scope's learnings are searched in (None: the user tier's alone)."""
    return scope.removeprefix(C.SCOPE_PROJECT_PREFIX) if scope.startswith(C.SCOPE_PROJECT_PREFIX) else None


def searches(endpoint: str, corpus: Corpus, sample: list[list[float]], scopes: list[str]) -> dict[str, Any]:
    """Latency of `_QUERIES` searches by words (a corpus entry's first words; one in ten the common-words query)
    and by meaning (a stored vector, nudged), each in a project's context (its tier and the user tier)."""
    rng, vrng = random.Random(5), np.random.default_rng(5)
    words, meaning = [], []
    with GrooveClient(endpoint, timeout=120) as client:
        for n in range(_QUERIES):
            project = _project(rng.choice(scopes))
            text = _COMMON if n % 10 == 0 else " ".join(rng.choice(corpus.entries).description.split()[:8])
            started = time.perf_counter()
            client.search(text, mode="keyword", project=project)
            words.append((time.perf_counter() - started) * 1000)
            near = np.asarray(rng.choice(sample), dtype=np.float32) + 0.05 * _vectors(vrng, 1)[0]
            started = time.perf_counter()
            client.search(vector=(near / np.linalg.norm(near)).tolist(), mode="semantic", project=project)
            meaning.append((time.perf_counter() - started) * 1000)
    return {"words_ms": latency_summary(words), "meaning_ms": latency_summary(meaning)}


def _finds(client: GrooveClient, probes: dict[str, tuple[str, str, list[float]]]) -> bool:
    """Whether every probe is found first by its word and by its vector."""
    for scope, (lid, word, vector) in probes.items():
        project = _project(scope)
        by_words = client.search(word, mode="keyword", project=project)
        by_meaning = client.search(vector=vector, mode="semantic", project=project, limit=1)
        if not by_words or by_words[0].learning.id != lid or not by_meaning or by_meaning[0].learning.id != lid:
            return False
    return True


def restart(data: Path, proc: Any, probes: dict[str, tuple[str, str, list[float]]]) -> tuple[dict[str, Any], Any]:
    """Stop the coordinator and start it again on `data`: seconds to serving, to every probe found, to settled."""
    stop_process(proc, grace=600)
    return timed_start(data, probes)


def crash(data: Path, proc: Any, filler: Filler, burst: int) -> tuple[dict[str, Any], Any]:
    """Write `burst` more learnings, kill the coordinator with -9 and start it again, timed as `restart`."""
    filler.to(filler.done + burst)
    proc.kill()
    proc.wait()
    return timed_start(data, filler.probes)


def timed_start(data: Path, probes: dict[str, tuple[str, str, list[float]]]) -> tuple[dict[str, Any], Any]:
    """Start a coordinator on `data`: seconds to serving, to every probe found, to settled."""
    started = time.perf_counter()
    proc, endpoint = start_coordinator(data, _SERVE, poll_s=0.01)
    serving = time.perf_counter() - started
    with GrooveClient(endpoint, timeout=600) as client:
        found = poll(lambda: True if _finds(client, probes) else None, _FINDABLE_S)
        findable = time.perf_counter() - started if found else None

        def settled() -> bool | None:
            stats = client.stats()
            idle = stats.embedding_queue_depth == 0 and "building" not in stats.vector_index.values()
            return True if idle else None

        poll(settled, _FINDABLE_S)
        done = time.perf_counter() - started
        stats = client.stats()
        memory = stats.memory_mb
    figures: dict[str, Any] = {"serving_s": round(serving, 2), "findable_s": findable and round(findable, 2)}
    figures["index_loads"] = stats.index_loads  # kept (and how many learnings read again from the log) or rebuilt
    figures["settled_s"] = round(done, 2)
    figures["rss_mb_settled"] = round(ProcessTree(proc.pid).rss_mb(), 1)
    figures["memory_mb"] = memory
    return figures, (proc, endpoint)


def _disk_mb(data: Path) -> float:
    return round(sum(f.stat().st_size for f in data.rglob("*") if f.is_file()) / 1e6, 1)


@click.command()
@click.option("--marks", default="100000,300000,1000000", show_default=True, help="Learnings at each measurement.")
@click.option("--threads", type=click.IntRange(1), default=3, show_default=True, help="Writer threads filling it.")
@click.option("--restarts/--no-restarts", default=True, show_default=True, help="Stop and start at each mark.")
@click.option(
    "--crash-burst",
    type=click.IntRange(0),
    default=4000,
    show_default=True,
    help="Learnings written after the restart at each mark, then kill -9 and a start (0: no crash).",
)
def main(marks: str, threads: int, restarts: bool, crash_burst: int) -> None:
    """Fill a coordinator to each mark; measure memory, disk, searches and a restart there."""
    try:
        wanted = sorted({int(m.replace("_", "")) for m in marks.split(",")})
    except ValueError:
        raise click.BadParameter(f"{marks!r} is not a list of numbers", param_hint="--marks") from None
    if not wanted or wanted[0] < _PER_REQUEST:
        raise click.BadParameter(f"each mark is at least {_PER_REQUEST} learnings", param_hint="--marks")
    corpus = load_corpus()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="groove-scale-") as tmp:
        data = Path(tmp)
        proc, endpoint = start_coordinator(data, _SERVE)
        try:
            filler = Filler(endpoint, corpus, threads)
            for mark in wanted:
                started, before = time.perf_counter(), filler.done
                filler.to(mark)  # the crash's burst at the mark before counts towards it
                rate = (filler.done - before) / (time.perf_counter() - started)
                row: dict[str, Any] = {"learnings": filler.done, "fill_per_s": round(rate)}
                row["rss_mb"] = round(ProcessTree(proc.pid).rss_mb(), 1)
                with GrooveClient(endpoint, timeout=60) as client:
                    row["memory_mb"] = client.stats().memory_mb  # the coordinator's RSS by part (PROTOCOL.md)
                row.update(searches(endpoint, corpus, filler.sample, list(filler.probes)))
                if restarts:
                    figures, (proc, endpoint) = restart(data, proc, filler.probes)
                    filler.endpoint = endpoint
                    row["restart"] = figures
                if crash_burst:
                    figures, (proc, endpoint) = crash(data, proc, filler, crash_burst)
                    filler.endpoint = endpoint
                    row["crash"] = figures
                row["disk_mb"] = _disk_mb(data)
                rows.append(row)
                click.echo(f"  {json.dumps(row)}", err=True)
        finally:
            stop_process(proc, grace=600)
    click.echo(
        table(
            (
                "learnings",
                "RSS MB",
                "disk MB",
                "words p50/p99 ms",
                "meaning p50/p99 ms",
                "restart: serving/findable/settled s",
                "after a crash",
            ),
            [
                (
                    r["learnings"],
                    r["rss_mb"],
                    r["disk_mb"],
                    f"{r['words_ms']['p50_ms']:.1f} / {r['words_ms']['p99_ms']:.1f}",
                    f"{r['meaning_ms']['p50_ms']:.1f} / {r['meaning_ms']['p99_ms']:.1f}",
                    *(
                        " / ".join(str(r[kind][k]) for k in ("serving_s", "findable_s", "settled_s"))
                        if kind in r
                        else "-"
                        for kind in ("restart", "crash")
                    ),
                )
                for r in rows
            ],
        )
    )
    click.echo(json.dumps({"bench": "scale", "threads": threads, "marks": rows, "machine": machine()}))


if __name__ == "__main__":
    main()
