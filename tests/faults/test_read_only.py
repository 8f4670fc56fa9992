"""A read-only data directory, for real: an ext4 file system on a loop device that goes read-only under load
(`errors=remount-ro`, an error triggered through sysfs, as a failing disk does), then a start on it.

Writes are refused with `storage_io` naming the tier and "Read-only file system" within 2 s, once in the log;
after the file system is checked and mounted again, every write acked (with --durability fsync) is there
once, nothing unacked. A coordinator will not start on a read-only data dir, and says so in one line."""

from __future__ import annotations

import time
from pathlib import Path

from benchmarks.disks import Ext4
from groove.client import GrooveClient, StorageIO
from groove.swarm.fleet import stop_process
from tests.faults.conftest import Serve
from tests.faults.load import WriteLoad
from tests.helpers import learning, run_groove, wait_for

_FSYNC = ("--durability", "fsync")


def test_a_data_dir_gone_read_only_refuses_writes_within_2_s_and_keeps_every_acked_one(
    ext4: Ext4, serve_on: Serve, tmp_path: Path
) -> None:
    log_path = tmp_path / "coordinator.log"
    proc, endpoint = serve_on(ext4.mount / "data", *_FSYNC)
    with WriteLoad(endpoint) as load:
        ext4.fail()
        failed = time.monotonic()
        wait_for(lambda: any(isinstance(got, StorageIO) for _, _, got in load.calls), "a write refused", timeout=10)
        time.sleep(0.3)
    calls = load.calls
    first = next(i for i, (_, _, got) in enumerate(calls) if isinstance(got, StorageIO))
    assert calls[first][1] - failed < 2.0
    assert all(isinstance(got, StorageIO) for _, _, got in calls[first:])  # nothing acked after the first refusal
    refusals = [got for _, _, got in calls[first:] if isinstance(got, StorageIO)]
    assert all("tier 'user': " in r.message for r in refusals)
    # the first may be the log sync's error (EIO: the journal was aborted); the commits after it say read-only
    assert "Read-only file system" in refusals[-1].message
    ping = run_groove("--endpoint", endpoint, "ping")
    assert "degraded: tier user refuses writes since" in ping.stdout

    # the operator's repair: stop, check the file system, mount it again, start
    stopped = stop_process(proc, grace=30)
    log = log_path.read_text()
    assert stopped == 0, log[-3000:]
    assert log.count("tier user: storage_io: ") == 1, log[-3000:]
    assert "Traceback" not in log
    ext4.detach()
    ext4.check()
    ext4.attach()
    proc, endpoint = serve_on(ext4.mount / "data", *_FSYNC)
    try:
        with GrooveClient(endpoint, timeout=10) as client:
            stored = [x.description for x in client.iter_learnings()]
        assert len(stored) == len(set(stored))  # nothing twice
        acked = {f"description {n}" for n, (_, _, got) in enumerate(calls) if isinstance(got, list)}
        # a write whose log sync failed was committed but not known to be on disk: refused, and it may survive
        unsynced = {
            f"description {n}"
            for n, (_, _, got) in enumerate(calls)
            if isinstance(got, StorageIO) and "not known to be on disk" in got.message
        }
        # every acked write, and nothing refused before its commit
        assert acked <= set(stored) <= acked | unsynced, log_path.read_text()[-2500:]
    finally:
        stop_process(proc, grace=30)


def test_a_coordinator_will_not_start_on_a_read_only_data_dir_and_says_so_in_one_line(
    ext4: Ext4, serve_on: Serve
) -> None:
    proc, endpoint = serve_on(ext4.mount / "data")
    with GrooveClient(endpoint) as client:
        client.put_learnings([learning()])
    assert stop_process(proc, grace=30) == 0
    ext4.detach()
    ext4.attach("ro")
    refused = run_groove("serve", "--data-dir", str(ext4.mount / "data"), "--bind", "tcp://127.0.0.1:0", timeout=30)
    assert refused.returncode == 2
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1, refused.stderr
    assert lines[0].startswith("groove: error: ")
    assert lines[0] == f"groove: error: cannot use data dir {ext4.mount / 'data'}: Read-only file system"
