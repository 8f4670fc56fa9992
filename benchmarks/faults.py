"""Faults under load: for each, writers keep a coordinator busy, the fault is injected for real, then mended;
every acked write is read back.

    sudo python -m benchmarks.faults --writers 4 --seconds 3

- `disk_full`: the data dir on a 6 MiB tmpfs, filled by the writers, then grown to 256 MiB (mounting needs root);
- `dir_deleted`: the user tier's directory removed under the writers, then the coordinator restarted;
- `kill_9`: the coordinator killed under the writers, then restarted on its data;
- `hung`: the coordinator stopped (SIGSTOP) under the writers for a second past `--seconds` (at least 2.5 s),
  longer than their 2 s attempt time-out and shorter than their 10 s deadline, then SIGCONT;
- `hung_agent` and `cluster_cut` (benchmarks/swarmfaults.py): a board worker stopped while it holds a lease,
  and a cluster coordinator stopped while clients inject across it;
- `read_only`: the data dir's ext4 (a loop device) turned read-only by an error, then the operator's repair:
  stop, e2fsck, mount, start (`--durability fsync`);
- `os_crash`: a power cut, with `--durability fsync`: the coordinator frozen, its ext4 shut down without
  flushing (what was not synced is gone), the process killed, the file system mounted again, a restart.

Per fault: writes acked, lost (acked, not stored), duplicated, stored unacked, how long from the fault to the
first clear error a client got (kill -9 gives none: clients resend, so none is due), and from the repair to
the first acked write. The last line is JSON.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from benchmarks.common import machine, ms_between, poll
from benchmarks.disks import Ext4
from benchmarks.swarmfaults import cluster_cut, hung_agent, stopped_for
from groove.cli.output import table
from groove.cli.processes import start_coordinator
from groove.client import GrooveClient, GrooveError, StorageFull, StorageIO
from groove.swarm.fleet import stop_process

_SERVE = ["--embedder", "none"]
_FILLER = "x" * 800  # 1.7 KB learnings: a 6 MiB disk fills in seconds


class Writers:
    """Threads writing learnings back to back, each call recorded as (sent, answered, ids or error)."""

    def __init__(self, endpoint: str, count: int) -> None:
        self.endpoint = endpoint
        self.calls: list[tuple[float, float, list[str] | GrooveError]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        # daemons: a fault that raises must not leave the process waiting on writers no one stops
        self._threads = [threading.Thread(target=self._write, args=(i,), daemon=True) for i in range(count)]
        for thread in self._threads:
            thread.start()

    def _write(self, me: int) -> None:
        with GrooveClient(self.endpoint, timeout=10) as client:
            n = 0
            while not self._stop.is_set():
                body = [
                    {
                        "scope": "global",
                        "category": "solution",
                        "description": f"w{me}-{n}-{i} {_FILLER}",
                        "insight": _FILLER,
                    }
                    for i in range(10)
                ]
                sent = time.monotonic()
                try:
                    got: list[str] | GrooveError = client.put_learnings(body).ids
                except GrooveError as exc:
                    got = exc
                with self._lock:
                    self.calls.append((sent, time.monotonic(), got))
                n += 1

    def first(self, after: float, kind: type[GrooveError] | None) -> float | None:
        """When the first call sent after `after` was answered with `kind` (None: acked), or None."""
        with self._lock:
            for sent, answered, got in self.calls:
                if sent >= after and (isinstance(got, list) if kind is None else isinstance(got, kind)):
                    return answered
        return None

    def stop(self) -> set[str]:
        """Stop writing; every acked id."""
        self._stop.set()
        for thread in self._threads:
            thread.join()
        return {lid for _, _, got in self.calls if isinstance(got, list) for lid in got}


def _readback(endpoint: str, acked: set[str]) -> dict[str, int]:
    with GrooveClient(endpoint, timeout=60) as client:
        stored = [x.id for x in client.iter_learnings()]
    return {
        "acked": len(acked),
        "lost": len(acked - set(stored)),
        "duplicated": len(stored) - len(set(stored)),
        "unacked_stored": len(set(stored) - acked),
    }


def disk_full(work: Path, writers: int, seconds: float) -> dict[str, Any]:
    disk = work / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(disk)], check=True)
    try:
        (disk / "data").mkdir()
        proc, endpoint = start_coordinator(disk / "data", _SERVE)
        try:
            load = Writers(endpoint, writers)
            started = time.monotonic()
            full = poll(lambda: load.first(started, StorageFull), 120)
            # the fault's moment: the first write the disk refused was sent just before this answer
            fault = min(sent for sent, _, got in load.calls if isinstance(got, StorageFull)) if full else started
            time.sleep(seconds)
            subprocess.run(["mount", "-o", "remount,size=256m", str(disk)], check=True)
            mended = time.monotonic()
            resumed = poll(lambda: load.first(mended, None), 60)
            time.sleep(seconds)
            acked = load.stop()
            return {"first_error_ms": ms_between(fault, full), "recovered_ms": ms_between(mended, resumed)} | _readback(
                endpoint, acked
            )
        finally:
            stop_process(proc)
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def _restart(
    data: Path, endpoint: str, load: Writers, seconds: float, serve: tuple[str, ...] = (), log: Path | None = None
) -> tuple[subprocess.Popen[bytes], float | None, set[str]]:
    """The repair by a restart on the same endpoint (the writers resend to it): the new process, ms from the
    restart to the first acked write, and every id acked once the writers are stopped `seconds` later."""
    mended = time.monotonic()
    proc, _ = start_coordinator(data, ["--bind", endpoint, *_SERVE, *serve], log_file=log)
    resumed = poll(lambda: load.first(mended, None), 60)
    time.sleep(seconds)
    return proc, ms_between(mended, resumed), load.stop()


def dir_deleted(work: Path, writers: int, seconds: float) -> dict[str, Any]:
    data = work / "deleted"
    data.mkdir()
    proc, endpoint = start_coordinator(data, _SERVE)
    try:
        load = Writers(endpoint, writers)
        time.sleep(seconds)
        shutil.rmtree(data / "user")
        deleted = time.monotonic()
        refused = poll(lambda: load.first(deleted, StorageIO), 30)
        time.sleep(seconds)
        acked_after = {lid for sent, _, got in load.calls if sent > deleted and isinstance(got, list) for lid in got}
        stop_process(proc)
        proc, recovered, acked = _restart(data, endpoint, load, seconds)  # the repair: a restart
        before = {lid for sent, _, got in load.calls if sent <= deleted and isinstance(got, list) for lid in got}
        # what was acked before the deletion was deleted with the directory: the backup's to restore
        return {"first_error_ms": ms_between(deleted, refused), "recovered_ms": recovered,
                "acked_after_fault": len(acked_after)} | _readback(endpoint, acked - before)  # fmt: skip
    finally:
        stop_process(proc)


def kill_9(work: Path, writers: int, seconds: float) -> dict[str, Any]:
    data = work / "killed"
    data.mkdir()
    proc, endpoint = start_coordinator(data, _SERVE)
    try:
        load = Writers(endpoint, writers)
        time.sleep(seconds)
        proc.kill()
        proc.wait()
        proc, recovered, acked = _restart(data, endpoint, load, seconds)
        return {"first_error_ms": None, "recovered_ms": recovered} | _readback(endpoint, acked)
    finally:
        stop_process(proc)


def hung(work: Path, writers: int, seconds: float) -> dict[str, Any]:
    data = work / "hung"
    data.mkdir()
    proc, endpoint = start_coordinator(data, _SERVE)
    try:
        load = Writers(endpoint, writers)
        time.sleep(seconds)
        proc.send_signal(signal.SIGSTOP)
        time.sleep(stopped_for(seconds))
        proc.send_signal(signal.SIGCONT)
        woken = time.monotonic()
        resumed = poll(lambda: load.first(woken, None), 30)
        time.sleep(seconds)
        acked = load.stop()
        return {"first_error_ms": None, "recovered_ms": ms_between(woken, resumed)} | _readback(endpoint, acked)
    finally:
        stop_process(proc)


_FSYNC = ("--durability", "fsync")
_EXT4_MB = 1024  # sparse: room for minutes of writes, so the file system fills only where it is meant to


def read_only(work: Path, writers: int, seconds: float) -> dict[str, Any]:
    (work / "ro").mkdir()
    disk = Ext4.make(work / "ro", size_mb=_EXT4_MB)
    data, log = disk.mount / "data", work / "ro" / "coordinator.log"  # the log off the failing disk
    data.mkdir()
    proc, endpoint = start_coordinator(data, [*_SERVE, *_FSYNC], log_file=log)
    try:
        load = Writers(endpoint, writers)
        time.sleep(seconds)
        disk.fail()
        failed = time.monotonic()
        refused = poll(lambda: load.first(failed, StorageIO), 30)
        time.sleep(seconds)
        stop_process(proc)  # the operator's repair: stop, check, mount, start
        disk.detach()
        disk.check()
        disk.attach()
        proc, recovered, acked = _restart(data, endpoint, load, seconds, _FSYNC, log)
        # a write whose log sync met the fault was committed, not known to be on disk: refused, may be stored
        return {"first_error_ms": ms_between(failed, refused), "recovered_ms": recovered} | _readback(endpoint, acked)
    finally:
        stop_process(proc)
        disk.release()


def os_crash(work: Path, writers: int, seconds: float) -> dict[str, Any]:
    (work / "crash").mkdir()
    disk = Ext4.make(work / "crash", size_mb=_EXT4_MB)
    data, log = disk.mount / "data", work / "crash" / "coordinator.log"
    data.mkdir()
    proc, endpoint = start_coordinator(data, [*_SERVE, *_FSYNC], log_file=log)
    try:
        load = Writers(endpoint, writers)
        time.sleep(seconds)
        proc.send_signal(signal.SIGSTOP)  # the machine stops mid-flight, its disk keeps what was synced
        disk.crash()
        proc.kill()
        proc.wait()
        disk.detach()
        disk.attach()  # the journal replays
        proc, recovered, acked = _restart(data, endpoint, load, seconds, _FSYNC, log)
        return {"first_error_ms": None, "recovered_ms": recovered} | _readback(endpoint, acked)
    finally:
        stop_process(proc)
        disk.release()


FAULTS: dict[str, Callable[[Path, int, float], dict[str, Any]]] = {
    "disk_full": disk_full,
    "dir_deleted": dir_deleted,
    "kill_9": kill_9,
    "hung": hung,
    "hung_agent": hung_agent,
    "cluster_cut": cluster_cut,
    "read_only": read_only,
    "os_crash": os_crash,
}


def _known(_: click.Context, __: click.Parameter, value: str) -> list[str]:
    chosen = [name.strip() for name in value.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(FAULTS))
    if unknown or not chosen:
        raise click.BadParameter(f"{', '.join(unknown) or 'none given'}: choose among {', '.join(FAULTS)}")
    return chosen


@click.command()
@click.option("--writers", type=click.IntRange(1, 64), default=4, show_default=True, help="Writing clients.")
@click.option("--seconds", type=click.FloatRange(0.5), default=3.0, show_default=True,
              help="Load before each fault, and after each repair.")  # fmt: skip
@click.option("--faults", "chosen", default=",".join(FAULTS), show_default=True, callback=_known,
              help="The faults to inject, comma-separated.")  # fmt: skip
def main(writers: int, seconds: float, chosen: list[str]) -> None:
    """Inject each fault under load; print what was acked, lost, duplicated, and how long errors and repairs took."""
    results = {}
    with tempfile.TemporaryDirectory(prefix="groove-faults-") as tmp:
        for name in chosen:
            click.echo(f"{name} ...", err=True)
            results[name] = FAULTS[name](Path(tmp), writers, seconds)
    columns = ("acked", "lost", "duplicated", "unacked_stored", "first_error_ms", "recovered_ms")
    click.echo(table(("fault", *columns), [(name, *(r[c] for c in columns)) for name, r in results.items()]))
    click.echo(json.dumps({"bench": "faults", "writers": writers, "results": results, "machine": machine()}))


if __name__ == "__main__":
    main()
