"""The processes a coordinator starts beside itself (its front, its embedding workers): start, watch, restart,
stop, report. One place for what each of them needs, so that neither copies the other's launch logic:

- a private directory for their ipc endpoints, that only this user can enter and that the next start sweeps
  when a kill -9 left it behind;
- a child killed the moment the coordinator dies (Linux), so a coordinator restarted after a kill -9 finds
  its port free and no orphan holding a model;
- a record of each child's restarts and how its last run ended, for `stats`.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from groove.coordinator.errors import ConfigError

log = logging.getLogger(__name__)

_PREFIX = "groove-link-"  # then the coordinator's pid: a kill -9 leaves the directory, the next start sweeps it
RESTART_BACKOFF_S = (0.0, 0.5, 1.0, 2.0, 5.0)  # before the 1st, 2nd ... restart in a row; the last one repeats
_STEADY_S = 30.0  # a child that ran this long has its backoff reset: it was not crashing at start
_WAIT_POLL_S = 0.01  # how often `Forked.wait` looks
_STATUS_UNKNOWN = 255  # the exit status of a forked child that something else reaped
_PR_SET_PDEATHSIG, _PR_SET_NAME = 1, 15  # prctl(2) options
_IPC_PATH_MAX = 107  # bytes of a unix socket's path (sockaddr_un.sun_path, less its NUL)
# what a link directory adds to the temp dir's path: "/groove-link-" a pid, "-" mkdtemp's 8 characters, and the
# longest endpoint inside ("/front-" and a run's number, "/embed")
_LINK_NAME_CHARS = len(f"/{_PREFIX}4194304-12345678/front-99999")


def link_base() -> Path:
    """Where the link directories go: the temp dir, or /tmp where the temp dir's path is so long that an ipc
    endpoint inside would pass the system's limit (ZeroMQ refuses to bind it)."""
    base = Path(tempfile.gettempdir())
    if len(str(base)) + _LINK_NAME_CHARS <= _IPC_PATH_MAX:
        return base
    fallback = Path("/tmp")
    if fallback.is_dir() and os.access(fallback, os.W_OK | os.X_OK):
        return fallback
    raise ConfigError(
        f"the temp dir {base} is too long for the coordinator's ipc sockets (at most "
        f"{_IPC_PATH_MAX - _LINK_NAME_CHARS} characters) and /tmp cannot be written: set TMPDIR to a shorter one"
    )


def sweep() -> None:
    """Remove the link directories of coordinators that are gone (killed before they could)."""
    import psutil  # noqa: PLC0415 - only the coordinator sweeps; its children import this module too, and start fast

    for path in link_base().glob(f"{_PREFIX}*-*"):
        pid = path.name[len(_PREFIX) :].split("-", 1)[0]
        if not pid.isdigit() or psutil.pid_exists(int(pid)):
            continue
        try:
            mine = path.stat().st_uid == os.getuid()
        except FileNotFoundError:  # another coordinator starting at the same time swept it first
            continue
        if mine:
            shutil.rmtree(path, ignore_errors=True)


def private_dir() -> Path:
    """A new directory (mode 0700) for this coordinator's ipc endpoints, after sweeping dead ones'."""
    sweep()
    return Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=link_base()))


def _prctl(option: int, arg: int | bytes) -> None:
    """Linux's prctl(2) on this process; nothing elsewhere."""
    if sys.platform.startswith("linux"):
        import ctypes  # noqa: PLC0415 - Linux only

        ctypes.CDLL(None, use_errno=True).prctl(option, arg, 0, 0, 0)


