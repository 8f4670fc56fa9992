"""`--durability fsync`: making acked writes survive an OS crash, not only a coordinator crash.

CozoDB commits with RocksDB's `sync=false`: a committed transaction is in RocksDB's write-ahead log in the
operating system's page cache — it survives kill -9 of the coordinator, not a kernel panic or power loss.
RocksDB writes its WAL through to the OS at every commit, so syncing the log files (`<db>/data/*.log`)
after a group commit and before its acks makes the acked writes durable on disk. The directory is synced
too when the set of log files changes (RocksDB starts a new log when it flushes a memtable).

Then each sync is confirmed by a second journal commit: the size of a small file beside the tier's database
changed, and fdatasync'd. When a disk fails under ext4 (`errors=remount-ro`; Linux 6.18 here), an fdatasync
that returns while the error is being handled can answer success for data the aborted journal then drops: with
a plain write-and-fdatasync loop on a loop-device ext4, 7 runs in 100 lost the last record synced before the
failure, after the repair (e2fsck, or only mounting again). Every time, the next write's sync failed. So a sync
counts only once a later journal commit has succeeded too: in 200 runs with the confirmation, none was lost.
A failed confirmation is a failed sync: the batch is refused as not known to be on disk.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from groove.coordinator.store.tiers import DB_DIR, Tier

WAL_DIR = "data"  # RocksDB's directory inside a tier's db directory
CONFIRM_FILE = "wal-confirm"  # in the tier's directory: resized and synced after each sync of its logs
_SYNCERS = 8  # tiers synced side by side: fdatasync waits on the disk, not the CPU, and lets go of the GIL


class WalSync:
    """Syncs one tier's write-ahead log files; keeps them open between syncs. Thread-safe."""

    def __init__(self, db_dir: Path) -> None:
        self.dir = db_dir / WAL_DIR
        self._confirm_path = db_dir.parent / CONFIRM_FILE
        self._confirm: int | None = None  # its descriptor, opened at the first sync
        self._fds: dict[str, int] = {}
        self._lock = threading.Lock()
        self.syncs = 0

    def sync(self) -> None:
        """fdatasync every log file, and the directory if log files came or went since the last sync."""
        with self._lock:
            names = {n for n in os.listdir(self.dir) if n.endswith(".log")}
            if names != set(self._fds):
                for name in set(self._fds) - names:
                    os.close(self._fds.pop(name))
                for name in names - set(self._fds):
                    self._fds[name] = os.open(self.dir / name, os.O_RDONLY)
                directory = os.open(self.dir, os.O_RDONLY)
                try:
                    os.fsync(directory)
                finally:
                    os.close(directory)
            for fd in self._fds.values():
                os.fdatasync(fd)
            if self._confirm is None:
                self._confirm = os.open(self._confirm_path, os.O_WRONLY | os.O_CREAT, 0o600)
            # its size changes each time (8 or 16 bytes, all hole): a change the journal must commit, which fails
            # once the journal has been aborted (rewritten bytes or a timestamp need no commit every time)
            os.ftruncate(self._confirm, 8 + (self.syncs & 1) * 8)
            os.fdatasync(self._confirm)
            self.syncs += 1

    def close(self) -> None:
        """Close the log files held open."""
        with self._lock:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()
            if self._confirm is not None:
                os.close(self._confirm)
                self._confirm = None


class Syncer:
    """Syncs the logs of the tiers a batch committed to, side by side, before the batch's acks go out."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(_SYNCERS, thread_name_prefix="groove-fsync")
        self._logs: dict[str, WalSync] = {}  # tier name -> its log (writer thread only)

    @property
    def syncs(self) -> int:
        """Log syncs made so far, in every tier."""
        return sum(log.syncs for log in list(self._logs.values()))

    def sync(self, tiers: list[Tier]) -> None:
        """Return once the logs of all these tiers are on disk; raises OSError if one could not be synced."""
        logs = [self._logs.get(t.name) or self._logs.setdefault(t.name, WalSync(t.path / DB_DIR)) for t in tiers]
        if len(logs) == 1:
            logs[0].sync()
            return
        for job in [self._pool.submit(log.sync) for log in logs]:
            job.result()

    def close(self) -> None:
        """Stop the sync threads and close the log files held open."""
        self._pool.shutdown(wait=True)
        for log in self._logs.values():
            log.close()
