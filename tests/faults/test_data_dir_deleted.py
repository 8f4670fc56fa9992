"""A tier's directory deleted under a running coordinator, with writes going on.

RocksDB keeps writing to the files it has open, deleted or not: without a check, commits would succeed and be
acked, and be gone at the next start. The writer looks before each commit, so every write sent after the
deletion is refused with `storage_io`, said within 2 s, in one log line; ping shows the tier degraded."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable

from groove.client import StorageIO
from tests.faults.load import WriteLoad
from tests.helpers import RunningCoordinator, run_groove, wait_for


def test_writes_to_a_deleted_tier_are_refused_not_acked_and_lost(
    coordinator_factory: Callable[..., RunningCoordinator],
) -> None:
    coordinator = coordinator_factory()
    with WriteLoad(coordinator.endpoint) as load:
        shutil.rmtree(coordinator.data_dir / "user")
        deleted = time.monotonic()
        wait_for(lambda: any(isinstance(got, StorageIO) for _, _, got in load.calls), "a write refused", timeout=10)
    calls = load.calls
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
