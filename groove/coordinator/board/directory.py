"""Every tier's board, and which tier holds each working memory and task (the writer thread's, but for `counts`).

Board operations name a memory or a task, not a tier, so the first one loads the boards of every tier on
disk; from then on a tier's board is loaded when it is first needed (a tier made later starts empty).
"""

from __future__ import annotations

from groove.coordinator.board.state import Board
from groove.coordinator.errors import Rejected
from groove.coordinator.store.tiers import Tier
from groove.coordinator.store.tierset import TierSet
from groove.protocol.errors import ErrorCode


class Boards:
    """The boards of a data directory's tiers."""

    def __init__(self, tiers: TierSet) -> None:
        self.tiers = tiers
        self._boards: dict[str, Board] = {}
        self._all = False

    def get(self, tier: Tier) -> Board:
        """The tier's board, loaded from its rows the first time."""
        board = self._boards.get(tier.name)
        if board is None:
            board = self._boards[tier.name] = Board.load(tier)
        return board

    def reload(self, tier: Tier) -> None:
        """Rebuild a tier's board from what is stored (after a commit to it failed)."""
        self._boards[tier.name] = Board.load(tier)

    def counts(self, memory_id: str) -> dict[str, int] | None:
        """A memory's tasks by status as last committed, if its tier's board is loaded and it has tasks (a reader
        thread may ask: it reads one published map, which the writer replaces, never changes)."""
        for board in list(self._boards.values()):
            counts = board.published.get(memory_id)
            if counts is not None:
                return counts
        return None

    def loaded(self) -> list[tuple[str, Board]]:
        """The boards loaded so far, by tier name."""
        return list(self._boards.items())

    def _load_all(self) -> None:
        if self._all:
            return
        for tier in self.tiers.open_all():  # an unavailable tier's memories are not found until it opens
            self.get(tier)
        self._all = True

    def every(self) -> list[tuple[Tier, Board]]:
        """Every tier's board (loading those of tiers not loaded yet)."""
        self._load_all()
        return [(self._tier(name), board) for name, board in self._boards.items()]

    def memory_tier(self, memory_id: str) -> Tier:
        """The tier holding working memory `memory_id`; Rejected `not_found` if none does."""
        self._load_all()
        for name, board in self._boards.items():
            if memory_id in board.memories:
                return self._tier(name)
        raise Rejected(ErrorCode.NOT_FOUND, f"no working memory {memory_id}")

    def task_tier(self, task_id: str) -> Tier | None:
        """The tier holding task `task_id`, if any does."""
        self._load_all()
        for name, board in self._boards.items():
            if task_id in board.tasks:
                return self._tier(name)
        return None

    def decision_tier(self, decision_id: str) -> Tier:
        """The tier holding decision `decision_id`; Rejected `not_found` if none does."""
        self._load_all()
        for name, board in self._boards.items():
            if decision_id in board.records.decisions:
                return self._tier(name)
        raise Rejected(ErrorCode.NOT_FOUND, f"no decision {decision_id}")

    def _tier(self, name: str) -> Tier:
        tier = self.tiers.get(name, create=False)
        if tier is None:  # its directory went away under a running coordinator
            raise Rejected(ErrorCode.NOT_FOUND, f"tier {name!r} is gone")
        return tier
