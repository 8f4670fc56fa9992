"""An OS crash (a power cut) under a write load, simulated below the file system: the data dir on ext4 on a
loop device, shut down without flushing its journal (EXT4_IOC_SHUTDOWN, as xfstests' `godown` does), so
whatever was not on disk yet is gone once it is mounted again.

With `--durability fsync` every acked write survives. With `--durability process` the writes acked in the
last seconds were only in the page cache and are lost, as documented: the test checks that too, so it is
known to see a loss when there is one."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import pytest

from benchmarks.disks import Ext4
from groove.client import GrooveClient, GrooveError
from groove.swarm.fleet import stop_process
from tests.faults.conftest import Serve
from tests.helpers import learning, wait_for

_WRITERS = 4


@pytest.mark.parametrize("durability", ["fsync", "process"])
def test_a_power_cut_keeps_every_write_acked_with_fsync(
    ext4: Ext4, serve_on: Serve, tmp_path: Path, durability: str
) -> None:
    data, log = ext4.mount / "data", tmp_path / "coordinator.log"  # the log off the disk that is cut
    proc, endpoint = serve_on(data, "--durability", durability)
    sent: set[str] = set()
    acked: set[str] = set()
    stop = threading.Event()

    def write(me: int) -> None:
        with GrooveClient(endpoint, timeout=3, attempt_timeout=1) as client:
            n = 0
            while not stop.is_set():
                batch = [learning(n=(me * 100_000 + n) * 10 + i) for i in range(10)]
                sent.update(str(x["description"]) for x in batch)
                try:
                    client.put_learnings(batch)
                except GrooveError:
                    pass  # no answer once the machine is down: not acked
                else:
                    acked.update(str(x["description"]) for x in batch)
                n += 1

    writers = [threading.Thread(target=write, args=(i,)) for i in range(_WRITERS)]
    for writer in writers:
        writer.start()
    try:
        wait_for(lambda: len(acked) >= 1000, "writes acked", timeout=30)
        proc.send_signal(signal.SIGSTOP)  # the machine stops mid-flight,
        ext4.crash()  # its disk keeps only what was synced,
        proc.kill()  # and nothing of the process outlives it
        proc.wait()
    finally:
        stop.set()
        for writer in writers:
            writer.join()
    ext4.detach()
    ext4.attach()  # the journal replays: what had been synced is there
    proc, endpoint = serve_on(data, "--durability", durability)
    try:
        with GrooveClient(endpoint, timeout=30) as client:
            stored = [x.description for x in client.iter_learnings()]
    finally:
        stop_process(proc)
    assert len(stored) == len(set(stored))  # nothing twice
    assert set(stored) <= sent  # nothing invented
    lost = acked - set(stored)
    if durability == "fsync":
        assert lost == set()
    else:  # acked from the page cache: the crash took what had not been written back
        assert len(lost) > 0
    assert "did not stop cleanly" in log.read_text()
