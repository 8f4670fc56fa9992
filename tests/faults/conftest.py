"""Fixtures of the fault tests."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from benchmarks.disks import Ext4
from groove.cli.processes import start_coordinator

Serve = Callable[..., tuple[subprocess.Popen[bytes], str]]


@pytest.fixture
def ext4(tmp_path: Path) -> Iterator[Ext4]:
    """A 64 MiB ext4 file system on a loop device (the tests run as root: loop devices and mounts are a real
    part, so a refusal fails the test)."""
    disk = Ext4.make(tmp_path)
    try:
        yield disk
    finally:
        disk.release()


@pytest.fixture
def serve_on(tmp_path: Path) -> Iterator[Serve]:
    """`serve_on(data_dir, *serve_args)`: `groove serve --embedder none` on a data dir, logging to
    TMP/coordinator.log, off the disk a test breaks, where an operator's log is too; returns the process and its
    endpoint. Every one started is killed at teardown, a stopped one too."""
    started: list[subprocess.Popen[bytes]] = []

    def serve(data_dir: Path, *args: str) -> tuple[subprocess.Popen[bytes], str]:
        data_dir.mkdir(exist_ok=True)
        proc, endpoint = start_coordinator(
            data_dir, ["--embedder", "none", *args], log_file=tmp_path / "coordinator.log"
        )
        started.append(proc)
        return proc, endpoint

    yield serve
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
