"""A full disk, for real: the data dir on a small tmpfs filled by writes under load, then grown.

The client, the CLI and the log say `storage_full` within 2 s, for the full tier's reads too; `stats` goes on;
once space returns writes resume without a restart; and every acked write is stored once, nothing unacked."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from groove.client import GrooveClient, StorageFull
from tests.helpers import RunningCoordinator, run_groove, wait_for

_SIZE = "6m"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of a few MiB (the tests run as root: mounting is a real part, so a refusal fails the test)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={_SIZE}", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def batch(n: int) -> list[dict[str, object]]:
    """Fifty learnings of about 1.7 KB each: the disk fills in a few hundred requests."""
    return [
        {"scope": "global", "category": "solution", "description": f"filler {n}-{i} " + "x" * 800, "insight": "y" * 800}
        for i in range(50)
    ]


def test_a_full_disk_is_said_within_2_s_reads_go_on_and_writes_resume_when_space_returns(
    small_disk: Path, coordinator_factory: Callable[..., RunningCoordinator]
) -> None:
    coordinator = coordinator_factory(data_dir=small_disk / "data")
    acked: list[str] = []
    reader_errors: list[BaseException] = []
    stop_reading = threading.Event()

    def read_meanwhile() -> None:  # the load beside the writes: stats and searches through the fault
        with GrooveClient(coordinator.endpoint, timeout=10) as reader:
            while not stop_reading.is_set():
                try:
                    reader.stats()
                    reader.search("filler", limit=3, mode="keyword")
                except Exception as exc:  # any failure is the finding
                    reader_errors.append(exc)
                time.sleep(0.05)

    reading = threading.Thread(target=read_meanwhile)
    reading.start()
    client = GrooveClient(coordinator.endpoint, timeout=30)
    try:
        for n in range(10_000):
            started = time.monotonic()
            try:
                acked += client.put_learnings(batch(n)).ids
            except StorageFull as exc:
                took = time.monotonic() - started
                full = exc
                break
        else:
            pytest.fail("the disk never filled")
        assert took < 2.0, f"storage_full took {took:.1f} s to reach the client"
        assert "No space left on device" in full.message
        assert "'user'" in full.message  # the tier
        assert len(acked) > 100

        # the CLI says so in one line, and ping and stats show the degraded tier
        learn = run_groove("--endpoint", coordinator.endpoint, "learn", "one more")
        assert learn.returncode == 1
        assert learn.stderr.strip().startswith("groove: error: storage_full: tier 'user': No space left on device")
        ping = run_groove("--endpoint", coordinator.endpoint, "ping")
        assert ping.returncode == 0
        assert "degraded: tier user refuses writes since" in ping.stdout
        fault = client.stats().storage_faults["user"]
        assert fault.code == "storage_full"
        assert fault.refused >= 2

        # a read of the full tier is told the same, at once (RocksDB refuses its transactions until it resumes)
        started = time.monotonic()
        with pytest.raises(StorageFull, match="No space left on device"):
            client.get(acked[0])
        assert time.monotonic() - started < 2.0

        # space returns: writes resume by themselves, no restart
        subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)

        def resumed() -> bool:
            try:
                acked.extend(client.put_learnings(batch(-1)[:1]).ids)
            except StorageFull:
                return False
            return True

        wait_for(resumed, "writes resumed after space returned", timeout=30, every=0.2)
        assert client.ping().storage_faults == {}
    finally:
        stop_reading.set()
        reading.join()
    assert not [e for e in reader_errors if not isinstance(e, StorageFull)]  # stats never failed; a search may

    # every acked write stored once, nothing unacked stored
    stored = [x.id for x in client.iter_learnings()]
    assert len(stored) == len(set(stored))
    assert set(stored) == set(acked)
    client.close()

    # the log: one line when the tier faulted, one when it recovered; no traceback
    log = coordinator.log()
    assert log.count("tier user: storage_full: No space left on device") == 1
    assert log.count("tier user: writable again") == 1
    assert "Traceback" not in log
