"""One tier on disk: a RocksDB-backed CozoDB, opened (and released while idle) with the counts the coordinator
keeps of it. The data dir's set of them is `tierset.py`'s.

On-disk layout under the data directory (documented in docs/concepts.md):

    <data>/user/                   the user tier
    <data>/projects/<slug>-<hash>/ one project tier; <hash> is the first 16 hex digits of sha256(root)
    <data>/enterprises/<org>/      one enterprise tier
    each tier directory holds tier.json ({"tier": "<name>"}), db/ (the RocksDB files) and, once checkpointed,
    derived-counts/<token>/ (its count and content hashes, here) and derived-vectors/<token>/ (search/saved.py)
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pycozo.client import Client

from groove.coordinator.errors import StorageError
from groove.coordinator.store import journal, kept
from groove.coordinator.store.faults import Faults
from groove.coordinator.store.hashfilter import HashFilter
from groove.coordinator.store.schema import ensure_schema
from groove.protocol import constants as C

log = logging.getLogger(__name__)

TIER_FILE = "tier.json"
DB_DIR = "db"
COUNTS, COUNTS_DIR = "counts", "derived-counts"  # a tier's count and content hashes, kept by checkpoints
_LEARNINGS_FILE = "learnings"  # in COUNTS_DIR: the count
_HASHES_OF = "?[hash] := id in $ids, *learning_hashes{learning_id: id, hash}"
_SLUG_RE = re.compile(r"[^A-Za-z0-9._-]+")
# RocksDB's options for every tier: CozoDB's own, but for the write buffer. RocksDB's default (64 MiB, two, and as
# much again kept for conflict checks) let each tier hold ~192 MiB of memtables, and there is a tier per project.
# 4 MiB against 16 (performance history, issue 55): 19 % less RSS in a soak over 7 tiers, writes/s the same.
# CozoDB replaces the table options (bloom filters, a 32 MiB block cache per tier) whatever this file says.
WRITE_BUFFER_MIB = 4
WRITE_BUFFERS = 2
BLOCK_CACHE_MIB = 32  # CozoDB's, per tier
# what one open tier's RocksDB may hold: its block cache, its memtables and as many flushed ones kept
ROCKSDB_CEILING_MIB = BLOCK_CACHE_MIB + 2 * WRITE_BUFFERS * WRITE_BUFFER_MIB
_ROCKSDB_OPTIONS = f"""\
[Version]
  rocksdb_version=8.8.1
  options_file_version=1.1
[DBOptions]
  max_background_jobs=6
  bytes_per_sync=1048576
[CFOptions "default"]
  write_buffer_size={WRITE_BUFFER_MIB * 1024 * 1024}
  max_write_buffer_number={WRITE_BUFFERS}
  compression=kLZ4Compression
  bottommost_compression=kZSTD
  level_compaction_dynamic_level_bytes=true
  compaction_pri=kMinOverlappingRatio
"""
# RocksDB's info log, rewritten at each open, says so when recovery drops a damaged write-ahead log tail (it
# recovers to the last whole record): the only place that says writes were lost
ROCKSDB_LOG = "data/LOG"
_DROPPED_RE = re.compile(r"\.log: dropping (\d+) bytes")


def tier_dir(data_dir: Path, tier: str) -> Path:
    """Where a tier's files live."""
    if tier == C.TIER_USER:
        return data_dir / "user"
    if tier.startswith(C.TIER_PROJECT_PREFIX):
        root = tier[len(C.TIER_PROJECT_PREFIX) :]
        slug = _SLUG_RE.sub("_", Path(root).name or "root")[:40]
        digest = hashlib.sha256(root.encode()).hexdigest()[:16]
        return data_dir / "projects" / f"{slug}-{digest}"
    return data_dir / "enterprises" / tier[len(C.TIER_ENTERPRISE_PREFIX) :]


def one_line(exc: BaseException) -> str:
    """CozoDB's error text without its box drawing and advice lines, so it fits a log line and a reply."""
    lines = (line.strip(" \u00d7\u2502") for line in str(exc).splitlines())
    return " ".join(line for line in lines if line and not line.startswith("help:"))


