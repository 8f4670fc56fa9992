"""A tier's directory deleted under a running coordinator, with writes going on.

RocksDB keeps writing to the files it has open, deleted or not: without a check, commits would succeed and be
acked, and be gone at the next start. The writer looks before each commit, so every write sent after the
deletion is refused with `storage_io`, said within 2 s, in one log line; ping shows the tier degraded."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable

from agents import GrooveClient, GrooveError, StorageIO
from tests.helpers import RunningCoordinator, learning, run_groove, wait_for


def test_writes_to_a_deleted_tier_are_refused_not_acked_and_lost(
    coordinator_factory: Callable[..., RunningCoordinator],
) -> None:
    coordinator = coordinator_factory()
    calls: list[tuple[float, float, list[str] | GrooveError]] = []  # (sent, answered, acked ids or the error)
    stop = threading.Event()

    def write() -> None:  # the load: small writes back to back
        with GrooveClient(coordinator.endpoint, timeout=10) as client:
            n = 0
            while not stop.is_set():
                sent = time.monotonic()
                try:
                    got: list[str] | GrooveError = client.put_learnings([learning(n=n)]).ids
                except GrooveError as exc:
                    got = exc
                calls.append((sent, time.monotonic(), got))
                n += 1

    writing = threading.Thread(target=write)
    writing.start()
    try:
        wait_for(lambda: len(calls) > 20, "the load going")
        shutil.rmtree(coordinator.data_dir / "user")
        deleted = time.monotonic()
        wait_for(lambda: any(isinstance(got, StorageIO) for _, _, got in calls), "a write refused", timeout=10)
    finally:
        stop.set()
        writing.join()
    first = next(answered for _, answered, got in calls if isinstance(got, StorageIO))
    assert first - deleted < 2.0
    after = [got for sent, _, got in calls if sent > deleted]
    assert after
    assert all(isinstance(got, StorageIO) for got in after)  # nothing sent after the deletion was acked
    refusal = after[0]
    assert isinstance(refusal, StorageIO)
    assert "tier 'user': its directory was deleted under the running coordinator" in refusal.message

    ping = run_groove("--endpoint", coordinator.endpoint, "ping")
    assert "degraded: tier user refuses writes since" in ping.stdout
    log = coordinator.log()
    assert log.count("tier user: storage_io: its directory was deleted") == 1
    assert "Traceback" not in log
