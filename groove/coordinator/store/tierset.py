"""The data dir's tiers: its lock and running marker, the user tier opened at start and the others as they are
first used (each with its derived data built before anyone can read it), and where each learning is.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from groove.coordinator.errors import DataDirLocked, Rejected, StorageError, TierUnavailable
from groove.coordinator.store.faults import Faults
from groove.coordinator.store.kept import fsync
from groove.coordinator.store.tiers import DB_DIR, ROCKSDB_LOG, TIER_FILE, Tier, one_line, tier_dir
from groove.protocol import constants as C
from groove.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

LOCK_FILE = "coordinator.lock"  # flocked by the process that owns the data dir; holds its pid
RUNNING_MARKER = "coordinator.running"  # in the data dir while a coordinator runs; left behind by a crash
_WHERE_LIMIT = 200_000  # cached learning locations (about 200 bytes each)
_REOPEN_BROKEN_S = 30.0  # a tier that failed to open is tried again after this (its files may be repaired)
_RESTORE = "restore the tier from a backup (groove restore); it is tried again every 30 s"


def _sync_new(path: Path, data_dir: Path) -> None:
    """Put a new tier's files on disk: each file and directory under `path`, and the directories above it up to
    the data dir. The WAL syncs of `--durability fsync` cover writes, not the files that make a tier a tier
    (CozoDB's storage marker among them): a file system that went read-only a moment after a tier was made
    once left it unopenable, its synced writes with it."""
    dirs = [Path(root) for root, _, _ in os.walk(path)]
    files = [d / name for d in dirs for name in os.listdir(d) if (d / name).is_file()]
    fsync([*files, *reversed(dirs), *(p for p in path.parents if p == data_dir or data_dir in p.parents)])


class TierSet:
    """All tiers of one data directory: opens them on demand, finds which one holds a learning."""

    def __init__(self, data_dir: Path, on_open: Callable[[Tier], None] | None = None) -> None:
        self.data_dir = data_dir
        self.on_open = on_open  # builds a tier's derived data before anyone can read the tier
        self._open: dict[str, Tier] = {}
        self._lock = threading.Lock()
        # learning id -> tier name, for learnings in open tiers. A learning never moves between tiers, so an
        # entry only goes stale by deletion; only the writer thread fills and clears it, so readers, which
        # only look, cannot put back an entry the writer just dropped.
        self._where: OrderedDict[str, str] = OrderedDict()  # bounded, oldest first (popitem is O(1))
        self.faults = Faults()  # tiers whose disk refuses writes (full, read-only, gone)
        self._broken: dict[str, tuple[str, float]] = {}  # tier -> (why it failed to open, when)
        self._lock_fd: int | None = None
        self._marked = False  # this process made the running marker, so closing removes it

    def lock(self) -> None:
        """Take the data dir for this process; DataDirLocked if another process holds it.

        RocksDB locks each tier's directory too, but only once a tier opens, and it says so only in an error
        message. This lock is the data dir's, taken before anything is opened, and it goes with the process.
        StorageError if the data dir cannot hold the lock file (not a directory, read-only, no permission): a
        coordinator needs to write there, and would otherwise take an unwritable tier for a damaged one.
        """
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        except FileExistsError:  # mkdir found a file there
            raise StorageError(f"cannot use data dir {self.data_dir}: it is not a directory") from None
        except OSError as exc:
            raise StorageError(f"cannot use data dir {self.data_dir}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise DataDirLocked(
                f"data dir {self.data_dir} is in use by another coordinator or a restore (pid {holder}); "
                "stop it first, or give this one another --data-dir"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd

    def mark_running(self) -> str | None:
        """Mark the data dir as served by this process (call with the lock held); returns what the marker of a
        previous coordinator that did not stop cleanly said, or None if it stopped cleanly."""
        marker = self.data_dir / RUNNING_MARKER
        previous = marker.read_text(errors="replace").strip() if marker.exists() else None
        marker.write_text(f"pid {os.getpid()} since {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        fsync([marker, self.data_dir])  # so that an OS crash, too, is known for one at the next start
        self._marked = True
        return previous

    def open_user(self) -> Tier:
        """The user tier, opened (created if new); TierUnavailable if its files cannot be opened."""
        tier = self.get(C.TIER_USER, create=True)
        assert tier is not None  # create=True always yields a tier or raises
        return tier

    def get(self, name: str, create: bool) -> Tier | None:
        """The open tier `name`, opening it if it exists on disk (or creating it when `create`).

        Raises TierUnavailable if its files cannot be opened; other tiers are not affected."""
        tier = self._open.get(name)
        if tier is not None:
            return tier
        with self._lock:
            tier = self._open.get(name)
            if tier is not None:
                return tier
            broken = self._broken.get(name)
            if broken is not None and time.monotonic() - broken[1] < _REOPEN_BROKEN_S:
                raise TierUnavailable(name, broken[0])
            path = tier_dir(self.data_dir, name)
            existed = (path / TIER_FILE).exists()
            try:
                return self._open_tier(name, path, existed, create)
            except StorageError as exc:
                if not existed:
                    raise TierUnavailable(name, str(exc)) from None
                # its files are damaged: remember, so requests do not each retry the open
                self._broken[name] = (f"{exc}; {_RESTORE}", time.monotonic())
                log.error("tier %s is unavailable (other tiers keep serving): %s", name, exc)
                raise TierUnavailable(name, self._broken[name][0]) from None

    def unavailable(self) -> dict[str, str]:
        """Tiers whose existing files failed to open, with the reason (a tier that could not even be made
        is not among them). Safe from any thread: the items are copied in one step before they are read."""
        return {name: reason for name, (reason, _) in list(self._broken.items())}

    def _open_tier(self, name: str, path: Path, existed: bool, create: bool) -> Tier | None:
        if not existed:
            if not create:
                return None
            try:
                path.mkdir(parents=True, exist_ok=True)
                (path / TIER_FILE).write_text(json.dumps({"tier": name}) + "\n")
            except OSError as exc:
                raise StorageError(f"cannot create tier {name!r} at {path}: {exc.strerror or exc}") from None
        started = time.monotonic()
        tier = Tier(name, path, self.faults)
        if not existed:
            try:
                _sync_new(path, self.data_dir)
            except OSError as exc:
                tier.close()
                raise StorageError(f"cannot create tier {name!r} at {path}: {exc.strerror or exc}") from None
        if self.on_open is not None:
            try:
                self.on_open(tier)
            except Exception as exc:
                # a fault of groove's derived data, not only of the tier's files: the traceback says which
                log.exception("tier %s: loading its derived data failed", name)
                tier.close()
                raise StorageError(f"cannot read tier {name!r} at {path}: {one_line(exc)}") from None
        if tier.dropped:
            log.error(
                "tier %s: recovery dropped %d bytes of a damaged write-ahead log tail (see %s): writes acked in "
                "them are lost, and a disk that loses written data should be replaced",
                name,
                tier.dropped,
                path / DB_DIR / ROCKSDB_LOG,
            )
        log.info(
            "opened tier %s (%d learnings %s, %.0f ms%s)",
            name,
            tier.learnings,
            "kept" if tier.counts_kept else "counted",
            (time.monotonic() - started) * 1000,
            f", migrated to v{tier.migrated[-1]}" if tier.migrated else "",
        )
        self._open[name] = tier
        self._broken.pop(name, None)
        return tier

    def opened(self) -> list[Tier]:
        """The tiers open now, user tier first."""
        return list(self._open.values())

    def on_disk(self) -> list[str]:
        """Names of every tier in the data directory, open or not."""
        names = [C.TIER_USER]
        for parent in ("projects", "enterprises"):
            for marker in sorted((self.data_dir / parent).glob(f"*/{TIER_FILE}")):
                try:
                    names.append(str(json.loads(marker.read_text())["tier"]))
                except (OSError, ValueError, KeyError) as exc:
                    log.warning("ignoring %s: %s", marker, exc)
        return names

    def open_all(self) -> list[Tier]:
        """Open every tier on disk (for reads that must see all of them), leaving out unavailable ones."""
        tiers = []
        for name in self.on_disk():
            tier = self._usable(name)
            if tier is not None:
                tiers.append(tier)
        return tiers

    def _usable(self, name: str) -> Tier | None:
        try:
            return self.get(name, create=False)
        except TierUnavailable:
            return None  # reported by `stats`; a read across tiers answers from the others

    def named(self, names: list[str] | None) -> list[Tier]:
        """These existing tiers, opened (None: every tier on disk); Rejected `not_found` for a missing one."""
        if names is None:
            return self.open_all()
        chosen = []
        for name in names:
            tier = self.get(name, create=False)
            if tier is None:
                raise Rejected(ErrorCode.NOT_FOUND, f"no tier {name!r} in this data directory")
            chosen.append(tier)
        return chosen

    def located(self) -> int:
        """Learning locations cached."""
        return len(self._where)

    def remember(self, where: dict[str, str]) -> None:
        """Note where learnings live (writer thread only: after a commit, or what it located)."""
        self._where.update(where)
        while len(self._where) > _WHERE_LIMIT:
            self._where.popitem(last=False)

    def forget(self, ids: list[str]) -> None:
        """Drop deleted learnings from the location cache (writer thread only)."""
        for lid in ids:
            self._where.pop(lid, None)

    def _cached(self, wanted: list[str]) -> dict[str, Tier]:
        found: dict[str, Tier] = {}
        for lid in wanted:
            name = self._where.get(lid)
            tier = self._open.get(name) if name is not None else None
            if tier is not None:
                found[lid] = tier
        return found

    def locate(self, ids: list[str]) -> dict[str, Tier]:
        """Which tier holds each id that exists; opens unopened tiers only while ids remain unfound."""
        wanted = list(dict.fromkeys(ids))
        found = self._cached(wanted)
        searched: set[str] = set()
        for tier in self.opened():
            self._find_in(tier, wanted, found)
            searched.add(tier.name)
        if len(found) == len(wanted):
            return found  # the usual case: listing the data directory costs more than the lookups
        # Another thread may open a tier while this one searches, so skip only tiers searched here.
        for name in self.on_disk():
            if len(found) == len(wanted):
                break
            if name in searched:
                continue
            opened = self._usable(name)
            if opened is not None:
                self._find_in(opened, wanted, found)
        return found

    def locate_open(self, ids: list[str]) -> dict[str, Tier]:
        """Which open tier holds each id, without opening any other tier."""
        wanted = list(dict.fromkeys(ids))
        found = self._cached(wanted)
        for tier in self.opened():
            self._find_in(tier, wanted, found)
        return found

    def _find_in(self, tier: Tier, wanted: list[str], found: dict[str, Tier]) -> None:
        remaining = [i for i in wanted if i not in found]
        if not remaining:
            return
        if len(remaining) == 1:
            rows = tier.run("?[id] := id = $id, *learning{id}", {"id": remaining[0]})
        else:
            rows = tier.run("?[id] := id in $ids, *learning{id}", {"ids": remaining})
        for (learning_id,) in rows:
            found[learning_id] = tier

    def close(self) -> None:
        """Close every open tier and let go of the data dir."""
        with self._lock:
            for tier in self._open.values():
                tier.close()
            self._open.clear()
            if self._marked:  # while the data dir is still ours: the lock goes next
                self._marked = False
                try:
                    (self.data_dir / RUNNING_MARKER).unlink(missing_ok=True)
                except OSError as exc:  # a data dir gone read-only, say
                    log.warning("the next start will take this stop for a crash: cannot remove its marker (%s)", exc)
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None
