"""The coordinator process: a socket loop that validates every request and routes it (`admission.py`), its
start-up and its shutdown.

Processes, threads and who owns what:
- the front process (`front.py`) owns the public ROUTER socket and CURVE, and relays requests and replies
  in batches over one link (`link.py`); it also decodes and validates the writes and builds the plain puts'
  rows (`checks.py`, `write/built.py`; not with `--no-front-checks`); the socket loop starts it again if it dies;
- embedding worker processes (`search/embedworker.py`) hold the model, fed by the pool's thread (`embedpool.py`);
- the socket loop (the thread that calls `serve`) owns the link, the in-flight write table and the reply
  cache; only it sends to clients;
- the batcher's writer thread commits writes (`--writers N`, opt-in: N, each its own tiers; `--commit-threads 2`,
  opt-in: each tier's transaction on a thread behind it); reader threads run reads and `stats`; a thread releases
  idle tiers (`store/idle.py`); all hand replies back over inproc PUSH/PULL (ZeroMQ sockets are not thread-safe).
"""

from __future__ import annotations

import functools
import gc
import logging
import queue
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import msgpack
import zmq
from pydantic import BaseModel

from groove.coordinator import release, runtime
from groove.coordinator.errors import CoordinatorError, StorageError, TierUnavailable
from groove.coordinator.inproc import Pushers, queued
from groove.coordinator.metrics import OK, Metrics
from groove.coordinator.net import acks, stats
from groove.coordinator.net.admission import CHOSEN, READ, Admission
from groove.coordinator.net.auth import Principal, load_authorized, server_keys
from groove.coordinator.net.config import Settings
from groove.coordinator.net.handlers import HANDLERS, Control, Services
from groove.coordinator.net.idle import IdleNudges
from groove.coordinator.net.link import FrontLink
from groove.coordinator.net.registry import AgentRegistry
from groove.coordinator.net.resends import Resends
from groove.coordinator.search.checkpoints import Checkpoints
from groove.coordinator.search.derived import KEYWORD_FILE, Derived
from groove.coordinator.search.devices import check_gpu, default_workers
from groove.coordinator.search.embedpool import EmbedPool
from groove.coordinator.store.idle import IdleTiers
from groove.coordinator.store.tierset import TierSet
from groove.coordinator.wire.codec import (
    RequestEnvelope,
    peek_op,
)
from groove.coordinator.write.batcher import Batcher, Outcome
from groove.coordinator.write.built import Built
from groove.coordinator.write.internal import relate, store_vectors, writer_busy
from groove.coordinator.write.ops import WriteItem, WriteOp
from groove.protocol import constants as C
from groove.protocol.errors import ErrorCode
from groove.protocol.frames import send_frames

log = logging.getLogger(__name__)

_OUTBOX = "inproc://groove-outbox"
_WRITE, _PUSH = b"W", b"P"  # the outbox's other frames: a batch's acks; a nudge pushed to an agent
_DRAIN = 512  # replies taken from the writer and readers per loop turn, so neither direction starves the other
_DRAIN_BATCHES = 1  # batches of requests (of up to 64, front._DRAIN) taken from the front per loop turn
_CONTROL = frozenset(op for op, handler in HANDLERS.items() if isinstance(handler, Control))
_SMALL = 512  # control requests are smaller than this; looking for them among bigger payloads costs for nothing
_DERIVED_JOIN_S = 60.0  # how long a stopping coordinator waits for the near-duplicate thread


