"""Storage faults: the probe asks the file system, and a tier's state is logged when it changes, not per batch."""

from __future__ import annotations

import errno
import logging
from pathlib import Path

import pytest

from groove.coordinator.errors import DiskFault
from groove.coordinator.store.faults import Faults, probe
from groove.coordinator.store.tiers import Tier
from groove.coordinator.write.durability import Syncer
from groove.protocol.errors import ErrorCode
from groove.protocol.ids import uuid7
from tests.coordinator.harness import Harness


def test_a_writable_directory_with_room_is_no_fault(tmp_path: Path) -> None:
    assert probe(tmp_path) is None
    assert list(tmp_path.iterdir()) == []  # the probe file is gone


def test_a_deleted_directory_is_an_io_fault_in_the_operating_systems_words(tmp_path: Path) -> None:
    gone = tmp_path / "tier"
    code, message = probe(gone) or (None, "")
    assert code == ErrorCode.STORAGE_IO
    assert message == f"No such file or directory ({gone})"


def test_a_fault_is_logged_once_counted_and_cleared_with_one_line(caplog: pytest.LogCaptureFixture) -> None:
    faults = Faults()
    faults.committed("user")  # no fault: nothing said
    with caplog.at_level(logging.INFO, logger="groove.coordinator.store.faults"):
        for _ in range(3):
            refusal = faults.failed("user", ErrorCode.STORAGE_FULL, "No space left on device (/d)", 2)
        assert isinstance(refusal, DiskFault)
        assert (refusal.code, refusal.message) == (ErrorCode.STORAGE_FULL, "tier 'user': No space left on device (/d)")
        assert faults.snapshot()["user"]["refused"] == 6
        assert faults.refusal("user") is not None
        assert faults.refusal("project:/x") is None
        faults.committed("user")
    assert [r.levelname for r in caplog.records] == ["ERROR", "WARNING"]
    assert "6 writes refused" in caplog.records[1].getMessage()
    assert faults.snapshot() == {}
    assert faults.refusal("user") is None


class FailingSync(Syncer):
    """The log syncs of `--durability fsync`, failing the first `failures` times as a dying disk does."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    def sync(self, tiers: list[Tier]) -> None:
        if self.failures:
            self.failures -= 1
            raise OSError(errno.EIO, "Input/output error")
        super().sync(tiers)


def test_a_write_whose_log_sync_failed_is_not_acked_nor_is_its_resend_until_a_sync_succeeds(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.batcher.syncer = FailingSync(failures=2)
    body = {"learnings": [{"scope": "global", "category": "solution", "description": "d", "insight": "i"}]}
    rid = uuid7()
    (first,) = h.run(h.item("learning.put", body, rid))
    assert isinstance(first, DiskFault)  # committed, but not known to be on disk: refused, not acked
    assert first.code == ErrorCode.STORAGE_IO
    assert first.message == (
        "tier 'user': its write-ahead log could not be synced (Input/output error): "
        "the write is not known to be on disk"
    )
    (resent,) = h.run(h.item("learning.put", body, rid))  # its stored reply is recalled, but the sync fails again
    assert isinstance(resent, DiskFault)
    (synced,) = h.run(h.item("learning.put", body, rid))
    assert isinstance(synced, dict)  # the first reply, now that the log is on disk
    assert len(synced["ids"]) == 1
    h.batcher.syncer.close()
