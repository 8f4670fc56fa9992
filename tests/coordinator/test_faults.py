"""Storage faults: the probe asks the file system, and a tier's state is logged when it changes, not per batch."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from coordinator.errors import DiskFault
from coordinator.store.faults import Faults, probe
from protocol.errors import ErrorCode


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
    with caplog.at_level(logging.INFO, logger="coordinator.store.faults"):
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
