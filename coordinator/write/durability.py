"""`--durability fsync`: making acked writes survive an OS crash, not only a coordinator crash.

CozoDB commits with RocksDB's `sync=false`: a committed transaction is in RocksDB's write-ahead log in the
operating system's page cache — it survives kill -9 of the coordinator, not a kernel panic or power loss.
RocksDB writes its WAL through to the OS at every commit, so syncing the log files (`<db>/data/*.log`)
after a group commit and before its acks makes the acked writes durable on disk. The directory is synced
too when the set of log files changes (RocksDB starts a new log when it flushes a memtable).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from coordinator.store.tiers import DB_DIR, Tier

WAL_DIR = "data"  # RocksDB's directory inside a tier's db directory
_SYNCERS = 8  # tiers synced side by side: fdatasync waits on the disk, not the CPU, and lets go of the GIL


class WalSync:
    """Syncs one tier's write-ahead log files; keeps them open between syncs. Thread-safe."""

    def __init__(self, db_dir: Path) -> None:
        self.dir = db_dir / WAL_DIR
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
            self.syncs += 1

    def close(self) -> None:
        """Close the log files held open."""
        with self._lock:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()


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
