"""Damaged files at start-up: a truncated last write-ahead log, a garbage byte in an SST file, a missing CURRENT.

Start-up recovers what the write-ahead log allows and says what it dropped, or leaves the damaged tier closed
with one log line that says what to do (restore it from a backup), while the other tiers serve. It never
serves silently wrong data: what is answered is what was acked."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from groove.client import GrooveClient
from groove.client.errors import TierUnavailable
from groove.coordinator.store.tiers import DB_DIR
from tests.helpers import RunningCoordinator, learning, run_groove

_BATCHES = 40
_PER_BATCH = 50


def fill(client: GrooveClient) -> tuple[list[list[str]], list[str]]:
    """The user tier's learnings, acked batch by batch, and one project tier's (which no damage touches)."""
    batches = [
        client.put_learnings([learning(n=b * _PER_BATCH + i) for i in range(_PER_BATCH)]).ids for b in range(_BATCHES)
    ]
    elsewhere = client.put_learnings([learning("project:/srv/intact", i) for i in range(5)]).ids
    return batches, elsewhere


def rocksdb_files(running: RunningCoordinator) -> Path:
    return running.data_dir / "user" / DB_DIR / "data"


def test_a_truncated_write_ahead_log_recovers_to_its_last_whole_record_and_says_what_it_dropped(
    coordinator: RunningCoordinator, client_factory: Callable[..., GrooveClient]
) -> None:
    batches, elsewhere = fill(client_factory(coordinator.endpoint))
    coordinator.kill()  # nothing flushed: every learning is in the write-ahead log alone
    (wal,) = sorted(rocksdb_files(coordinator).glob("*.log"))
    with wal.open("r+b") as f:
        f.truncate(wal.stat().st_size - 5000)  # the tail a disk lost: part of the last batch's record
    coordinator.restart()
    client = client_factory(coordinator.endpoint)

    stored = {x.id for x in client.iter_learnings(tier="user")}
    kept = [batch for batch in batches if set(batch) <= stored]
    assert 0 < len(batches) - len(kept) <= 2  # the damaged tail's batches, no more
    assert kept == batches[: len(kept)]  # a point in time: every batch before the damage, whole
    assert stored == {lid for batch in kept for lid in batch}  # nothing half-applied, nothing invented
    assert {x.id for x in client.iter_learnings(tier="project:/srv/intact")} == set(elsewhere)
    log = coordinator.log()
    assert log.count("tier user: recovery dropped") == 1
    assert "writes acked in them are lost" in log
    assert "Traceback" not in log
    client.put_learnings([learning(n=10**6)])  # and the tier takes writes again


@pytest.mark.parametrize("damage", ["garbage byte in an SST file", "missing CURRENT"])
def test_a_damaged_tier_is_left_closed_with_the_fix_said_and_a_backup_restores_every_acked_write(
    coordinator: RunningCoordinator, client_factory: Callable[..., GrooveClient], tmp_path: Path, damage: str
) -> None:
    batches, elsewhere = fill(client_factory(coordinator.endpoint))
    backup = tmp_path / "backup"
    assert run_groove("--endpoint", coordinator.endpoint, "backup", str(backup)).returncode == 0
    assert coordinator.stop() == 0
    coordinator.restart()  # the recovery at open writes the log's learnings to an SST file
    assert coordinator.stop() == 0
    files = rocksdb_files(coordinator)
    if damage == "missing CURRENT":
        (files / "CURRENT").unlink()
    else:
        (sst,) = sorted(files.glob("*.sst"))
        with sst.open("r+b") as f:  # one byte of the first data block, which every open reads
            f.seek(500)
            byte = f.read(1)
            f.seek(500)
            f.write(bytes([byte[0] ^ 0xFF]))
    coordinator.restart()
    client = client_factory(coordinator.endpoint)

    with pytest.raises(TierUnavailable, match="restore the tier from a backup") as refused:
        client.list_learnings(tier="user")
    assert ("Corruption" if damage != "missing CURRENT" else "CURRENT") in refused.value.message
    with pytest.raises(TierUnavailable):
        client.put_learnings([learning(n=10**6)])
    assert {x.id for x in client.iter_learnings()} == set(elsewhere)  # the other tiers serve, unchanged
    ping = run_groove("--endpoint", coordinator.endpoint, "ping")
    assert "degraded: tier user is unavailable:" in ping.stdout
    assert [u.tier for u in client.stats().tiers_unavailable] == ["user"]
    log = coordinator.log()
    assert log.count("tier user is unavailable") == 1
    assert "Traceback" not in log
    assert coordinator.stop() == 0

    # what the refusal says to do: a new data dir from the backup has every acked write
    restored = tmp_path / "restored"
    assert run_groove("restore", str(backup), "--data-dir", str(restored)).returncode == 0
    coordinator.data_dir = restored
    coordinator.restart()
    client = client_factory(coordinator.endpoint)
    assert {x.id for x in client.iter_learnings()} == {lid for batch in batches for lid in batch} | set(elsewhere)
