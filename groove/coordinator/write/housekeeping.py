"""The writer's chores between batches: lapsed task leases (and those of agents gone from the registry),
periodic lifecycle maintenance, and forgetting applied request ids older than the idempotency window.

Each chore that writes is an internal write committed like any batch (`hand_over`), so derived data learns every
commit in commit order; pruning runs with every writer held, since a tier is written by one thread at a time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager

from groove.coordinator.board.directory import Boards
from groove.coordinator.board.state import LeaseExpiry
from groove.coordinator.errors import StorageError
from groove.coordinator.store.tierset import TierSet
from groove.coordinator.write.ops import LEASES, MAINTAIN, WriteItem
from groove.protocol.ids import now_ms, uuid7
from groove.protocol.loop import MaintainRequest

log = logging.getLogger(__name__)

# How long applied request ids are kept for answering retries (PROTOCOL.md, section 7).
IDEMPOTENCY_WINDOW_MS = 7 * 24 * 3600 * 1000
_PRUNE_EVERY_S = 600.0
_GONE_CHECK_S = 1.0  # how often held leases are checked against the agents gone from the registry

HandOver = Callable[[list[WriteItem], int], None]  # commits internal writes and hands them to the acker


class Housekeeper:
    """Runs the chores on the first writer's thread, between its batches."""

    def __init__(
        self,
        tiers: TierSet,
        boards: Boards,
        hand_over: HandOver,
        held: Callable[[], AbstractContextManager[None]],
        gone_agents: Callable[[], set[str]] | None,
        maintain_every_s: float,
    ) -> None:
        self.tiers, self.boards, self.hand_over, self.held = tiers, boards, hand_over, held
        self.gone_agents = gone_agents  # the agent registry's gone agents: they lose their leases at once
        self.maintain_every_s = maintain_every_s  # 0: lifecycle maintenance only on request
        self._last_gone_check = 0.0
        self._last_maintain = time.monotonic()
        self._last_prune = 0.0

    def run(self) -> None:
        """Whichever chores are due."""
        now = now_ms()
        gone: set[str] = set()
        if self.gone_agents is not None and time.monotonic() - self._last_gone_check >= _GONE_CHECK_S:
            self._last_gone_check = time.monotonic()
            gone = self.gone_agents()
        for tier_name, board in self.boards.loaded():
            lapse = board.next_expiry()
            leaving = sorted(board.holders() & gone) if gone else []
            if leaving or (lapse is not None and lapse <= now):
                lapsed = LeaseExpiry(tier=tier_name, gone=leaving)
                self.hand_over([WriteItem(uuid7(), LEASES, lapsed, internal=True)], now)
        if self.maintain_every_s and time.monotonic() - self._last_maintain >= self.maintain_every_s:
            self._last_maintain = time.monotonic()
            # the tiers open now: one opened later catches up at its next run (decay counts idle time)
            body = MaintainRequest(tiers=[t.name for t in self.tiers.opened()])
            self.hand_over([WriteItem(uuid7(), MAINTAIN, body, internal=True)], now_ms())
        if time.monotonic() - self._last_prune < _PRUNE_EVERY_S:
            return
        self._last_prune = time.monotonic()
        self.prune(now_ms())

    def prune(self, now: int) -> None:
        """Forget applied request ids older than the idempotency window, in every open tier."""
        cutoff = now - IDEMPOTENCY_WINDOW_MS
        with self.held():
            for tier in self.tiers.opened():
                try:
                    tier.run(
                        "?[request_id] := *applied_requests{request_id, applied_at}, applied_at < $cutoff "
                        ":rm applied_requests {request_id}",
                        {"cutoff": cutoff},
                    )
                except StorageError as exc:
                    log.warning("pruning applied request ids failed: %s", exc)
