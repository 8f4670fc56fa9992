"""A request body's digest: how the coordinator tells a resend from a reused id (PROTOCOL.md, section 7).

Its own module, light to import: the front process imports `coordinator.errors`, which compares digests, and
must not pay for the protocol's models at each start.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

# Digests are taken over orjson's encoding (1.5 µs for a learning's body, the standard library's 5.5), marked by
# this prefix: a digest stored by an earlier version (unmarked, over the standard library's encoding, whose floats
# below 1e-4 read differently) is not compared with a new one, as a write stored before digests were is not.
DIGEST_PREFIX = "o:"
_DIGEST_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def body_digest(body: dict[str, Any]) -> str:
    """A request body's fingerprint, the same however a client orders its map keys: a write resent under its
    id is compared with the first attempt by it (PROTOCOL.md, section 7)."""
    try:
        data = orjson.dumps(body, default=repr, option=_DIGEST_OPTIONS)
    except (TypeError, orjson.JSONEncodeError):  # a lone surrogate, an integer past 64 bits: fails validation anyway
        data = repr(body).encode(errors="surrogatepass")
    return DIGEST_PREFIX + hashlib.blake2b(data, digest_size=16).hexdigest()


def comparable(first: str, again: str) -> bool:
    """Whether two body digests were taken alike, so that telling them apart means the bodies differ: an empty
    one (a write applied before schema version 6) or one of an earlier version is not compared."""
    return bool(first) and bool(again) and first.startswith(DIGEST_PREFIX) == again.startswith(DIGEST_PREFIX)