def _dropped_at_recovery(info_log: Path) -> int:
    """Bytes of damaged write-ahead log that RocksDB's recovery dropped as this tier opened (0 if none)."""
    try:
        text = info_log.read_text(errors="replace")
    except OSError:
        return 0
    return sum(int(n) for n in _DROPPED_RE.findall(text))


class Tier:
    """One open tier: a CozoDB database plus the counts the coordinator keeps in memory.

    Its RocksDB can be released while the tier is idle (`release`): RocksDB's caches and memtables, most of what
    a tier holds (a 32 MiB block cache, up to 32 MiB of memtables and 32 MiB of flushed ones kept), go back, and
    the next use opens it again.
    Uses are counted, so a release never closes the database under a query or a commit."""

    def __init__(self, name: str, path: Path, faults: Faults) -> None:
        self.name = name
        self.path = path
        self.faults = faults  # the data dir's storage faults, which this tier's failures consult
        self._use = threading.Condition()
        self._users = 0
        self.last_used = time.monotonic()
        self.reopened = 0  # times its RocksDB was opened again after a release
        db = self._connect()
        self.db: Client | None = db
        try:
            self.migrated = ensure_schema(db, snapshot_dir=path)
            # index name -> (token, last log entry held) of what the last checkpoint saved for this tier; a
            # migration may have changed what they were derived from
            self.recorded: journal.Saved = {} if self.migrated else journal.held_tokens(self.run)
            self.journal_seq = journal.last_seq(self.run, self.recorded)  # the writer's: the last entry's number
            self._saved = dict(self.recorded)
            kept_counts = self._kept_counts(self._saved.pop(COUNTS, None))
            self.counts_kept = kept_counts is not None  # else counted: 12-17 µs a learning, seconds at 150,000
            if kept_counts is None:
                self.learnings = int(self.run("?[count(id)] := *learning{id}")[0][0])
                self.content_hashes = HashFilter(row[0] for row in self.run("?[hash] := *learning_hashes{hash}"))
            else:
                self.learnings, self.content_hashes = kept_counts
        except Exception as exc:  # readable enough to open, not to use: release it so a repair can start
            self.close()
            raise StorageError(f"cannot read tier {name!r} at {path}: {one_line(exc)}") from None
        self._inode = path.stat().st_ino  # the directory RocksDB's open files live in
        self.dropped = _dropped_at_recovery(path / DB_DIR / ROCKSDB_LOG)

    def _connect(self) -> Client:
        try:
            (self.path / DB_DIR).mkdir(exist_ok=True)
            (self.path / DB_DIR / "options").write_text(_ROCKSDB_OPTIONS)  # read by CozoDB as it opens
            return Client("rocksdb", str(self.path / DB_DIR), dataframe=False)
        except Exception as exc:  # pycozo raises bare exceptions; say which tier and why
            raise StorageError(f"cannot open tier {self.name!r} at {self.path}: {one_line(exc)}") from None

    def take_saved(self) -> journal.Saved:
        """What the last checkpoint saved of this tier's derived indexes (index name -> token, last log entry
        held), once: a later call (a reindex) gets none."""
        saved, self._saved = self._saved, {}
        return saved

    def next_entry(self) -> int:
        """The number of this tier's next log entry (the writer's, as it prepares a commit)."""
        self.journal_seq += 1
        return self.journal_seq

    def _kept_counts(self, saved: tuple[str, int] | None) -> tuple[int, HashFilter] | None:
        """The count and content hashes the last checkpoint saved, brought up to date from the log entries past
        it; None when there are none to load: then they are counted."""
        parent = self.path / COUNTS_DIR
        token, through = saved if saved is not None else (None, 0)
        kept.prune(parent, token)  # checkpoints a crash interrupted, and older ones
        folder = kept.folder(parent, token)
        if folder is None:
            return None
        try:
            learnings, hashes = int((folder / _LEARNINGS_FILE).read_text()), HashFilter.load(folder)
        except (OSError, ValueError) as exc:
            log.warning("tier %s: its saved counts cannot be loaded (%s); counting again", self.name, exc)
            return None
        ids, delta = journal.since(self.run, through)
        if ids:
            hashes.add(row[0] for row in self.run(_HASHES_OF, {"ids": ids}))
        return learnings + delta, hashes

    def counts_now(self) -> tuple[int, HashFilter, int]:
        """The count, a copy of the content hashes and the last log entry they include (call with the writer
        held: they are its)."""
        return self.learnings, self.content_hashes.frozen(), self.journal_seq

    def save_counts(self, counts: tuple[int, HashFilter, int]) -> tuple[str, int]:
        """Save counts from `counts_now`; the token they were saved with and the log entry they hold."""
        learnings, hashes, through = counts

        def write(folder: Path) -> None:
            (folder / _LEARNINGS_FILE).write_text(str(learnings))
            hashes.save(folder)

        return kept.write_folder(self.path / COUNTS_DIR, write), through

    @contextmanager
    def using(self) -> Iterator[Client]:
        """The tier's open database for one use (opened again first if it was released)."""
        with self._use:
            if self.db is None:
                started = time.monotonic()
                self.db = self._connect()
                self.reopened += 1
                log.info(
                    "tier %s opened again after a release (%.0f ms)", self.name, (time.monotonic() - started) * 1000
                )
            self._users += 1
            db = self.db
        try:
            yield db
        finally:
            with self._use:
                self._users -= 1
                self.last_used = time.monotonic()

    def release(self, idle_s: float, now: float) -> bool:
        """Close the database if no one has used it for `idle_s` (and no one is using it); True if closed."""
        with self._use:
            if self.db is None or self._users or now - self.last_used < idle_s:
                return False
            self.db.close()
            self.db = None
            return True

    @property
    def released(self) -> bool:
        """Whether its database is closed until the next use."""
        return self.db is None

    def vanished(self) -> str | None:
        """Why this tier's directory is no longer the one it was opened in (deleted, or replaced), or None.

        RocksDB keeps writing to the files it has open, deleted or not: commits would succeed and be acked,
        and be gone at the next start. So the writer looks before each commit (a stat, microseconds)."""
        try:
            if self.path.stat().st_ino == self._inode:
                return None
        except FileNotFoundError:
            return f"its directory was deleted under the running coordinator ({self.path}); restart it"
        return f"its directory was replaced under the running coordinator ({self.path}); restart it"

    def run(self, script: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        """Run a script; returns its rows. Raises StorageError with CozoDB's message on failure, or the tier's
        DiskFault while its disk refuses writes."""
        try:
            with self.using() as db:
                result = db.run(script, params or {})
        except StorageError:
            raise
        except Exception as exc:
            refusal = self.faults.refusal(self.name)  # the disk's fault, said once, not CozoDB's words each time
            if refusal is not None:
                raise refusal from None
            raise StorageError(f"tier {self.name!r}: {exc}") from None
        rows: list[list[Any]] = result["rows"]
        return rows

    def replies(self, request_ids: list[str]) -> dict[str, tuple[str, str, dict[str, Any]]]:
        """Request id -> (op, body digest, this tier's share of its reply), for those of these requests applied
        here."""
        rows = self.run(
            "?[rid, op, digest, reply] := rid in $ids, "
            "*applied_requests{request_id: rid, op, digest, reply_json: reply}",
            {"ids": request_ids},
        )
        return {rid: (op, digest, json.loads(reply)) for rid, op, digest, reply in rows}

    def archived(self, among: list[str] | None = None) -> list[str]:
        """The archived learnings of this tier (of `among`, if given)."""
        if among is None:
            return [row[0] for row in self.run("?[id] := *archived{learning_id: id}")]
        return [row[0] for row in self.run("?[id] := id in $ids, *archived{learning_id: id}", {"ids": among})]

    def close(self) -> None:
        """Release the RocksDB directory."""
        with self._use:
            if self.db is not None:
                self.db.close()
                self.db = None
