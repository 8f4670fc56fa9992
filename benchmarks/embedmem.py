"""The embedding worker's memory: a fresh coordinator with the default embedder is given `--texts` corpus
learnings (100 a request), then `--long` learnings of the most tokens the model reads, and the worker's RSS is read
once each backlog has drained: at rest with its model loaded, after the corpus, after the long texts, and after a
further `--texts` (a ratchet shows as growth between the last two).

    python -m benchmarks.embedmem [--texts 2000] [--long 256]

The last line is JSON.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import click
import psutil

from benchmarks.common import machine
from benchmarks.search import wait_for
from groove.cli.processes import start_coordinator
from groove.client import GrooveClient
from groove.swarm.corpus import load as load_corpus
from groove.swarm.fleet import stop_process

_PER_REQUEST = 100
_TARGET_MB = 250  # the lean issue's bound on a worker after 2,000 texts


def _worker(pid: int) -> psutil.Process:
    for child in psutil.Process(pid).children(recursive=True):
        if any("embedworker" in part for part in child.cmdline()):
            return child
    raise RuntimeError("the coordinator has no embedding worker")


def _put(client: GrooveClient, learnings: list[dict[str, Any]]) -> None:
    for start in range(0, len(learnings), _PER_REQUEST):
        client.put_learnings(learnings[start : start + _PER_REQUEST])
    wait_for(lambda: client.stats().embedding_queue_depth == 0)


@click.command()
@click.option("--texts", type=click.IntRange(1), default=2000, show_default=True)
@click.option("--long", "long_texts", type=click.IntRange(0), default=256, show_default=True)
def main(texts: int, long_texts: int) -> None:
    """Read the embedding worker's RSS as it embeds corpus and long learnings."""
    corpus, rng = load_corpus(), random.Random(3)

    def batch(n: int) -> list[dict[str, Any]]:
        return [corpus.learning(rng, noted_by="bench") | {"scope": "project:/bench/embedmem"} for _ in range(n)]

    long = [
        {
            "description": f"long learning {i}",
            "category": "code_pattern",
            "insight": " ".join(f"word{i}x{j}" for j in range(400)),
            "scope": "project:/bench/embedmem",
        }
        for i in range(long_texts)
    ]
    marks: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="groove-embedmem-") as tmp:
        proc, endpoint = start_coordinator(Path(tmp), [])
        try:
            with GrooveClient(endpoint, timeout=60) as client:
                _put(client, batch(1))  # drains once the worker has loaded its model
                worker = _worker(proc.pid)
                marks["loaded"] = worker.memory_info().rss / 1e6
                began = time.monotonic()
                _put(client, batch(texts))
                marks["texts_s"] = time.monotonic() - began
                marks["after_texts"] = worker.memory_info().rss / 1e6
                _put(client, long)
                marks["after_long"] = worker.memory_info().rss / 1e6
                _put(client, batch(texts))
                marks["after_more_texts"] = worker.memory_info().rss / 1e6
        finally:
            stop_process(proc)
    figures = {key: round(value, 1) for key, value in marks.items()}
    for key, value in figures.items():
        click.echo(f"  {key:18} {value}", err=True)
    verdict = "within" if figures["after_texts"] <= _TARGET_MB else "over"
    click.echo(f"worker RSS after {texts} texts: {figures['after_texts']} MB, {verdict} {_TARGET_MB} MB", err=True)
    click.echo(
        json.dumps({"bench": "embedmem", "texts": texts, "long": long_texts, "mb": figures, "machine": machine()})
    )


if __name__ == "__main__":
    main()
