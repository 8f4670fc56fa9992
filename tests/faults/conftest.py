"""Fixtures of the fault tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.disks import Ext4


@pytest.fixture
def ext4(tmp_path: Path) -> Iterator[Ext4]:
    """A 64 MiB ext4 file system on a loop device (the tests run as root: loop devices and mounts are a real
    part, so a refusal fails the test)."""
    disk = Ext4.make(tmp_path)
    try:
        yield disk
    finally:
        disk.release()
