"""ZeroMQ endpoint strings, checked before a socket sees them.

libzmq answers a malformed endpoint with a bare `EINVAL` (or, for a host it cannot resolve, only later and
silently), so both the coordinator's `--bind` and every client's `--endpoint` are checked here first and a
bad one gets a message that says what was expected.
"""

from __future__ import annotations

import re

TRANSPORTS = ("tcp", "ipc", "inproc")
_HOST_RE = re.compile(r"^(\*|\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?|[A-Za-z0-9_.-]+)$")
_EXPECTED = "expected tcp://HOST:PORT, ipc://PATH or inproc://NAME"


class EndpointError(ValueError):
    """An endpoint string libzmq would refuse or misread; the message says what was expected."""


def check_endpoint(endpoint: str, binding: bool = False) -> str:
    """Return `endpoint` unchanged if it is well-formed, else raise EndpointError saying why.

    `binding`: the host `*` (every interface) and the port 0 or `*` (pick a free one) are allowed only when
    binding."""
    transport, sep, rest = endpoint.partition("://")
    if not sep:
        hint = f"; did you mean tcp://{endpoint}?" if re.match(r"^[^/:]+:\d+$", endpoint) else ""
        raise EndpointError(f"endpoint {endpoint[:80]!r} has no transport; {_EXPECTED}{hint}")
    if transport not in TRANSPORTS:
        raise EndpointError(f"endpoint {endpoint[:80]!r}: unknown transport {transport[:20]!r}; {_EXPECTED}")
    if not rest:
        raise EndpointError(f"endpoint {endpoint[:80]!r} names no address; {_EXPECTED}")
    if transport != "tcp":
        return endpoint
    host, colon, port = rest.rpartition(":")
    if not colon or not host:
        raise EndpointError(f"endpoint {endpoint[:80]!r} needs a port: tcp://HOST:PORT")
    if not _HOST_RE.match(host) or (host == "*" and not binding):
        raise EndpointError(f"endpoint {endpoint[:80]!r}: {host[:60]!r} is not a host name or address")
    if binding and port == "*":
        return endpoint
    if not port.isdigit() or not 0 <= int(port) <= 65535 or (int(port) == 0 and not binding):
        lowest = 0 if binding else 1
        raise EndpointError(f"endpoint {endpoint[:80]!r}: the port must be a number from {lowest} to 65535")
    return endpoint
