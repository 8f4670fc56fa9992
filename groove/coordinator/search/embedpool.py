"""The embedding pool: worker processes (`embedworker.py`) that turn texts into vectors, fed by one thread of the
coordinator. The coordinator never imports torch: the backlog and the queries both go to the workers.

- On the CPU: `workers` processes of `threads` torch threads each (one process on 16 cores embedded no faster
  than on 2: several smaller ones use the cores). With a GPU: one process per device. Each works through the
  backlog on one thread and its queries on another (`embedworker.py`).
- The first worker starts with the coordinator and says where its model runs; the pool then starts the others
  (one per further GPU, or the rest of the CPU pool).
- Each ready worker holds up to `_SHARES` shares of the backlog (`_PASSES` forward passes each), taken from the
  derived data's queue: the next one waits in the worker while it embeds one, so it never idles while vectors
  travel back and the coordinator stores them. The vectors are committed through the batcher, as before.
  Queries go to the ready worker with the fewest queries in flight, and run there at once, beside its shares.
- The bulk work's share of the time (`duty.py`): all of it, or a tenth while clients write and the machine has no
  core to spare; the pool looks every second and tells the workers when it changes.
- A worker that dies is started again (after a growing pause if it keeps dying); its shares go back to the
  front of the queue and its queries fail over to keywords. One that cannot load the model is not restarted:
  with none left, search works by keywords alone, as without an embedder.
"""

from __future__ import annotations

import itertools
import logging
import os
import queue
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import zmq
from pydantic import BaseModel

from groove.coordinator.errors import EmbeddingUnavailable
from groove.coordinator.inproc import Pushers
from groove.coordinator.procs import Child
from groove.coordinator.search.changes import Pending, StoreVectors
from groove.coordinator.search.derived import Derived
from groove.coordinator.search.duty import SAMPLE_S, SpareCores, duty_for
from groove.coordinator.search.embedder import Vectors
from groove.coordinator.search.embedworker import BULK, FAILED, HELLO, PACE, QUERY, STOP, VECTORS
from groove.coordinator.search.queries import query_text
from groove.coordinator.store.records import VectorBlob, vector_blob
from groove.protocol import constants as C

log = logging.getLogger(__name__)

_PASSES = 4  # forward passes per share of the backlog: bigger shares pad less (texts are sorted by length)
_SHARES = 2  # shares a worker holds: one embedding, one waiting (a GPU idled between one share and the next)
_QUERY_TIMEOUT_S = 10.0  # a query not embedded by then is answered by keywords
_STOP_S = 30.0  # a worker inside a forward pass finishes it first
# Vectors per internal write. A GPU embeds a share of 2,048 texts at once: stored as one write, it made the batch
# that carried it commit for hundreds of ms, with every client write in it waiting.
STORE_CHUNK = 64
_TRICKLE_S = 0.05  # with the writer busy, a chunk this often at most (1,280 vectors/s)
# With clients writing, the index work of the vectors stored (an HNSW insert, a near-duplicate search: about a
# millisecond a vector on one core past `--exact-limit`) takes at most this share of one thread's time. At a
# chunk every 50 ms a stand-in GPU into a large tier left the writes 0.23 x (2 vCPUs).
_DERIVED_SHARE = 0.25
_WAKE = "inproc://groove-embed-wake"
# glibc's heaps for a worker: one per thread by default (the query thread, the bulk thread, ONNX Runtime's pool),
# each keeping its own free pages. With two, its RSS stayed flat across 2,000 texts, 256 long ones and 2,000 more
# (190.6 -> 193.1 -> 193.2 MB, `python -m benchmarks.embedmem`); with the default it crept (204 -> 219 -> 231).
_WORKER_ENV = {"MALLOC_ARENA_MAX": os.environ.get("MALLOC_ARENA_MAX", "2")}
_LOAD_FAILED = 3  # a worker's exit status when the model could not be loaded: starting it again would not help


@dataclass(slots=True)
class _Slot:
    """One worker: its process, and what it holds."""

    child: Child
    identity: bytes
    device: str = ""  # "" until its hello
    batch_size: int = 0
    shares: dict[int, list[Pending]] = field(default_factory=dict)  # the backlog it holds: job -> texts, in order
    queries: dict[int, tuple[Future[Vectors], float]] = field(default_factory=dict)  # job -> (its vector, deadline)
    embedded: int = 0
    load_failed: bool = False

    @property
    def ready(self) -> bool:
        return bool(self.device) and self.child.alive()


