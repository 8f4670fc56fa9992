"""The supervised processes' parts: the start-up sweep of link directories left by killed coordinators (with another
coordinator sweeping too), and restarting a child that dies."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
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


_FORKING = """
import json, os, subprocess, sys, threading, time
from pathlib import Path
from groove.coordinator import procs

out = Path(sys.argv[1])
seen = {}

def names():  # what the forked child sees: its own name, and the environment it was given
    out.write_text(json.dumps([Path("/proc/self/comm").read_text().strip(), os.environ.get("GROOVE_T")]))
    raise SystemExit(5)

child = procs.Child("test", [sys.executable, "-c", "import sys; sys.exit(3)"], env={"GROOVE_T": "given"})
child.fork = names
child.start()
seen["forked"] = isinstance(child.proc, procs.Forked)
seen["status"] = child.proc.wait(10)
seen["named"] = json.loads(out.read_text())

def fails():
    raise RuntimeError("the target failed")

seen["raised"] = procs.Forked("test", fails, {}).wait(10)
seen["exit_text"] = procs.Forked("test", lambda: sys.exit("the target gave up"), {}).wait(10)
sleeper = procs.Forked("test", lambda: time.sleep(30), {})
try:
    sleeper.wait(0.05)
except subprocess.TimeoutExpired:
    seen["timed_out"] = True
sleeper.terminate()
seen["terminated"] = sleeper.wait(10)
sleeper.kill()  # once it has ended: nothing, not an error (its pid may be another process's by now)
stolen = procs.Forked("test", lambda: None, {})
os.waitpid(stolen.pid, 0)  # reaped by something else
seen["reaped_elsewhere"] = stolen.poll()

threading.Thread(target=time.sleep, args=(2,), daemon=True).start()
child.start()  # with a second thread running: started from its command line instead
seen["with_a_thread"] = [isinstance(child.proc, procs.Forked), child.proc.wait(10)]
print(json.dumps(seen))
"""


def test_a_child_is_forked_only_while_one_thread_runs_and_its_status_name_and_environment_are_its_own(
    tmp_path: Path,
) -> None:
    # in a process of its own: the test process runs pytest's threads, and a fork beside them is what is refused
    argv = [sys.executable, "-c", _FORKING, str(tmp_path / "seen.json")]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert seen["forked"] is True
    assert seen["status"] == 5  # its SystemExit's code
    assert seen["named"] == ["groove-test", "given"]
    assert seen["raised"] == 1
    assert seen["exit_text"] == 1
    assert "the target gave up" in run.stderr  # printed, as the interpreter prints it
    assert "RuntimeError: the target failed" in run.stderr  # its traceback, on the stderr it shares
    assert seen["timed_out"] is True
    assert seen["terminated"] == -signal.SIGTERM
    assert seen["reaped_elsewhere"] == 255  # ended, its status unknown
    assert seen["with_a_thread"] == [False, 3]
