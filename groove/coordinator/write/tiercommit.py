"""A batch's writes committed tier by tier: each tier's parts read, applied to a working copy and committed as
one transaction (`TierWrite`, `render.script`), then landed: replies, what derived data must learn, or the
failure handled (requests applied before recalled, a disk at fault, the rest retried one by one).

With a thread behind the writer (`--commit-threads 2`, opt-in: it measured no faster end to end, on 2 cores or
16; performance-history.md) each tier's transaction but the last runs there while the writer reads and applies the
next tier's parts: CozoDB lets go of the GIL while it commits, so the two overlap. The order a request that spans
tiers sees stays the same: when the tier behind refuses it on landing, the next tier's transaction, prepared with
it, is prepared again without it before it runs.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from groove.coordinator.board.directory import Boards
from groove.coordinator.board.state import Board
from groove.coordinator.errors import DiskFault, Rejected, StorageError, reused_id
from groove.coordinator.store import journal
from groove.coordinator.store.faults import Faults, probe
from groove.coordinator.store.relations import HASHES
from groove.coordinator.store.tiers import Tier
from groove.coordinator.store.tierset import TierSet
from groove.coordinator.write.batches import Landed
from groove.coordinator.write.ops import WriteItem, unbuild
from groove.coordinator.write.parts import BoardPart
from groove.coordinator.write.render import changes, derived_changes, journal_ids, script
from groove.coordinator.write.tierwrite import TierWrite
from groove.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

_HASH = HASHES.at["hash"]

MOST_THREADS = 2  # the writer and one transaction behind it: a third thread would have nothing to run


@dataclass(slots=True)
class _Prepared:
    """One tier's transaction, ready to run, and what its landing needs."""

    tier: Tier
    live: list[WriteItem]
    write: TierWrite
    board: Board | None
    results: list[tuple[WriteItem, dict[str, Any] | Rejected]]
    text: str
    params: dict[str, Any]
    joined: list[WriteItem]  # puts built outside the writer (write/built.py), their rows joined to the transaction
    added: list[str]  # learnings it makes
    removed: list[str]  # ... and removes
    seq: int  # its derived log entry (0: none, it changes no learning's derived data)


def _run(prepared: _Prepared) -> StorageError | DiskFault | None:
    """Run a prepared transaction (on any thread); the storage failure it met, if any."""
    try:
        if prepared.text:
            prepared.tier.run(prepared.text, prepared.params)
    except (StorageError, DiskFault) as exc:
        return exc
    return None


def recall(tiers: list[Tier], items: list[WriteItem]) -> bool:
    """Fill in the stored replies of requests already applied in these tiers; True if any was."""
    by_id = {item.request_id: item for item in items}
    found = False
    for tier in tiers:
        for rid, (op, digest, reply) in tier.replies(list(by_id)).items():
            item = by_id[rid]
            found = True
            refusal = reused_id(rid, op, digest, item.op.name, item.digest)
            if refusal is not None:
                item.parts.clear()
                item.error = refusal
                continue
            item.replies[tier.name] = reply
    return found


