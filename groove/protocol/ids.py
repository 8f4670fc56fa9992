"""UUIDv7 identifiers and wire timestamps (integer milliseconds since the epoch)."""

from __future__ import annotations

import os
import random
import re
import threading
import time
import uuid

_UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
_lock = threading.Lock()
# Ids need uniqueness, not secrecy. A forked child (the coordinator forks its front) seeds this afresh: the
# random module re-seeds only its own global instance, and a copied state would repeat the parent's ids' bits.
_random = random.Random()
if hasattr(os, "register_at_fork"):  # not on Windows, where nothing forks
    os.register_at_fork(after_in_child=_random.seed)
_last_ms = 0
_seq = 0


def now_ms() -> int:
    """The current time as the wire carries it: integer milliseconds since the Unix epoch."""
    return time.time_ns() // 1_000_000


def uuid7() -> str:
    """A new UUIDv7 string (RFC 9562): 48-bit millisecond time, then a counter and random bits.

    Ids made by one process are strictly increasing, also within one millisecond, so sorting ids sorts by
    creation time.
    """
    global _last_ms, _seq
    ms = now_ms()
    with _lock:
        if ms <= _last_ms:
            ms = _last_ms
            _seq += 1
            if _seq > 0xFFF:
                ms += 1
                _seq = 0
        else:
            _seq = _random.getrandbits(11)
        _last_ms = ms
        seq = _seq
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | seq << 64 | 0b10 << 62 | _random.getrandbits(62)
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def is_uuid7(value: str) -> bool:
    """Whether `value` is a lower-case, hyphenated UUIDv7 string."""
    return bool(_UUID_RE.match(value))


def uuid7_ms(value: str) -> int:
    """The millisecond timestamp inside a UUIDv7 string."""
    return uuid.UUID(value).int >> 80
