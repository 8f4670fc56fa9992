"""The supervised processes' parts: the start-up sweep of link directories left by killed coordinators (with another
coordinator sweeping too), and restarting a child that dies."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import psutil
import pytest

from coordinator import procs


def test_a_directory_another_start_swept_first_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    raced = tmp_path / "groove-link-999999991-aaaa"  # its coordinator is gone; another start removes it meanwhile
    left = tmp_path / "groove-link-999999992-bbbb"  # gone too, and still there to sweep
    for path in (raced, left):
        path.mkdir()

    def gone_and_swept(pid: int) -> bool:
        shutil.rmtree(raced, ignore_errors=True)
        return False

    monkeypatch.setattr(psutil, "pid_exists", gone_and_swept)
    procs.sweep()  # raised FileNotFoundError before: two coordinators starting at once
    assert not left.exists()