class EmbedPool:
    """The workers and the thread that feeds them; an `Embedder` for queries once a worker is ready."""

    name: str = C.EMBEDDING_MODEL
    batch_size: int = 1

    def __init__(
        self,
        derived: Derived,
        store: StoreVectors,
        busy: Callable[[], bool],
        context: zmq.Context[Any],
        directory: Path,
        layout: tuple[str, int, int],
        log_level: str,
    ) -> None:
        self.derived = derived
        self.store = store
        self.busy = busy  # whether clients are writing (`write.internal.writer_busy`)
        self.endpoint = f"ipc://{directory / 'embed'}"
        # --embed-device; CPU workers wanted (with GPUs, one per device instead); torch threads of each
        self.device, self.workers, self.threads = layout
        self.log_level = log_level
        self.slots: list[_Slot] = []
        self._grown = False  # the first worker's hello said where the model runs, and the pool grew to fit
        self._queries: queue.SimpleQueue[tuple[str, Future[Vectors], float]] = queue.SimpleQueue()
        self._jobs = itertools.count(1)
        # vectors computed, waiting for room in the write queue: (tier, up to STORE_CHUNK rows, whether notes)
        self._unstored: deque[tuple[str, list[tuple[str, VectorBlob]], bool]] = deque()
        self._next_store = 0.0  # while clients write, no chunk is stored before this (time.monotonic)
        self.duty = 1.0  # the backlog's share of the workers' time, as last told to them
        self._spare = SpareCores(os.cpu_count() or 1)
        self._sampled = 0.0  # when the machine's CPU was last looked at (time.monotonic)
        self._stop = threading.Event()
        self._wakers = Pushers(context, _WAKE)  # the reader threads' queries wake the feeding thread
        self._thread = threading.Thread(target=self._run, name="groove-embed-pool", daemon=True)
        self.sock: zmq.Socket[bytes] = context.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        self.wake: zmq.Socket[bytes] = context.socket(zmq.PULL)

    # --- the coordinator's side -----------------------------------------------------------------------

    def start(self) -> None:
        """Bind the link, start the first worker and the feeding thread."""
        self.sock.bind(self.endpoint)
        self.wake.bind(_WAKE)
        self._add(self.device)
        self._thread.start()

    def stop(self) -> None:
        """Stop the workers (each finishes its forward pass) and the thread."""
        self._stop.set()
        self._wake()
        if self._thread.is_alive():
            self._thread.join(_STOP_S + 5)

    def encode(self, texts: list[str]) -> Vectors:
        """Embed a query (from any thread); EmbeddingUnavailable when no worker does it in time."""
        try:  # the pool fails it by its deadline; the guard holds should the pool's thread itself be gone
            return self.submit(texts[0]).result(_QUERY_TIMEOUT_S + 1)
        except TimeoutError:
            raise EmbeddingUnavailable(f"no embedding worker answered within {_QUERY_TIMEOUT_S:.0f} s") from None

    def submit(self, text: str) -> Future[Vectors]:
        """A query's vector, on its way: done within `_QUERY_TIMEOUT_S`, or failed with EmbeddingUnavailable."""
        done: Future[Vectors] = Future()
        self._queries.put((text, done, time.monotonic() + _QUERY_TIMEOUT_S))
        self._wake()
        return done

    def first(self, body: BaseModel, read: Callable[[], Any]) -> None:
        """Run `read` (the request's read, handed to a reader thread) once its query's vector is at hand: asked
        for now, so that no reader waits on it (`queries.py`); at once when it needs none or no worker is ready."""
        text = query_text(body)
        if text is None or self.derived.embedder is None or self.derived.queries.kept(text):
            read()
        else:
            self.derived.queries.prefetch(text, self.submit(text), read)

    def report(self) -> list[dict[str, Any]]:
        """Each worker for `stats`: its process, its device, the texts it embedded."""
        return [slot.child.report() | {"device": slot.device or None, "embedded": slot.embedded} for slot in self.slots]

    def holding(self) -> tuple[int, float | None]:
        """Texts the workers hold (taken from the queue, their vectors not back yet), and when the oldest of them
        was queued (monotonic; None when they hold none): they are waiting for their embedding too."""
        shares = [share for slot in list(self.slots) for share in list(slot.shares.values()) if share]
        return sum(len(share) for share in shares), min((share[0].queued_at for share in shares), default=None)

    def _wake(self) -> None:
        self._wakers.socket().send(b"", zmq.NOBLOCK)

    # --- the feeding thread ---------------------------------------------------------------------------

    def _add(self, device: str) -> None:
        identity = f"embed-{len(self.slots)}"
        argv = [sys.executable, "-m", "groove.coordinator.search.embedworker", "--link", self.endpoint]
        argv += ["--identity", identity, "--device", device, "--threads", str(self.threads)]
        argv += ["--log-level", self.log_level]
        slot = _Slot(Child(identity, argv, _WORKER_ENV), identity.encode())
        slot.child.start()
        self.slots.append(slot)

    def _run(self) -> None:
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        poller.register(self.wake, zmq.POLLIN)
        try:
            while not self._stop.is_set():
                self._supervise()
                self._expire(time.monotonic())
                self._pace(time.monotonic())
                self._dispatch()
                events = dict(poller.poll(int(_TRICKLE_S * 1000) if self._unstored else 100))
                if self.wake in events:
                    while True:
                        try:
                            self.wake.recv(zmq.NOBLOCK)
                        except zmq.Again:
                            break
                if self.sock in events:
                    self._receive()
        except Exception:
            log.exception("the embedding pool failed; search works by keywords only")
        finally:
            self._shutdown()

    def _supervise(self) -> None:
        now = time.monotonic()
        for slot in self.slots:
            status = slot.child.exited()
            if status is None or slot.load_failed:
                continue
            if slot.device or slot.shares or slot.queries:  # it died since it was last seen alive
                self._lost(slot)
            if status == _LOAD_FAILED:
                slot.load_failed = True
                log.error("%s could not load the embedding model; not restarting it", slot.child.name)
            elif slot.child.due(now):
                slot.child.restart()
        self.derived.embedder = self if any(slot.ready for slot in self.slots) else None
        if self.slots and all(slot.load_failed for slot in self.slots):
            self.derived.disable()

    def _expire(self, now: float) -> None:
        """Queries not embedded by their deadline fail (words stand in); a late vector is then dropped."""
        for slot in self.slots:
            for job, (done, deadline) in list(slot.queries.items()):
                if now > deadline:
                    del slot.queries[job]
                    late = f"no embedding worker answered within {_QUERY_TIMEOUT_S:.0f} s"
                    done.set_exception(EmbeddingUnavailable(late))

    def _lost(self, slot: _Slot) -> None:
        """A worker died: its shares back to the front of the queue, in their order, its queries to keywords."""
        held = [pending for share in slot.shares.values() for pending in share]
        if held:
            self.derived.put_back(held)
            log.warning("%s died holding %d texts: queued again", slot.child.name, len(held))
        for done, _ in slot.queries.values():
            done.set_exception(EmbeddingUnavailable(f"{slot.child.name} died while embedding the query"))
        slot.shares, slot.queries, slot.device = {}, {}, ""

    def _pace(self, now: float) -> None:
        """Every SAMPLE_S: the backlog's duty for the machine as it is now; the workers are told when it changes."""
        if now - self._sampled < SAMPLE_S:
            return
        self._sampled = now
        pids = [slot.child.proc.pid for slot in self.slots if slot.child.proc is not None and slot.child.alive()]
        _, held_since = self.holding()
        oldest_s = self.derived.oldest_ms(held_since) / 1000
        self._tell(duty_for(self.busy(), self._spare.sample(now, pids), oldest_s))

    def _tell(self, duty: float) -> None:
        """A new duty for the backlog, sent to each ready worker (one that says hello later is told then)."""
        if duty == self.duty:
            return
        log.debug("the backlog's duty: %.2f (%.2f cores spare)", duty, self._spare.spare)
        self.duty = duty
        for slot in self.slots:
            if slot.ready:
                self._send(slot, [PACE, duty])

    def _store(self, now: float) -> None:
        """Hand computed vectors to the batcher, a chunk at a time, while the writer has room; while clients write,
        a chunk every `_TRICKLE_S` at most, and less often when the indexes' work on the vectors would take more
        than `_DERIVED_SHARE` of a thread (so derived data neither slows the source writes nor starves)."""
        while self._unstored:
            if self.busy() and now < self._next_store:
                return
            tier, rows, notes = self._unstored[0]
            if not self.store(tier, rows, notes):
                return  # the write queue is full
            self._unstored.popleft()
            self._next_store = now + max(_TRICKLE_S, len(rows) * self.derived.vector_seconds() / _DERIVED_SHARE)

    def _dispatch(self) -> None:
        self._store(time.monotonic())
        ready = [slot for slot in self.slots if slot.ready]
        while True:
            try:
                text, done, deadline = self._queries.get_nowait()
            except queue.Empty:
                break
            if not ready:
                done.set_exception(EmbeddingUnavailable("no embedding worker is ready"))
                continue
            slot = min(ready, key=lambda s: len(s.queries))
            job = next(self._jobs)
            slot.queries[job] = (done, deadline)
            self._send(slot, [QUERY, job, [text]])
        if self._unstored:
            return  # the source writes go first: no more backlog until what was embedded is stored
        # at a low duty a pass and its rest take seconds: shares of one pass bring vectors back as each is done
        passes = _PASSES if self.duty == 1.0 else 1
        for slot in ready:
            while len(slot.shares) < _SHARES:
                batch = self.derived.take(passes * slot.batch_size)
                if not batch:
                    return
                job = next(self._jobs)
                slot.shares[job] = batch
                self._send(slot, [BULK, job, [p.text for p in batch]])

    def _send(self, slot: _Slot, message: list[Any]) -> None:
        try:
            self.sock.send_multipart([slot.identity, msgpack.packb(message)], zmq.NOBLOCK)
        except zmq.ZMQError:  # it is gone: `_supervise` hands back what it held
            log.warning("%s could not be reached", slot.child.name)

    def _receive(self) -> None:
        while True:
            try:
                identity, raw = self.sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            slot = next((s for s in self.slots if s.identity == identity), None)
            if slot is None:
                continue
            message: list[Any] = msgpack.unpackb(raw)
            if message[0] == HELLO:
                self._hello(slot, message[1], message[2], message[3])
            elif message[0] == VECTORS:
                self._result(slot, message[1], message[2])
            elif message[0] == FAILED and message[1] is not None:  # a job failed (at load it exits: `_supervise`)
                self._result(slot, message[1], None, message[2])

    def _hello(self, slot: _Slot, device: str, batch_size: int, gpus: int) -> None:
        slot.device, slot.batch_size = device, batch_size
        log.info("%s ready: the model on %s, passes of %d", slot.child.name, device, batch_size)
        if self.duty != 1.0:  # a worker starts at full duty
            self._send(slot, [PACE, self.duty])
        if self._grown:
            return
        self._grown = True
        if device == "cpu":  # the rest of the CPU pool
            for _ in range(self.workers - 1):
                self._add("cpu")
        else:  # one process per further GPU
            for index in range(1, gpus):
                self._add(f"cuda:{index}")

    def _result(self, slot: _Slot, job: int, vectors: bytes | None, why: str = "") -> None:
        query = slot.queries.pop(job, None)
        if query is not None:
            done = query[0]
            if vectors is None:
                done.set_exception(EmbeddingUnavailable(f"the query could not be embedded: {why}"))
            else:
                done.set_result(np.frombuffer(vectors, dtype=np.float32).reshape(-1, C.EMBEDDING_DIM))
            return
        batch = slot.shares.pop(job, None)
        if batch is None:
            return
        if vectors is None:
            failed = (slot.child.name, len(batch), why)
            log.error("%s failed to embed %d texts (%s); they stay findable by keywords", *failed)
            return
        rows = np.frombuffer(vectors, dtype=np.float32).reshape(len(batch), C.EMBEDDING_DIM)
        by_tier: dict[tuple[str, bool], list[tuple[str, VectorBlob]]] = {}
        for pending, vector in zip(batch, rows, strict=True):
            by_tier.setdefault((pending.tier, pending.note), []).append((pending.learning_id, vector_blob(vector)))
        for (tier, notes), stored in by_tier.items():
            self._unstored += [(tier, stored[i : i + STORE_CHUNK], notes) for i in range(0, len(stored), STORE_CHUNK)]
        self._store(time.monotonic())
        slot.embedded += len(batch)
        self.derived.count_embedded(len(batch))

    def _shutdown(self) -> None:
        self.derived.embedder = None
        for slot in self.slots:
            if slot.child.alive():
                self._send(slot, [STOP])
        deadline = time.monotonic() + _STOP_S
        for slot in self.slots:
            slot.child.wait(max(0.1, deadline - time.monotonic()))
            for done, _ in slot.queries.values():
                done.set_exception(EmbeddingUnavailable("the coordinator is stopping"))
        self.sock.close(linger=0)
        self.wake.close(linger=0)
        self._wakers.close()
