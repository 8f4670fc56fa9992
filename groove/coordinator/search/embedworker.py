"""An embedding worker process: it loads the model and turns texts into vectors for its coordinator, which
starts it (`embedpool.py`), never by hand. The model (ONNX Runtime, or torch on a GPU) lives here, not in the
coordinator.

Its link is one DEALER socket to the pool's ROUTER (ipc, in the coordinator's private directory); each message
one msgpack frame:

    worker -> pool   ["H", device, batch size, gpus]      hello: the model is loaded (gpus: CUDA devices torch sees)
                     ["V", job, vectors]                  float32 bytes, one 384-dim row per text, in order
                     ["X", job, message]                  the job failed (its texts stay queued)
    pool -> worker   ["Q", job, [text]]                   a query: embedded at once, beside any bulk job
                     ["B", job, [text, ...]]              a share of the backlog
                     ["P", duty]                          the backlog's share of the time from now on (`duty.py`)
                     ["S"]                                stop

A query never waits behind the backlog: queries run on a thread of their own, on the CPU model (one query is
faster there than on a GPU: 6.9 ms against 10.3 ms on an H100), while the bulk thread works through its share.
Both keep the normal priority: the bulk thread yields to writes by the duty the pool sets (`duty.py`), not by its
scheduling class. It once ran in Linux's idle class, which cost the writes as much as nice 10 did on 2 cores (a
write flood: 0.71-0.84 x the writes against 0.74-0.79 x) and could never be lifted again (an unprivileged thread
may not leave the idle class): past the lag bound the duty went to 1.0, yet the backlog got next to no CPU beside
the coordinator and four agents (16 texts/s in a soak at 47 learnings/s; the oldest waited 127 s).
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import sys
import threading
from typing import Any

import click
import msgpack
import zmq

from groove.coordinator.heap import give_back_memory
from groove.coordinator.procs import die_with_parent
from groove.coordinator.search.duty import Pace
from groove.coordinator.search.embedder import MiniLM, resolve_device

HELLO, VECTORS, FAILED, QUERY, BULK, PACE, STOP = "H", "V", "X", "Q", "B", "P", "S"
_RESULTS = "inproc://groove-embed-results"
_PARENT_CHECK_MS = 1000
_QUERY_PASS = 32  # queries embedded in one forward pass at most

log = logging.getLogger(__name__)


def _work(
    model: MiniLM, jobs: queue.SimpleQueue[tuple[int, list[str]] | None], context: zmq.Context[Any], pace: Pace | None
) -> None:
    """A thread: embed each job, hand the result to the main thread (which alone uses the link). The bulk thread
    has a `pace`; the query thread none, and takes every query waiting into one forward pass: one pass of a few
    short texts costs about what one costs, and under load queries arrive faster than passes of one end."""
    out: zmq.Socket[bytes] = context.socket(zmq.PUSH)
    out.connect(_RESULTS)
    try:
        while (job := jobs.get()) is not None:
            batch = [job]
            while pace is None and len(batch) < _QUERY_PASS:
                try:
                    more = jobs.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    jobs.put(None)  # the stop, seen after this pass
                    break
                batch.append(more)
            for message in _embed(model, batch, pace):
                out.send(msgpack.packb(message))
            if pace is not None:
                give_back_memory()  # a share of the backlog may be large: its pages go back, not kept for the next
    finally:
        out.close(linger=-1)


def _embed(model: MiniLM, batch: list[tuple[int, list[str]]], pace: Pace | None) -> list[list[Any]]:
    """The messages for these jobs, their texts embedded in one call."""
    texts = [text for _, job_texts in batch for text in job_texts]
    try:
        vectors = model.encode(texts, pace)
    except Exception as exc:  # a bad batch must not end the worker: the pool re-queues its texts
        log.exception("embedding %d texts failed", len(texts))
        return [[FAILED, number, f"{type(exc).__name__}: {exc}"] for number, _ in batch]
    messages, at = [], 0
    for number, job_texts in batch:
        messages.append([VECTORS, number, vectors[at : at + len(job_texts)].tobytes()])
        at += len(job_texts)
    return messages


class Worker:
    """The link and the two working threads."""

    def __init__(self, link: zmq.Socket[bytes], context: zmq.Context[Any], query: MiniLM, bulk: MiniLM) -> None:
        self.link = link
        self.results: zmq.Socket[bytes] = context.socket(zmq.PULL)
        self.results.bind(_RESULTS)
        self.queries: queue.SimpleQueue[tuple[int, list[str]] | None] = queue.SimpleQueue()
        self.bulk: queue.SimpleQueue[tuple[int, list[str]] | None] = queue.SimpleQueue()
        self.pace = Pace()
        self.threads = [
            threading.Thread(target=_work, args=(query, self.queries, context, None), name="query", daemon=True),
            threading.Thread(target=_work, args=(bulk, self.bulk, context, self.pace), name="bulk", daemon=True),
        ]
        self.stopping = False

    def serve(self, parent: int) -> None:
        """Take jobs and send back results until told to stop, or the coordinator is gone."""
        for thread in self.threads:
            thread.start()
        poller = zmq.Poller()
        poller.register(self.link, zmq.POLLIN)
        poller.register(self.results, zmq.POLLIN)
        while not self.stopping and os.getppid() == parent:
            events = dict(poller.poll(_PARENT_CHECK_MS))
            if self.results in events:
                while True:
                    try:
                        self.link.send(self.results.recv(zmq.NOBLOCK))
                    except zmq.Again:
                        break
            if self.link in events:
                self._take()
        self.queries.put(None)
        self.bulk.put(None)
        self.pace.set(1.0)  # a rest in progress ends: the bulk thread finishes its share without one

    def _take(self) -> None:
        while True:
            try:
                message: list[Any] = msgpack.unpackb(self.link.recv(zmq.NOBLOCK))
            except zmq.Again:
                return
            if message[0] == STOP:
                self.stopping = True
                return
            if message[0] == PACE:
                self.pace.set(float(message[1]))
                continue
            (self.queries if message[0] == QUERY else self.bulk).put((message[1], message[2]))


def _gpus() -> int:
    import torch  # noqa: PLC0415 - loaded already with a GPU model

    return int(torch.cuda.device_count())


@click.command()
@click.option("--link", required=True, help="The pool's ROUTER endpoint.")
@click.option("--identity", required=True, help="This worker's name on the link.")
@click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda or cuda:N, for the backlog.")
@click.option("--threads", type=click.IntRange(1, 256), required=True, help="CPU threads for the model.")
@click.option("--log-level", default="info", help="As the coordinator's.")
def main(link: str, identity: str, device: str, threads: int, log_level: str) -> None:
    """Run one embedding worker (started by the coordinator, never by hand)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C: the coordinator decides when this stops
    parent = os.getppid()
    die_with_parent(parent)
    line = f"%(asctime)s %(levelname)s %(name)s ({identity}): %(message)s"
    logging.basicConfig(level=log_level.upper(), stream=sys.stderr, format=line)
    context: zmq.Context[Any] = zmq.Context()
    sock: zmq.Socket[bytes] = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.IDENTITY, identity.encode())
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(link)
    try:
        where = resolve_device("cuda" if device.startswith("cuda") else device)
        if where == "cuda" and device.startswith("cuda:"):
            where = device
        query = MiniLM("cpu", threads=threads)
        bulk = query if where == "cpu" else MiniLM(where)
    except Exception as exc:
        log.error("the embedding model could not be loaded: %s", exc)
        sock.send(msgpack.packb([FAILED, None, f"{type(exc).__name__}: {exc}"]))
        sock.close(linger=1000)
        context.term()
        sys.exit(3)
    gpus = _gpus() if where != "cpu" else 0
    sock.send(msgpack.packb([HELLO, where, bulk.batch_size, gpus]))
    worker = Worker(sock, context, query, bulk)
    signal.signal(signal.SIGTERM, lambda *_: setattr(worker, "stopping", True))
    worker.serve(parent)
    # a process that exits while a thread is inside a forward pass aborts; a pass takes a second or two at most
    for thread in worker.threads:
        thread.join(30)
    sock.close(linger=0)
    worker.results.close(linger=0)
    context.term()


if __name__ == "__main__":
    main()
