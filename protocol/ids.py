"""UUIDv7 identifiers and wire timestamps (integer milliseconds since the epoch)."""

from __future__ import annotations

import os
import re
import threading
import time
import uuid

_UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
_lock = threading.Lock()
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
            _seq = int.from_bytes(os.urandom(2), "big") & 0x7FF
        _last_ms = ms
        seq = _seq
    rand = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | seq << 64 | 0b10 << 62 | rand
    return str(uuid.UUID(int=value))


def is_uuid7(value: str) -> bool:
    """Whether `value` is a lower-case, hyphenated UUIDv7 string."""
    return bool(_UUID_RE.match(value))


def uuid7_ms(value: str) -> int:
    """The millisecond timestamp inside a UUIDv7 string."""
    return uuid.UUID(value).int >> 80