class Coordinator(Admission):
    """One coordinator: open tiers, serve requests until asked to stop, then flush and close."""

    def __init__(self, settings: Settings, link: FrontLink) -> None:
        """`link`: its front process, launched already (`groove serve` launches it before importing this)."""
        self.settings = settings
        self.services: Services = self
        self.metrics = Metrics()
        self.registry = AgentRegistry()
        self.idle = IdleNudges()
        caches = (settings.row_cache_rows(), settings.budget().votes_per_tier())
        self.derived = Derived(
            settings.exact_limit, settings.embedder != "none", settings.data_dir / KEYWORD_FILE, *caches
        )
        self.tiers = TierSet(settings.data_dir, on_open=self.derived.load_tier)
        self.batcher = Batcher(
            self.tiers,
            self.metrics,
            self._writes_done,
            settings.max_batch,
            settings.max_wait_ms,
            settings.queue_size,
            committed=self.derived.after_batch,
            settle=self.derived.settle,
            maintain_every_s=settings.maintain_every_s,
            fsync=settings.durability == "fsync",
            gone_agents=self.registry.gone,
            owners=settings.owners(),
            commit_threads=settings.commit_threads,
            writers=settings.writers,
        )
        self.boards = self.batcher.boards
        self._stop = threading.Event()
        self.pool: EmbedPool | None = None
        if self.derived.embeddings:
            workers, threads = default_workers()
            layout = (settings.embed_device, settings.embed_workers or workers, settings.embed_threads or threads)
            paced = (functools.partial(store_vectors, self.batcher), functools.partial(writer_busy, self.batcher))
            self.pool = EmbedPool(self.derived, *paced, link.context, link.directory(), layout, settings.log_level)
        near = (self.derived.near.run, (functools.partial(relate, self.batcher), self._stop))
        self._neighbours = threading.Thread(target=near[0], args=near[1], name="groove-neighbours", daemon=True)
        self.idle_tiers = IdleTiers(self.tiers, settings.tier_idle_s, settings.budget().tiers_mb, self._stop)
        self.checkpoints = Checkpoints(self.derived, self.batcher.held, settings.checkpoint_every_s, self._stop)
        self.readers = ThreadPoolExecutor(settings.readers, thread_name_prefix="groove-reader")
        self.link, self.context = link, link.context  # the front process owns the public socket
        self.started = time.monotonic()
        self.outbox = Pushers(self.context, _OUTBOX)  # the writer's and readers' replies, to the socket loop
        self.resends = Resends(settings.reply_cache_size())
        self._closing = False
        self._reads_pending = 0  # socket thread only
        # writes prepared on reader threads, for the socket thread: (peer, request id, digest, write, body, received)
        self._chosen: queue.SimpleQueue[tuple[bytes, str, str, WriteOp[Any], BaseModel, float]] = queue.SimpleQueue()
        self.inbox: zmq.Socket[bytes] = self.context.socket(zmq.PULL)
        self.endpoint = settings.bind
        self.last_stop = "clean"  # or "crash": how the previous run on this data dir ended
        self.failure: str | None = None  # why it stopped on its own, if it did
        self.recovery_ms = 0.0
        self.principals: dict[bytes, Principal] | None = None  # with --curve: each admitted key's role

    def start(self) -> None:
        """Open the user tier, bind the socket and start the writer. Raises if either fails, leaving nothing
        behind: no front process, no link directory."""
        try:
            self._start()
        except BaseException:
            self.link.stop()
            raise

    def _start(self) -> None:
        runtime.tune()  # the GIL's switch interval and the collector's thresholds: coordinator/runtime.py
        curve = None  # read before anything is opened, so a bad key stops the start-up with nothing changed
        if self.settings.curve:
            assert self.settings.authorized_keys is not None  # Settings checks this
            self.settings.data_dir.mkdir(parents=True, exist_ok=True)
            curve = (load_authorized(self.settings.authorized_keys), *server_keys(self.settings.server_key_path()))
        if self.pool is not None and self.settings.embed_device == "cuda":
            check_gpu()  # CoordinatorError now, with nothing opened, if there is no GPU to use
        self.tiers.lock()  # DataDirLocked: another coordinator serves this data dir; never serve beside it
        # the front binds while the user tier opens and the release is read: a restart after a crash serves sooner
        self.link.go()
        release()
        ready_ms = self._open_user()
        self.inbox.bind(_OUTBOX)
        if curve is not None:
            self.principals, public, _ = curve
            log.info("CURVE on: %d authorized keys; server public key %s", len(self.principals), public.decode())
        self.endpoint = self.link.ready()  # zmq.ZMQError when the endpoint cannot be bound
        # only now: a start that fails before serving (its port taken, say) must not leave the marker behind
        self._note_last_stop(ready_ms)
        runtime.settle()
        self.batcher.start()
        if self.pool is not None:
            self.pool.start()
        self._neighbours.start()
        self.idle_tiers.start()
        self.checkpoints.start()
        # Everything made so far (modules, classes, the user tier's derived data) lives as long as the process:
        # out of the cyclic collector's sight, each full collection under load scans a third as many objects
        # (~93k tracked under a write flood, two thirds import-time ones). `groove serve` starts with it off.
        gc.collect()
        gc.freeze()
        gc.enable()
        log.info("coordinator %s serving on %s", release(), self.endpoint)

    def _open_user(self) -> float:
        """Open the user tier (serving without it if it is damaged but there); returns how long that took, in ms."""
        started = time.monotonic()
        try:
            self.tiers.open_user()
        except TierUnavailable as exc:
            if C.TIER_USER not in self.tiers.unavailable():  # it could not even be made
                raise StorageError(exc.reason) from None
            log.critical("serving without the user tier: %s", exc.reason)
        ready_ms = (time.monotonic() - started) * 1000
        log.info("user tier ready in %.0f ms (data dir %s)", ready_ms, self.settings.data_dir)
        return ready_ms

    def _note_last_stop(self, ready_ms: float) -> None:
        """Say whether the previous run stopped cleanly, and how long recovering from it took; then mark this
        run as running (the marker goes when it stops cleanly). Called once the data dir is known to be ours."""
        previous = self.tiers.mark_running()
        if previous is not None:
            self.last_stop, self.recovery_ms = "crash", ready_ms
            log.warning(
                "the previous coordinator on this data dir did not stop cleanly (%s); recovered the user tier "
                "in %.0f ms (other tiers recover as they open)",
                previous or "no details",
                ready_ms,
            )

    def _fail(self, why: str) -> None:
        """Stop because a part of the coordinator is gone: what is queued still commits and is answered."""
        log.critical("%s; stopping", why)
        self.failure = why
        self._stop.set()

    def _revive_front(self) -> bool:
        """Start the front again once it is due (clients reconnect and resend what it held); True once started."""
        try:
            return self.link.restart()
        except (CoordinatorError, zmq.ZMQError) as exc:
            self._fail(f"the front process died and could not be started again: {exc}")
            return False

    def request_stop(self) -> None:
        """Ask the loop to stop: safe from signal handlers and other threads."""
        self._stop.set()

    def install_signal_handlers(self) -> None:
        """SIGINT and SIGTERM stop the coordinator cleanly (flush, commit, ack, close)."""
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: self.request_stop())

    def serve(self) -> None:
        """Run the socket loop until `request_stop`, then drain the writer and close everything."""
        poller = zmq.Poller()
        poller.register(self.link.sock, zmq.POLLIN)
        poller.register(self.inbox, zmq.POLLIN)
        while True:
            if self._stop.is_set() and not self._closing:
                log.info("stopping: committing %d queued writes", self.batcher.depth())
                self._closing = True
                self.batcher.request_stop()
            if not self.batcher.is_alive():
                self._drain_inbox()
                if not self._closing:
                    self._fail("the writer thread died")
                    continue
                break
            events = dict(poller.poll(50))
            if self.inbox in events:
                self._drain_inbox()
            if self.link.sock in events:
                self._drain_link()
            self.link.flush()
            if not self.link.alive() and not self._closing:
                old = self.link.sock
                if self._revive_front():
                    poller.unregister(old)
                    poller.register(self.link.sock, zmq.POLLIN)
        for request_id, waiting in self.resends.waiting.items():  # only if the writer died: nothing else will answer
            for peer in waiting.peers:
                self._error(peer, request_id, ErrorCode.INTERNAL, "the coordinator's writer stopped; retry")
        self.readers.shutdown(wait=True)
        self._drain_inbox()
        # The embedding workers finish the forward pass they are in (a few seconds at most); the near-duplicate
        # thread stops between batches once asked (the stop is set by now).
        if self.pool is not None:
            self.pool.stop()
        if self._neighbours.is_alive():
            self._neighbours.join(_DERIVED_JOIN_S)
        self.checkpoints.join(_DERIVED_JOIN_S)
        if self.failure is None:  # every commit reached the derived indexes: a last checkpoint of what changed
            try:
                self.derived.checkpoint(self.batcher.held, self.derived.due(time.monotonic(), 0.0, 0), _DERIVED_JOIN_S)
            except Exception:  # derived data: the last checkpoint stays, and the log past it; the stop goes on
                log.exception("the last checkpoint of the derived indexes failed")
        self.close()

    def close(self) -> None:
        """Close sockets and tiers."""
        self.outbox.close()
        self.inbox.close(linger=0)
        self.link.stop()
        if self.batcher.syncer is not None:
            self.batcher.syncer.close()
        self.context.term()
        self.tiers.close()  # the running marker goes with it
        log.info("coordinator stopped")

    # --- socket loop ---------------------------------------------------------------------------------

    def _drain_link(self) -> None:
        for batch, checked, built in self.link.batches(_DRAIN_BATCHES):
            # `ping`, `hello` and `heartbeat` first: they take microseconds, and must not wait behind the writes
            # the same batch brought (the front reads connections fairly, so they come in the next batch)
            later: list[tuple[list[bytes], Principal]] = []
            for user_id, frames in batch:
                who = self._principal(user_id, frames[0])
                if who is None:
                    continue
                if len(frames) == 3 and len(frames[2]) < _SMALL and peek_op(frames[2]) in _CONTROL:
                    self._handle(frames, who)
                else:
                    later.append((frames, who))
            self.link.flush()
            for frames, who in later:
                self._handle(frames, who)
            for user_id, peer, request_id, op, digest, body in checked:
                if (who := self._principal(user_id, peer)) is not None:
                    self._handle_checked(peer, who, RequestEnvelope(request_id, op), digest, body)
            for user_id, peer, *values in built:
                if (who := self._principal(user_id, peer)) is not None:
                    self._handle_built(peer, who, Built.from_wire(values))

    def _drain_inbox(self) -> None:
        for frames in queued(self.inbox, _DRAIN * 4):
            if frames[0] in (READ, _PUSH):  # a read's reply, or a nudge pushed to a connected agent
                if frames[0] == READ:
                    self._reads_pending -= 1
                self._send(frames[1], frames[2])
                continue
            if frames[0] == CHOSEN:
                self._reads_pending -= 1
                peer, request_id, digest, write, prepared, received = self._chosen.get_nowait()
                # a retry prepared meanwhile on another reader joins the first one's waiters
                if not self._known(peer, request_id, write.name, digest):
                    self._write(peer, WriteItem(request_id, write, prepared, digest), received)
                continue
            now, answered = time.perf_counter(), []
            for request_id, payload, outcome in msgpack.unpackb(frames[1]):
                waiting = self.resends.done(request_id, payload, outcome == OK)
                answered.append((waiting.op, (now - waiting.received) * 1000, outcome))
                for peer in waiting.peers:
                    self._send(peer, payload)
            self.metrics.record_ops(answered)  # a batch's acks, counted under one take of the lock

    def ping(self) -> dict[str, Any]:
        """The `ping` reply body: version, uptime, the tiers whose disk refuses writes and those not opened."""
        body = {"version": release(), "protocol": C.PROTOCOL_VERSION, "uptime_s": self.uptime()}
        return body | {"storage_faults": self.batcher.faults.snapshot(), "tiers_unavailable": self.tiers.unavailable()}

    def uptime(self) -> float:
        """Seconds since the coordinator object was made."""
        return time.monotonic() - self.started

    # --- other threads -------------------------------------------------------------------------------

    def _writes_done(self, outcomes: list[Outcome]) -> None:
        # one frame for the batch: a frame per reply cost the acker, and the socket loop, a ZeroMQ call each
        answered, pushes = acks.answers(self, self.metrics, outcomes)
        send_frames(self.outbox.socket(), (_WRITE, msgpack.packb(answered)))
        for peer, push in pushes:  # after the acks: the sender hears first that its nudge was stored
            send_frames(self.outbox.socket(), (_PUSH, peer, push))

    def stats(self) -> dict[str, Any]:
        """The `stats` reply body."""
        return stats.reply(self)
