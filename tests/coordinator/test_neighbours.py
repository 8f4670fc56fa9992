"""The near-duplicate checker hands its relations to the write queue exactly once, however full the queue is."""

from __future__ import annotations

import threading

from groove.coordinator.search.neighbours import NearDuplicates


def test_a_full_write_queue_never_makes_a_pair_go_twice() -> None:
    near = NearDuplicates({})
    pairs = [("user", f"new{i}", f"old{i}", 0.95) for i in range(10)]
    near.check = lambda batch: list(pairs)  # type: ignore[method-assign]
    queued: list[tuple[str, str, str, float]] = []
    stopping = threading.Event()

    def relate(offered: list[tuple[str, str, str, float]]) -> int:
        taken = offered[:3]  # the queue has room for three at a time
        queued.extend(taken)
        if len(queued) >= len(pairs):
            stopping.set()
        return len(taken)

    near.note("user", ["x"])
    thread = threading.Thread(target=near.run, args=(relate, stopping), daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive()
    assert queued == pairs  # each once, in order
    assert near.related == len(pairs)
