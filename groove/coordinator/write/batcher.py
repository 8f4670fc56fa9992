"""Group commit: the one thread that writes. It drains the bounded write queue into batches and commits one
transaction per tier per batch. A second thread, the acker, then tells derived data what each batch changed,
syncs the WAL (`--durability fsync`) and only then reports each request's reply, while the writer goes on
with the next batch: one batch in flight behind the commits, answered in commit order.

A batch's tiers commit one after the other, in the order they first came. With `--writers N` (opt-in) there are
N writer threads, each with its own queue: a write whose body alone names the one tier it touches (`WriteOp.home`:
a `learning.put` into one tier without client-chosen ids, the coordinator's stored vectors) goes to the writer
that tier was given, so writes to different tiers plan, apply and commit side by side (CozoDB lets go of the GIL
while it reads and commits). Any other write goes to the first writer, which commits a batch holding one with
every writer held: it may read or change any tier. A tier is thus only ever written by one thread at a time, and
each tier's commits reach the one acker in their commit order. With `--commit-threads 2` (opt-in)
each tier's transaction runs on a thread behind the writer, which meanwhile
reads and applies the next tier's parts: CozoDB lets go of the GIL while it commits, so the two overlap. A
request that spans tiers sees the same order as with one thread: if the tier behind refuses it when it lands,
the next tier's transaction, prepared with it, is prepared again without it before it runs.

Exactly once: every applied part `:insert`s its request id, with its share of the reply, in the same
transaction as its data. A request applied before (a retry after a lost ack, even across a crash) makes
that transaction fail; the batcher then recalls the stored reply for it and commits the rest, so a part is
never applied twice.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from groove.coordinator.board.directory import Boards
from groove.coordinator.errors import DiskFault, Rejected
from groove.coordinator.metrics import Metrics
from groove.coordinator.search.changes import DerivedChanges
from groove.coordinator.store.faults import probe
from groove.coordinator.store.tierset import TierSet
from groove.coordinator.write.batches import Landed, check_curation, check_owner, joinable
from groove.coordinator.write.durability import Syncer
from groove.coordinator.write.housekeeping import Housekeeper
from groove.coordinator.write.ops import LEASES, WriteItem
from groove.coordinator.write.planning import Planner
from groove.coordinator.write.tiercommit import TierCommitter, recall
from groove.protocol.cluster import ClusterMap
from groove.protocol.errors import ErrorCode
from groove.protocol.ids import now_ms

log = logging.getLogger(__name__)

MOST_WRITERS = 8  # a writer holds the GIL about 40 % of its time: more than a few only wait for it

Outcome = tuple[WriteItem, "dict[str, Any] | Rejected"]
# Receives every request of a batch with its reply body or rejection, once the batch is done: one call per
# batch, because each hand-off to the socket thread costs a GIL round trip.
Done = Callable[[list[Outcome]], None]
# Told, before the acks, what each commit of a batch changed (per tier, in commit order), so derived data keeps up
# with the source (on the acker thread, batch after batch).
Committed = Callable[[list[tuple[str, DerivedChanges]]], None]


class _Lane:
    """One writer thread: its own queue and transactions, and the lock held while one of its batches commits."""

    def __init__(self, index: int, capacity: int, committer: TierCommitter, run: Callable[[_Lane], None]) -> None:
        self.index = index
        self.queue: queue.Queue[WriteItem] = queue.Queue(maxsize=capacity)
        self.committing = threading.Lock()
        self.committer = committer
        name = f"groove-batcher-{index}" if index else "groove-batcher"
        self.thread = threading.Thread(target=run, args=(self,), name=name, daemon=True)


class Batcher:
    """Owns the write queues and the writer threads."""

    def __init__(
        self,
        tiers: TierSet,
        metrics: Metrics,
        done: Done,
        max_batch: int,
        max_wait_ms: float,
        capacity: int,
        committed: Committed | None = None,
        maintain_every_s: float = 0.0,
        fsync: bool = False,
        gone_agents: Callable[[], set[str]] | None = None,
        owners: tuple[str, ClusterMap] | None = None,
        commit_threads: int = 1,
        writers: int = 1,
        settle: Callable[[], None] | None = None,
    ) -> None:
        self.tiers = tiers
        self.metrics = metrics
        self.done = done
        self.committed = committed
        self.settle = settle  # after each batch's acks, on the acker thread: derived work no ack waits for
        self.max_batch = max_batch
        self.max_wait = max_wait_ms / 1000.0
        self.capacity = capacity  # of all the writers' queues together
        self._stopping = threading.Event()
        self.boards = Boards(tiers)  # the working memories and task graphs, kept by the writers between batches
        self.commit_threads = commit_threads
        self._lanes = [
            _Lane(i, capacity, TierCommitter(tiers, self.boards, commit_threads), self._run) for i in range(writers)
        ]
        self._homes: dict[str, _Lane] = {}  # which writer commits each tier's homed writes
        self._assigning = threading.Lock()
        # Committed batches on their way to their acks. One per writer waits at most: a writer commits its next
        # batch (CozoDB lets go of the GIL while it does) while the acker updates derived data and answers.
        self._landing: queue.Queue[Landed | None] = queue.Queue(maxsize=writers)
        self._acker = threading.Thread(target=self._ack, name="groove-acker", daemon=True)
        # --durability fsync: the tiers committed to in this batch, synced before its acks
        self.syncer = Syncer() if fsync else None
        self.faults = tiers.faults
        self.owners = owners  # in a cluster: this coordinator's name and the map of who owns which tier
        self.housekeeper = Housekeeper(
            tiers, self.boards, self._commit_and_hand_over, self.held, gone_agents, maintain_every_s
        )
        self.client_at = 0.0  # when the writer last took a batch holding a client's write (time.monotonic)

    @property
    def writers(self) -> int:
        """How many writer threads commit."""
        return len(self._lanes)

    def start(self) -> None:
        """Start the writer and acker threads."""
        self._acker.start()
        for lane in self._lanes:
            lane.thread.start()

    def close(self) -> None:
        """Stop the commit threads behind the writers, of a batcher driven by `process` (a started one stops its
        own as its writers end)."""
        for lane in self._lanes:
            lane.committer.close()

    def depth(self) -> int:
        """Writes queued, in every writer's queue."""
        return sum(lane.queue.qsize() for lane in self._lanes)

    def full(self) -> bool:
        """Whether a write now would be answered `busy`."""
        return self.depth() >= self.capacity

    def submit(self, item: WriteItem) -> bool:
        """Queue a write; False when the queues are full (the caller answers `busy`)."""
        if len(self._lanes) > 1 and self.full():  # one writer: its queue's own bound is the bound, checked free
            return False
        try:
            self._lane_for(item).queue.put_nowait(item)
        except queue.Full:
            return False
        return True

    def _lane_for(self, item: WriteItem) -> _Lane:
        """The writer of the write's home tier (given one the first time it is named), else the first."""
        if len(self._lanes) == 1 or (home := item.home()) is None:
            return self._lanes[0]
        lane = self._homes.get(home)
        if lane is None:
            with self._assigning:  # internal writes are queued from other threads than the socket loop's
                lane = self._homes.setdefault(home, self._lanes[(len(self._homes) + 1) % len(self._lanes)])
        item.homed = True
        return lane

    @contextlib.contextmanager
    def held(self, lanes: list[_Lane] | None = None) -> Iterator[None]:
        """No batch commits while inside (of these writers, else all): writes queue up (and are acked after)."""
        with contextlib.ExitStack() as stack:
            for lane in lanes if lanes is not None else self._lanes:  # always in order: never a deadlock
                stack.enter_context(lane.committing)
            yield

    def is_alive(self) -> bool:
        """Whether a writer is running, or the acker still answering what they committed."""
        return any(lane.thread.is_alive() for lane in self._lanes) or self._acker.is_alive()

    def request_stop(self) -> None:
        """Let the writer commit and answer everything queued, then end; returns at once."""
        self._stopping.set()

    def _run(self, lane: _Lane) -> None:
        try:
            self._gather_and_commit(lane)
        finally:
            lane.committer.close()
            self._landing.put(None)  # the acker finishes what was committed, then ends with the last writer

    def _gather_and_commit(self, lane: _Lane) -> None:
        while True:
            try:
                first = lane.queue.get(timeout=0.1)
            except queue.Empty:
                if self._stopping.is_set():
                    return
                if lane.index == 0:
                    self.housekeeper.run()
                continue
            items = [first]
            deadline = time.monotonic() + self.max_wait
            while len(items) < self.max_batch:
                try:
                    items.append(lane.queue.get_nowait())
                    continue
                except queue.Empty:
                    pass
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    items.append(lane.queue.get(timeout=remaining))
                except queue.Empty:
                    break
            if any(not item.internal for item in items):
                self.client_at = time.monotonic()
            self._commit_and_hand_over(items, now_ms(), lane)
            if lane.index == 0:
                self.housekeeper.run()  # also under a steady load, when the queue is never empty

    def _commit_and_hand_over(self, items: list[WriteItem], now: int, lane: _Lane | None = None) -> None:
        """Commit a batch and queue it for its acks, both with its writer held (with every writer, unless each of
        its writes is homed): so each tier's commits reach the acker in their order."""
        lane = lane or self._lanes[0]
        with self.held([lane] if all(item.homed for item in items) else None):
            try:
                landed = self.commit(items, now, lane)
            except Exception:  # the writer must outlive any one batch; its requests get `internal`
                log.exception("batch of %d writes failed", len(items))
                self._fail(items)
                return
            self._landing.put(landed)

    def _fail(self, items: list[WriteItem]) -> None:
        failed = Rejected(ErrorCode.INTERNAL, "the write failed inside the coordinator")
        self.done([(item, failed) for item in items if not item.internal])

    def _ack(self) -> None:
        """The acker thread: derived data, then the WAL sync, then the acks, for each committed batch in order."""
        running = len(self._lanes)
        while running:
            landed = self._landing.get()
            if landed is None:
                running -= 1
                continue
            try:
                self.finish(landed)
            except Exception:  # the acker must outlive any one batch: its requests get `internal`
                log.exception("finishing a batch of %d writes failed", len(landed.items))
                self._fail(landed.items)

    def process(self, items: list[WriteItem], now: int) -> None:
        """Plan, deduplicate, commit and answer one batch, on the calling thread."""
        self.finish(self.commit(items, now))

    def commit(self, items: list[WriteItem], now: int, lane: _Lane | None = None) -> Landed:
        """Plan, deduplicate and commit one batch (on the first writer's transactions unless `lane` says);
        what is left to do before its acks is in the result."""
        landed = Landed(items, time.perf_counter())
        planned = [item for item in items if item.built is None]
        planner = Planner(
            self.tiers,
            now,
            finds=[lid for item in planned for lid in item.op.finds(item.body)],
            claims=[lid for item in planned for lid in item.op.claims(item.body)],
            closes=[iid for item in planned for iid in item.op.closes(item.body)],
            sessions=[sid for item in planned for sid in item.op.sessions(item.body)],
            boards=self.boards,
        )
        for item in planned:
            try:
                item.parts = item.op.plan(planner, item.body)
                check_curation(item)
                check_owner(item, self.owners)
            except Rejected as exc:
                item.parts = {}
                item.error = exc
        built = joinable(self.tiers, items, planned, now, self.owners)
        # A request that cannot be planned now (its learning since deleted, say) may still have been applied
        # before a crash: then its stored reply, not the error, is the answer.
        failed = [item for item in items if item.error is not None]
        if failed:
            recall(self.tiers.opened(), failed)
        committer = (lane or self._lanes[0]).committer
        order = list(dict.fromkeys([*(t for item in items for t in item.parts), *built]))
        committer.commit(order, [item for item in items if item.built is None], now, landed, built)
        self.tiers.remember(landed.located)
        self.tiers.forget(landed.removed)
        for name in {name for item in items for name in item.replies} - set(landed.dirty):
            recalled = self.tiers.get(name, create=False)
            if recalled is not None:
                landed.dirty[name] = recalled
        return landed

    def finish(self, landed: Landed) -> None:
        """After a batch committed: tell derived data what changed, sync the WAL (`--durability fsync`), then
        answer every request."""
        if self.committed is not None and landed.changes:
            try:
                self.committed(landed.changes)
            except Exception:  # derived data must never fail a committed source write
                log.exception("updating derived data for a batch of %d writes failed", len(landed.items))
        if self.syncer is not None and landed.dirty:
            try:
                self.syncer.sync(list(landed.dirty.values()))
            except OSError as exc:
                self._unsynced(landed, exc)
                return
        outcomes: list[Outcome] = []
        for item in landed.items:
            if item.internal:
                if item.error is not None:
                    log.warning("internal write %s failed: %s", item.op.name, item.error.message)
                elif item.op is LEASES:
                    for reply in item.replies.values():
                        self.metrics.count("leases_expired", reply["expired"])
                        self.metrics.count("leases_released", reply["released"])
                continue
            if item.built is not None:  # its ack was built with it: sent as it is once its tier committed it
                unsent = Rejected(ErrorCode.INTERNAL, "the write was not committed inside the coordinator")
                outcomes.append((item, item.error or ({} if item.replies else unsent)))
                continue
            if item.error is None and not item.replies and item.parts:  # never ack what no tier committed
                item.error = Rejected(ErrorCode.INTERNAL, "the write was not committed inside the coordinator")
            # A refusal with replies is the stored reply of a request applied before (a resend after a crash that
            # cannot be planned now), unless a tier it was planned into has none: then the replies are only part of
            # it, and an ack would say a tier took a write it did not (a resend, once the tier takes it, gets all)
            if item.error is not None and (
                not item.replies
                or item.error.code in (ErrorCode.INTERNAL, ErrorCode.BAD_REQUEST)
                or any(tier not in item.replies for tier in item.parts)
            ):
                outcomes.append((item, item.error))
            else:
                outcomes.append((item, item.op.combine(item.body, list(item.replies.values()))))
        committed = sum(1 for _, result in outcomes if not isinstance(result, Rejected))
        if outcomes:
            self.metrics.record_batch(len(outcomes), committed, (time.perf_counter() - landed.started) * 1000)
            self.done(outcomes)
        if self.settle is not None:
            try:
                self.settle()
            except Exception:  # derived data must never fail a committed source write
                log.exception("settling derived data after a batch of %d writes failed", len(landed.items))

    def _unsynced(self, landed: Landed, exc: OSError) -> None:
        """The write-ahead log could not be synced: the batch is committed but not known to be on disk, so none
        of it is acked. Each write gets its tier's disk fault; a resend (same id) gets what survived."""
        why = f"its write-ahead log could not be synced ({exc.strerror or exc}): the write is not known to be on disk"
        refusals: dict[str, DiskFault] = {}
        for name, tier in landed.dirty.items():
            code = (probe(tier.path) or (ErrorCode.STORAGE_IO, why))[0]
            writes = sum(1 for item in landed.items if name in item.parts and not item.internal)
            refusals[name] = self.faults.failed(name, code, why, writes)
        first = next(iter(refusals.values()))
        answers = [(item, next((refusals[t] for t in item.parts if t in refusals), first)) for item in landed.items]
        self.done([(item, item.error or refusal) for item, refusal in answers if not item.internal])
