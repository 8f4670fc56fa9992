"""The supervised processes' parts: the start-up sweep of link directories left by killed coordinators (with another
coordinator sweeping too), and restarting a child that dies."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import psutil
import pytest

from groove.coordinator import procs
from groove.coordinator.errors import ConfigError


def test_a_directory_another_start_swept_first_is_skipped(short_tmpdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(short_tmpdir))
    raced = short_tmpdir / "groove-link-999999991-aaaa"  # its coordinator is gone; another start removes it meanwhile
    left = short_tmpdir / "groove-link-999999992-bbbb"  # gone too, and still there to sweep
    for path in (raced, left):
        path.mkdir()

    def gone_and_swept(pid: int) -> bool:
        shutil.rmtree(raced, ignore_errors=True)
        return False

    monkeypatch.setattr(psutil, "pid_exists", gone_and_swept)
    procs.sweep()  # raised FileNotFoundError before: two coordinators starting at once
    assert not left.exists()


def _exiting(status: int) -> procs.Child:
    return procs.Child("child", [sys.executable, "-c", f"raise SystemExit({status})"])


def test_a_child_that_dies_is_started_again_at_once_then_after_a_growing_pause() -> None:
    child = _exiting(3)
    child.start()
    assert child.proc is not None
    child.proc.wait(30)
    assert not child.alive()
    assert child.exited() == 3
    assert child.due(child.started)  # the first restart: at once
    child.restart()
    assert child.proc.wait(30) == 3
    assert (child.restarts, child.last_exit) == (1, 3)
    # it died again straight after its start: the next restart waits RESTART_BACKOFF_S[1]
    assert not child.due(child.started + procs.RESTART_BACKOFF_S[1] / 2)
    assert child.due(child.started + procs.RESTART_BACKOFF_S[1])
    report = child.report()
    assert (report["name"], report["alive"], report["restarts"], report["last_exit"], report["up_s"]) == (
        "child",
        False,
        1,
        3,
        0.0,
    )


def test_stopping_a_child_ends_it_and_a_live_one_is_never_due() -> None:
    child = procs.Child("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"])
    child.start()
    assert child.alive()
    assert not child.due(child.started + 3600)
    child.stop(10)
    assert not child.alive()
    assert child.exited() == -signal.SIGTERM


def test_a_temp_dir_too_long_for_an_ipc_path_puts_the_links_in_tmp_or_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    long = "/tmp/" + "x" * 80  # with a link directory and an endpoint inside: past the 107 bytes of a socket path
    monkeypatch.setattr(tempfile, "tempdir", long)
    assert procs.link_base() == Path("/tmp")
    monkeypatch.setattr(tempfile, "tempdir", "/tmp/short")
    assert procs.link_base() == Path("/tmp/short")
    monkeypatch.setattr(tempfile, "tempdir", long)
    monkeypatch.setattr(os, "access", lambda path, mode: False)  # /tmp unwritable too
    with pytest.raises(ConfigError, match="TMPDIR"):
        procs.link_base()
