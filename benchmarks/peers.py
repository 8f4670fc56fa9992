"""The load harness's peers: the same agents and payloads, without groove in between.

- `echo`: a bare Python ZeroMQ ROUTER that decodes each msgpack request and sends it straight back, with
  DEALER clients keeping the same number of requests in flight (the transport limit on this machine);
- `sqlite`: every agent process writing the same learnings straight into one SQLite file in WAL mode,
  one transaction per write (`synchronous=NORMAL`: like groove's default, a committed write survives the
  process, not necessarily the OS), waiting on the lock with a 30 s busy timeout;
- `chroma`: a Chroma server taking single-document adds (only when chromadb is installed).

Each peer process is `python -m benchmarks.peers ROLE ...`; clients print one JSON line (acked count and
elapsed seconds) and write their latencies in ms to a file.
"""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import msgpack
import zmq

from groove.protocol import constants as C
from groove.protocol.envelope import encode_request
from groove.protocol.ids import uuid7
from groove.swarm.corpus import load

_SCHEMA = """CREATE TABLE IF NOT EXISTS learnings (
    id TEXT PRIMARY KEY, scope TEXT NOT NULL, category TEXT NOT NULL, description TEXT NOT NULL,
    insight TEXT NOT NULL, confidence REAL NOT NULL, source TEXT NOT NULL, created_at INTEGER NOT NULL)"""


def payloads(agent_id: str, seed: int) -> Iterator[dict[str, Any]]:
    """The learnings agent `agent_id` writes: what the synthetic workload's `learn` makes with the same seed
    (when the mix is learn-only, its content generator draws nothing else)."""
    rng, corpus = random.Random(seed), load()
    while True:
        yield corpus.learning(rng, noted_by=agent_id)


def peer_argv(role: str, *args: str) -> list[str]:
    """The command line of one peer process."""
    return [sys.executable, "-m", "benchmarks.peers", role, *args]


def _timed_loop(duration: float, start_at: float, step: Callable[[], float]) -> tuple[int, float, list[float]]:
    time.sleep(max(0.0, start_at - time.time()))
    began = time.monotonic()
    latencies = []
    while time.monotonic() - began < duration:
        latencies.append(step())
    return len(latencies), time.monotonic() - began, latencies


def finish(latencies_file: Path, acked: int, elapsed: float, latencies: list[float]) -> None:
    """Write a client's latencies (ms) and print its one JSON line: acked count and elapsed seconds."""
    latencies_file.write_text(json.dumps([round(x * 1000, 4) for x in latencies]))
    click.echo(json.dumps({"acked": acked, "elapsed_s": elapsed}))


@click.group()
def main() -> None:
    """Peer processes for benchmarks.load."""


_client_options = [
    click.option("--agent-id", required=True),
    click.option("--seed", type=int, default=0),
    click.option("--duration", type=float, required=True),
    click.option("--start-at", type=float, required=True),
    click.option("--latencies-file", type=click.Path(path_type=Path), required=True),
]


def client_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The options every peer client takes."""
    for option in reversed(_client_options):
        f = option(f)
    return f


@main.command(name="sqlite")
@click.option("--db", type=click.Path(path_type=Path), required=True)
@client_options
def sqlite_writer(db: Path, agent_id: str, seed: int, duration: float, start_at: float, latencies_file: Path) -> None:
    """Write learnings into one shared SQLite WAL file, one transaction per write."""
    conn = sqlite3.connect(db, timeout=30.0, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    source = payloads(agent_id, seed)

    def write() -> float:
        learning, t0 = next(source), time.monotonic()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO learnings VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                uuid7(),
                learning["scope"],
                learning["category"],
                learning["description"],
                learning["insight"],
                learning["confidence"],
                json.dumps(learning["source"]),
                int(time.time() * 1000),
            ),
        )
        conn.execute("COMMIT")
        return time.monotonic() - t0

    finish(latencies_file, *_timed_loop(duration, start_at, write))


def create_sqlite(db: Path, schema: str = _SCHEMA) -> None:
    """Create a SQLite peer's file and tables (WAL mode) before its writers start: the bare peer's, or `schema`."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(schema)
    conn.commit()
    conn.close()


@main.command(name="echo-server")
@click.option("--bind", required=True)
@click.option("--endpoint-file", type=click.Path(path_type=Path), required=True)
def echo_server(bind: str, endpoint_file: Path) -> None:
    """Decode each request and send it back, until terminated."""
    sock: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.ROUTER)
    sock.bind(bind)
    endpoint_file.write_text(sock.getsockopt_string(zmq.LAST_ENDPOINT))
    while True:
        peer, empty, payload = sock.recv_multipart()
        request = msgpack.unpackb(payload, raw=False)
        sock.send_multipart([peer, empty, msgpack.packb(request)])


@main.command(name="echo")
@click.option("--endpoint", required=True)
@click.option("--in-flight", type=int, default=1)
@client_options
def echo_client(
    endpoint: str, in_flight: int, agent_id: str, seed: int, duration: float, start_at: float, latencies_file: Path
) -> None:
    """Send the agent's learning.put requests to the echo server, `in_flight` at a time."""
    sock: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    source = payloads(agent_id, seed)
    sent: dict[str, float] = {}
    latencies: list[float] = []
    time.sleep(max(0.0, start_at - time.time()))
    began = time.monotonic()
    while time.monotonic() - began < duration:
        while len(sent) < in_flight:
            rid = uuid7()
            sent[rid] = time.monotonic()
            sock.send_multipart([b"", encode_request(rid, C.OP_LEARNING_PUT, {"learnings": [next(source)]})])
        if sock.poll(1000):
            reply = msgpack.unpackb(sock.recv_multipart()[-1], raw=False)
            latencies.append(time.monotonic() - sent.pop(reply["id"]))
    finish(latencies_file, len(latencies), time.monotonic() - began, latencies)


@main.command(name="chroma")
@click.option("--port", type=int, required=True)
@client_options
def chroma_writer(port: int, agent_id: str, seed: int, duration: float, start_at: float, latencies_file: Path) -> None:
    """Add the agent's learnings to a Chroma server one document at a time."""
    import chromadb

    collection = chromadb.HttpClient(port=port).get_or_create_collection("learnings")
    source = payloads(agent_id, seed)

    def add() -> float:
        learning, t0 = next(source), time.monotonic()
        collection.add(ids=[uuid7()], documents=[learning["description"] + " " + learning["insight"]])
        return time.monotonic() - t0

    finish(latencies_file, *_timed_loop(duration, start_at, add))


def start_echo_server(work: Path) -> tuple[subprocess.Popen[bytes], str]:
    """The echo server on a free loopback port, once it listens."""
    endpoint_file = work / "echo.endpoint"
    proc = subprocess.Popen(
        peer_argv("echo-server", "--bind", "tcp://127.0.0.1:0", "--endpoint-file", str(endpoint_file))
    )
    deadline = time.monotonic() + 30
    while not endpoint_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("the echo server did not start")
        time.sleep(0.05)
    return proc, endpoint_file.read_text()


if __name__ == "__main__":
    main()
