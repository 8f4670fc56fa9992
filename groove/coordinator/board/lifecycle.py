"""A task's lifecycle as one table: the states a task can be in (`protocol.constants.TaskStatus`) and, for each,
the states it may move to. The board (`state.py`) moves a task only along it, and names states only from here.

    pending      waiting for its dependencies to complete, then for a claim
    assigned     claimed: leased to an agent, who may start it, heartbeat it, complete, fail or release it
    in_progress  started by its holder (held as `assigned` is)
    blocked      a task it depends on failed or was cancelled: it can only be cancelled
    review       completed by its holder, waiting for a reviewer (a memory's task that needs review)
    completed, failed, cancelled: finished, for good

A held task goes back to `pending` when its holder releases it, fails it with a retry left, or lets its lease
lapse (or is gone); a task in review, when the reviewer asks for rework.
"""

from __future__ import annotations

from typing import Final

from groove.protocol import constants as C

PENDING, ASSIGNED, IN_PROGRESS, BLOCKED, REVIEW, COMPLETED, FAILED, CANCELLED = C.TASK_STATUSES

_AFTER_HELD = (IN_PROGRESS, REVIEW, COMPLETED, PENDING, FAILED, CANCELLED)
MOVES: Final[dict[str, frozenset[str]]] = {
    PENDING: frozenset({ASSIGNED, BLOCKED, CANCELLED}),
    ASSIGNED: frozenset(_AFTER_HELD),
    IN_PROGRESS: frozenset(_AFTER_HELD),  # a second start leaves it in progress
    BLOCKED: frozenset({CANCELLED}),
    REVIEW: frozenset({COMPLETED, PENDING, FAILED, CANCELLED}),
    COMPLETED: frozenset(),
    FAILED: frozenset(),
    CANCELLED: frozenset(),
}
FIRST: Final = frozenset({PENDING, BLOCKED})  # what a task added is: blocked if a dependency failed already
HELD: Final = frozenset({ASSIGNED, IN_PROGRESS})  # leased to an agent
FINISHED: Final = frozenset(state for state, moves in MOVES.items() if not moves)
ENDS_DEPENDENTS: Final = frozenset({FAILED, CANCELLED})  # a dependency in these blocks the tasks waiting on it


def move(was: str | None, to: str) -> str:
    """`to`, once checked against the table (`was` None: a task being added); AssertionError off it, which is a
    defect of the board's, never a client's request (those are refused before any move)."""
    allowed = FIRST if was is None else MOVES[was]
    assert to in allowed, f"a task cannot go from {was} to {to}"
    return to
