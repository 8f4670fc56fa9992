"""Storage faults: what the file system says when a tier's commit fails, and each tier's state since.

A failed commit's message is RocksDB's, in words that vary by version. Rather than read them, the writer
asks the file system itself: it writes and syncs a small file in the tier's directory, which fails with the
operating system's own errno (ENOSPC when full, EROFS when read-only, ENOENT when the directory was deleted,
EIO), and looks at the space left. A probe that succeeds with room to spare means the fault is not the disk's,
and the writer goes on as before (the batch's requests committed one by one).

A faulty tier's requests are refused with `storage_full` or `storage_io`, naming the tier and the operating
system's message: its writes, and its reads too while RocksDB refuses its transactions (it does after a
failed write, until it resumes); every other tier goes on. The log gets one line when a tier's state
changes (faulty, or writable again with how many writes it refused meanwhile), never one per batch. Every
batch still tries the tier, so writes resume by themselves once space returns or the directory is mended.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groove.coordinator.errors import DiskFault
from groove.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

_PROBE = ".groove-probe"
_PROBE_BYTES = 4096
# Under this much free space a tier counts as full even if the probe's few KiB fitted: RocksDB's failed write
# (a WAL record, a flushed table) was larger.
_LOW_SPACE = 1 << 20
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


def probe(path: Path) -> tuple[ErrorCode, str] | None:
    """The file system's fault under `path` as (code, the operating system's message), or None if a small
    write there succeeds with room to spare."""
    target = path / _PROBE
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, bytes(_PROBE_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.unlink(target)
        stat = os.statvfs(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(target)
        code = ErrorCode.STORAGE_FULL if exc.errno in _FULL else ErrorCode.STORAGE_IO
        return code, f"{exc.strerror or exc} ({path})"
    free = stat.f_bavail * stat.f_frsize
    if free < _LOW_SPACE:
        return ErrorCode.STORAGE_FULL, f"{os.strerror(errno.ENOSPC)} ({free:,} bytes free under {path})"
    return None


@dataclass(slots=True)
class Fault:
    """A tier's storage fault: what the operating system said, since when (ms since the epoch), writes refused."""

    code: ErrorCode
    message: str
    since_ms: int
    refused: int = 0


class Faults:
    """Each tier's storage state. The writer reports; `snapshot` is read by `ping` and `stats` on other threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_tier: dict[str, Fault] = {}

    def failed(self, tier: str, code: ErrorCode, message: str, writes: int) -> DiskFault:
        """A commit to `tier` failed for this file-system reason; returns the refusal for its writes."""
        with self._lock:
            fault = self._by_tier.get(tier)
            if fault is None or fault.code != code:
                fault = self._by_tier[tier] = Fault(code, message, int(time.time() * 1000))
                log.error(
                    "tier %s: %s: %s; its writes are refused until that is mended (reads go on)", tier, code, message
                )
            fault.refused += writes
        return DiskFault(code, f"tier {tier!r}: {message}")

    def standing(self, tier: str) -> tuple[ErrorCode, str] | None:
        """The tier's fault, if it has one: (code, message)."""
        with self._lock:
            fault = self._by_tier.get(tier)
            return None if fault is None else (fault.code, fault.message)

    def refusal(self, tier: str) -> DiskFault | None:
        """What a request touching the tier is told while its fault stands (reads fail with writes: RocksDB
        refuses every transaction after a failed write until it resumes)."""
        standing = self.standing(tier)
        return None if standing is None else DiskFault(standing[0], f"tier {tier!r}: {standing[1]}")

    def committed(self, tier: str) -> None:
        """A commit to `tier` succeeded: a fault it had is over."""
        if tier not in self._by_tier:  # read without the lock: only the writer thread adds and removes
            return
        with self._lock:
            fault = self._by_tier.pop(tier)
        log.warning(
            "tier %s: writable again (%s since %s; %d writes refused)", tier, fault.code, _when(fault), fault.refused
        )

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """tier -> {code, message, since_ms, refused}, for the tiers at fault now."""
        with self._lock:
            return {
                tier: {"code": f.code.value, "message": f.message, "since_ms": f.since_ms, "refused": f.refused}
                for tier, f in self._by_tier.items()
            }


def _when(fault: Fault) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(fault.since_ms / 1000))