class TierCommitter:
    """Commits a batch's parts tier by tier, on the writer thread and, with `threads` 2, one behind it."""

    def __init__(self, tiers: TierSet, boards: Boards, threads: int) -> None:
        self.tiers = tiers
        self.faults: Faults = tiers.faults
        self.boards = boards
        self.threads = threads
        self._behind = ThreadPoolExecutor(1, thread_name_prefix="groove-commit") if threads > 1 else None

    def close(self) -> None:
        """Stop the thread behind (after the last batch)."""
        if self._behind is not None:
            self._behind.shutdown()

    def commit(
        self, order: list[str], items: list[WriteItem], now: int, landed: Landed, built: dict[str, list[WriteItem]]
    ) -> None:
        """Commit the batch's tiers in `order`, one after the other, each tier's built puts (`built`) joined to its
        transaction; with a thread behind, each transaction but the last runs there while this thread reads and
        applies the next tier's parts."""
        behind: tuple[_Prepared, Future[StorageError | DiskFault | None]] | None = None
        try:
            for at, tier_name in enumerate(order):
                pending = [item for item in items if tier_name in item.parts and tier_name not in item.replies]
                joined = built.get(tier_name, [])
                prepared = self._prepare(tier_name, pending, now, joined) if pending or joined else None
                if behind is not None:
                    self._land(behind[0], behind[1].result(), now, landed)
                    behind = None
                if prepared is None:
                    continue
                if any(item.error is not None for item in prepared.live):
                    # the tier behind refused a request this one shares: prepared again without it
                    if prepared.board is not None:
                        self.boards.reload(prepared.tier)
                    self._commit_tier(tier_name, pending, now, landed, joined)
                elif self._behind is None or at == len(order) - 1:  # nothing left to prepare meanwhile
                    self._land(prepared, _run(prepared), now, landed)
                else:
                    behind = (prepared, self._behind.submit(_run, prepared))
        except BaseException:
            if behind is not None:  # the batch fails: never leave its transaction running into the next one
                wait([behind[1]])
            raise
        if behind is not None:
            self._land(behind[0], behind[1].result(), now, landed)

    def _recalled(self, tier: Tier, items: list[WriteItem]) -> bool:
        """`recall` in one tier, False when the tier cannot even be read (a disk at fault)."""
        try:
            return recall([tier], items)
        except (StorageError, DiskFault):
            return False

    def _commit_tier(
        self, tier_name: str, items: list[WriteItem], now: int, landed: Landed, joined: list[WriteItem] | None = None
    ) -> None:
        """Commit these requests' parts (and the `joined` built puts) for one tier in one transaction, on this
        thread."""
        prepared = self._prepare(tier_name, items, now, joined)
        if prepared is not None:
            self._land(prepared, _run(prepared), now, landed)

    def _prepare(
        self, tier_name: str, items: list[WriteItem], now: int, joined: list[WriteItem] | None = None
    ) -> _Prepared | None:
        """Read what these requests' parts touch in one tier and apply them to a working copy: the transaction,
        ready to run, with the rows of the `joined` built puts. None when the tier cannot take them (each request
        then has its error)."""
        joined = joined or []
        try:
            tier = self.tiers.get(tier_name, create=True)
        except Rejected as exc:  # tier_unavailable: these requests fail, the batch's other tiers commit
            for item in items + joined:
                item.error = exc
            return None
        assert tier is not None
        live = [item for item in items if item.error is None]
        if (why := tier.vanished()) is not None:  # nothing committed now would outlive this process
            refusal = self.faults.failed(tier_name, ErrorCode.STORAGE_IO, why, len(live) + len(joined))
            for item in live + joined:
                item.error = refusal
            return None
        parts = [item.parts[tier_name] for item in live]
        board = self.boards.get(tier) if any(isinstance(part, BoardPart) for part in parts) else None
        try:
            write = TierWrite(tier, parts, now, board)  # reads what the batch touches
        except (StorageError, DiskFault):
            if not self._disk_fault(tier, live + joined):
                raise
            return None
        results: list[tuple[WriteItem, dict[str, Any] | Rejected]] = []
        for item in live:
            try:
                part = item.parts[tier_name]
                results.append((item, write.apply(item.request_id, item.op.name, part, not item.internal, item.digest)))
            except Rejected as exc:
                results.append((item, exc))
        built = [item.built for item in joined if item.built is not None]
        added, removed = changes(write)
        added += [lid for put in built for lid in put.ids]
        touched = journal_ids(write, added, removed)
        seq = tier.next_entry() if touched else 0  # its derived log entry: what a start after a crash reads again
        entry = journal.entry(seq, touched, len(added) - len(removed), now) if seq else None
        text, params = script(write, built, entry)
        # before the transaction runs: a later batch must look up what this one may store
        tier.content_hashes.add(row[_HASH] for row in write.hashes_put.values())
        tier.content_hashes.add(row[_HASH] for put in built for row in put.hashes)
        return _Prepared(tier, live, write, board, results, text, params, joined, added, removed, seq)

    def _land(self, prepared: _Prepared, failure: StorageError | DiskFault | None, now: int, landed: Landed) -> None:
        """After a tier's transaction ran: its replies and what the acker must know, or, when it failed, the
        stored replies of requests applied before, then the rest again (one by one if need be).

        The transaction `:insert`s the request ids, so it fails if any was applied already (a retry after a
        crash): then the stored replies are recalled and the rest committed. Any other failure is isolated
        by committing the requests one at a time.
        """
        tier, live, board, write = prepared.tier, prepared.live, prepared.board, prepared.write
        tier_name = tier.name
        if failure is not None:
            if board is not None:  # it holds this transaction's changes: back to what is stored
                self.boards.reload(tier)
            # the built puts go the planned way from here: recalled if applied before (a resend after a crash),
            # else committed again, one by one if need be
            for item in prepared.joined:
                unbuild(self.tiers, item, now)
            live = live + [item for item in prepared.joined if item.error is None]
            # a resend of a request applied already is not a disk fault, even while one stands (its first
            # commit's log sync may have failed): recalled, it is acked once the log is synced
            if self._recalled(tier, live):
                rest = [item for item in live if tier_name not in item.replies and item.error is None]
                if rest:
                    self._commit_tier(tier_name, rest, now, landed)
                return
            if self._disk_fault(tier, live):
                return
            if len(live) > 1:
                log.warning(
                    "commit to tier %s failed (%s); retrying its %d writes one by one", tier_name, failure, len(live)
                )
                for item in live:
                    self._commit_tier(tier_name, [item], now, landed)
                return
            log.error("write %s to tier %s failed: %s", live[0].request_id if live else "-", tier_name, failure)
            for item in live:
                item.error = Rejected(ErrorCode.INTERNAL, f"commit to tier {tier_name!r} failed: {failure}")
            return
        landed.dirty[tier_name] = tier
        if board is not None:
            board.publish()
        self.faults.committed(tier_name)
        added, removed = prepared.added, prepared.removed
        built = [item.built for item in prepared.joined if item.built is not None]
        tier.learnings += len(added) - len(removed)
        landed.located.update(dict.fromkeys(added, tier_name))  # the location cache: once every tier is done
        landed.removed += removed
        landed.changes.append((tier_name, derived_changes(write, built, prepared.seq)))
        for item in prepared.joined:
            item.replies[tier_name] = {}  # its ack was built with it
        # A request refused now may have been applied before a crash (a resent task.complete finds its task
        # completed): then its stored reply, not the refusal, is the answer.
        refused = [item for item, result in prepared.results if isinstance(result, Rejected)]
        if refused:
            recall([tier], refused)
        for item, result in prepared.results:
            if not isinstance(result, Rejected):
                item.replies[tier_name] = result
            elif tier_name not in item.replies and item.error is None:
                item.error = result

    def _disk_fault(self, tier: Tier, items: list[WriteItem]) -> bool:
        """After a storage error: if the tier's disk is at fault, refuse these writes saying so (one log line
        per change of the tier's state) and return True."""
        # with the disk mended, the store itself resumes a few seconds later: until it does, the fault stands
        fault = probe(tier.path) or self.faults.standing(tier.name)
        if fault is None:
            return False
        refusal = self.faults.failed(tier.name, *fault, len(items))
        for item in items:
            item.error = refusal
        return True