def die_with_parent(parent: int) -> None:
    """In a child: be killed the moment the coordinator dies (Linux), not at the child's next look at its
    parent (which still ends it elsewhere). Exits at once if the parent is already gone."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the line above took effect
        sys.exit(1)


def can_fork() -> bool:
    """Whether a child may be forked from this process rather than started afresh: only while it runs one
    thread (a fork copies no other thread, so a lock one of them held would stay held in the child for ever)."""
    return hasattr(os, "fork") and threading.active_count() == 1


class Forked:
    """A child forked from this process that runs `target` and exits, with the part of `subprocess.Popen` that
    `Child` uses. It starts with every module this process imported already: no interpreter start, no imports
    (measured: a front started afresh took 0.43 CPU-s, most of it imports). Only for a start while `can_fork`."""

    def __init__(self, name: str, target: Callable[[], None], env: dict[str, str]) -> None:
        sys.stdout.flush()  # else what is buffered would be written twice, once by each process
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os.environ.update(env)
            _run_forked(name, target)
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped by something else: ended, its status unknown
                self.returncode = _STATUS_UNKNOWN
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"forked {self.pid}", timeout or 0.0)
            time.sleep(_WAIT_POLL_S)
        return code

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def _run_forked(name: str, target: Callable[[], None]) -> NoReturn:
    """In the forked child: run `target`, then exit with its status, never returning into the parent's stack
    (nor running the parent's exit handlers)."""
    code = 1
    try:
        _prctl(_PR_SET_NAME, f"groove-{name}"[:15].encode())  # `ps -o comm`, top: the child's name, not the parent's
        target()
        code = 0
    except SystemExit as exc:  # as the interpreter does: an int is the status, anything else is printed, status 1
        if isinstance(exc.code, int):
            code = exc.code
        elif exc.code is None:
            code = 0
        else:
            print(exc.code, file=sys.stderr)
    except BaseException:  # whatever ended it is said, and the child still exits: it must not return to the caller
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


class Child:
    """One supervised process: its command line, its current run, and how many times it was restarted."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.name = name
        self.argv = argv
        # what `argv` does, run in a forked child instead where given and `can_fork` (a first start, before this
        # process has threads; a restart comes later and starts from `argv`)
        self.fork: Callable[[], None] | None = None
        self.env = env  # set over the coordinator's own environment
        self.proc: subprocess.Popen[bytes] | Forked | None = None
        self.restarts = 0
        self.last_exit: int | None = None  # the status of the run before this one (negative: a signal)
        self.started = 0.0  # monotonic time of the current run's start
        self._crashes_in_a_row = 0

    def start(self) -> None:
        """Start (or start again) the process: forked to run `fork` where it is given and `can_fork`, else from
        `argv`."""
        if self.fork is not None and can_fork():
            self.proc = Forked(self.name, self.fork, self.env or {})
        else:
            self.proc = subprocess.Popen(self.argv, env={**os.environ, **self.env} if self.env else None)
        self.started = time.monotonic()

    def alive(self) -> bool:
        """Whether the current run is still going."""
        return self.proc is not None and self.proc.poll() is None

    def exited(self) -> int | None:
        """The exit status of the current run, None while it runs (or before it started)."""
        return None if self.proc is None else self.proc.poll()

    def due(self, now: float) -> bool:
        """Whether a dead child may be started again now: at once the first time, then after a growing pause,
        so a child that dies at every start does not spin."""
        if self.alive():
            return False
        wait = RESTART_BACKOFF_S[min(self._crashes_in_a_row, len(RESTART_BACKOFF_S) - 1)]
        return now - self.started >= wait  # counted from the start of the run that died

    def restart(self) -> None:
        """Start a dead child again, counting it."""
        self.last_exit = self.exited()
        ran = time.monotonic() - self.started
        self._crashes_in_a_row = 0 if ran >= _STEADY_S else self._crashes_in_a_row + 1
        log.warning(
            "%s exited (status %s) after %.1f s; restarting it (restart %d)",
            self.name,
            self.last_exit,
            ran,
            self.restarts + 1,
        )
        self.restarts += 1
        self.start()

    def stop(self, timeout: float) -> None:
        """SIGTERM, then SIGKILL after `timeout` seconds; waits for the end."""
        if self.proc is None or not self.alive():
            return
        self.proc.terminate()
        self.wait(timeout)

    def wait(self, timeout: float) -> None:
        """Wait for the current run to end (told to already), SIGKILL after `timeout` seconds."""
        if self.proc is None:
            return
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def report(self) -> dict[str, Any]:
        """For `stats`: pid, whether it runs, restarts, the last run's exit status, seconds since its start."""
        return {
            "name": self.name,
            "pid": self.proc.pid if self.proc is not None else None,
            "alive": self.alive(),
            "restarts": self.restarts,
            "last_exit": self.last_exit,
            "up_s": round(time.monotonic() - self.started, 1) if self.alive() else 0.0,
        }
