"""What a failing test's worker held when it failed, and which tests left file descriptors open.

A run once failed nine tests on one pytest-xdist worker, each a client waiting past its deadline on loopback, and
nothing in the failures said why. So each failure now carries the worker's state (its open file descriptors by
kind, ZeroMQ's among them as eventfds and sockets, and its threads), and the run's summary says, worker by
worker, how many descriptors it held at its start and at its end and which tests left the most behind: a worker
that leaks runs out of them, and then every socket it opens fails alike.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

_FDS = Path("/proc/self/fd")
_SHOWN = 5  # the tests that left the most descriptors open, in the summary
_started = {"fds": 0}
_left: Counter[str] = Counter()  # test id -> descriptors it left open
_lines: list[str] = []  # the summary's, one per worker


def _kind(target: str) -> str:
    """socket:[123] -> socket, anon_inode:[eventfd] -> eventfd (ZeroMQ's mailboxes), a path -> file."""
    if target.startswith("anon_inode:"):
        return target.removeprefix("anon_inode:").strip("[]")
    return target.split(":[", maxsplit=1)[0] if ":[" in target else "file"


def _kinds() -> Counter[str]:
    """This process's open file descriptors by kind."""
    kinds: Counter[str] = Counter()
    for fd in os.listdir(_FDS):
        try:
            kinds[_kind(os.readlink(_FDS / fd))] += 1
        except OSError:  # closed meanwhile (the listing's own, say)
            continue
    return kinds


def _count() -> int:
    return len(os.listdir(_FDS))


def pytest_sessionstart(session: pytest.Session) -> None:
    _started["fds"] = _count()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    before = _count()
    yield
    if (grown := _count() - before) > 0:
        _left[item.nodeid] += grown


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Generator[None, object, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    if report.failed:
        kinds = ", ".join(f"{kind} {n}" for kind, n in _kinds().most_common(8))
        threads = ", ".join(sorted(t.name for t in threading.enumerate()))
        state = f"{_count()} open descriptors (at its start {_started['fds']}): {kinds}\nthreads: {threads}"
        report.sections.append(("worker state", state))


def pytest_sessionfinish(session: pytest.Session) -> None:
    line = f"{_started['fds']} at its start, {_count()} at its end; most left by: " + ", ".join(
        f"{nodeid} +{n}" for nodeid, n in _left.most_common(_SHOWN)
    )
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: the controller prints it
        workeroutput["descriptors"] = line
    elif not _lines:  # no worker reported: this process ran the tests
        _lines.append(f"descriptors: {line}")


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist's controller, as a worker finishes: what it said of its descriptors."""
    said = getattr(node, "workeroutput", {}).get("descriptors")
    if said is not None:
        _lines.append(f"descriptors of {node.gateway.id}: {said}")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for line in sorted(_lines):
        terminalreporter.write_line(line)
