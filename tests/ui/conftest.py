"""The dashboard under test: a real coordinator, a real `groove ui` process, and Debian's Chromium driven by
Playwright. One of each per module (starting Chromium costs a second or two); a page per test.

A failing test leaves a screenshot of its page in `test-artifacts/screenshots/`. With GROOVE_SCREENSHOTS set
to a folder, the tests also save the pictures the dashboard page shows (`make screenshots`).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from groove.cli.processes import start_coordinator
from groove.client import GrooveClient
from groove.swarm.coding import groove_argv
from groove.swarm.fleet import stop_process
from tests.helpers import ROOT, RunningCoordinator, wait_for

CHROMIUM = os.environ.get("GROOVE_CHROMIUM", "/usr/bin/chromium")
# as root, without a sandbox; and no calls home, which this machine's closed network refuses, many at a time
_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TOKEN = "tok-" + "x" * 28
FAILED_SHOTS = ROOT / "test-artifacts" / "screenshots"


@dataclass
class Dashboard:
    """A running `groove ui`: its base URL and process."""

    url: str
    proc: subprocess.Popen[bytes]

    def login(self, page: Page) -> None:
        page.goto(f"{self.url}/login?token={TOKEN}")


def start_dashboard(endpoint: str, log: Path, *extra: str) -> Dashboard:
    """`groove ui` on a free port against `endpoint`, its output in `log`; returns once it printed its URL."""
    with log.open("wb") as out:  # a file, not a pipe: nothing has to keep reading it
        proc = subprocess.Popen(
            groove_argv("--endpoint", endpoint, "ui", "--bind", "127.0.0.1:0", "--token", TOKEN, *extra),
            stdout=out,
            stderr=subprocess.STDOUT,
        )

    def printed() -> re.Match[str] | None:
        assert proc.poll() is None, f"groove ui exited {proc.returncode}: {log.read_text()[-2000:]}"
        return re.search(r"(http://\S+)/login\?token=", log.read_text())

    found = wait_for(printed, "groove ui's URL", timeout=30)
    assert found is not None
    return Dashboard(found.group(1), proc)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert Path(CHROMIUM).exists(), f"no Chromium at {CHROMIUM}: `make` installs Debian's chromium"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=_FLAGS, headless=True)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningCoordinator, Dashboard]]:
    """One coordinator (no model: keyword search) and one dashboard over it, for the module."""
    directory = tmp_path_factory.mktemp("ui-data")
    args = ["--embedder", "none"]
    proc, endpoint = start_coordinator(directory, args, None)
    coordinator = RunningCoordinator(directory, args, proc, endpoint)
    dashboard = start_dashboard(endpoint, directory / "ui.log")
    yield coordinator, dashboard
    stop_process(dashboard.proc, grace=10)
    for running in [*coordinator.history, coordinator.proc]:
        stop_process(running, grace=10)


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    yield opened
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        FAILED_SHOTS.mkdir(parents=True, exist_ok=True)
        opened.screenshot(path=str(FAILED_SHOTS / f"{request.node.name}.png"), full_page=True)
    context.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[Any]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keep each phase's report on the test item, so the `page` fixture knows whether the test failed."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


def shoot(page: Page, name: str) -> None:
    """Save the page for the docs when GROOVE_SCREENSHOTS names a folder."""
    folder = os.environ.get("GROOVE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=False)


@pytest.fixture
def client(shared: tuple[RunningCoordinator, Dashboard]) -> Iterator[GrooveClient]:
    with GrooveClient(shared[0].endpoint, timeout=20.0, attempt_timeout=2.0) as opened:
        yield opened


@pytest.fixture
def dashboard(shared: tuple[RunningCoordinator, Dashboard]) -> Dashboard:
    return shared[1]
