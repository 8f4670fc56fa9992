"""--durability fsync: the write-ahead log is synced before acks, and acked writes survive kill -9."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from groove.client import GrooveClient
from groove.coordinator.write.durability import CONFIRM_FILE, WalSync
from tests.helpers import RunningCoordinator


def test_fsync_mode_syncs_every_batch_before_its_ack_and_survives_kill_9(
    coordinator_factory: Callable[..., RunningCoordinator], client_factory: Callable[..., GrooveClient]
) -> None:
    running = coordinator_factory("--durability", "fsync")
    client = client_factory(running.endpoint)
    ids = [client.learn(f"project:/srv/p{i % 3}", "solution", f"d{i}", "i") for i in range(30)]
    stats = client.stats()
    assert stats.durability == "fsync"
    # one sync per tier a batch committed to: at least one per acked single-learning write here
    assert stats.wal_syncs >= len(ids)
    running.kill()
    running.restart()
    client = client_factory(running.endpoint)
    assert {x.id for x in client.iter_learnings()} == set(ids)


def test_process_mode_does_not_sync(client: GrooveClient) -> None:
    client.learn("global", "solution", "d", "i")
    stats = client.stats()
    assert (stats.durability, stats.wal_syncs) == ("process", 0)


def test_wal_sync_follows_the_log_files_as_rocksdb_rotates_them(tmp_path: Path) -> None:
    data = tmp_path / "db" / "data"
    data.mkdir(parents=True)
    (data / "000004.log").write_bytes(b"a")
    (data / "CURRENT").write_text("x")
    wal = WalSync(tmp_path / "db")
    wal.sync()
    assert list(wal._fds) == ["000004.log"]
    (data / "000009.log").write_bytes(b"b")
    os.remove(data / "000004.log")
    wal.sync()
    assert list(wal._fds) == ["000009.log"]
    assert wal.syncs == 2
    wal.close()
    assert wal._fds == {}


def test_each_wal_sync_is_confirmed_by_a_journal_commit_of_its_own_and_fails_without_one(tmp_path: Path) -> None:
    (tmp_path / "db" / "data").mkdir(parents=True)
    (tmp_path / "db" / "data" / "000004.log").write_bytes(b"a")
    wal = WalSync(tmp_path / "db")
    sizes = []
    for _ in range(3):
        wal.sync()
        sizes.append((tmp_path / CONFIRM_FILE).stat().st_size)
    assert sizes == [8, 16, 8]  # a size change each time: a metadata change the journal must commit
    wal.close()
    other = tmp_path / "other"
    (other / "db" / "data").mkdir(parents=True)
    (other / CONFIRM_FILE).mkdir()  # the confirmation cannot be made: the sync has not happened, as far as acks go
    unconfirmed = WalSync(other / "db")
    with pytest.raises(IsADirectoryError):
        unconfirmed.sync()
    assert unconfirmed.syncs == 0
    unconfirmed.close()
