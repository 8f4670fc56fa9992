"""The client's exceptions: remote error codes become typed local exceptions."""

from __future__ import annotations

from typing import Any

from groove.protocol.errors import ErrorCode


class GrooveError(Exception):
    """Root of every exception the groove client raises."""


class GrooveTimeout(GrooveError):
    """No reply arrived before the call's deadline (the coordinator may be down or overloaded)."""


class CoordinatorAbsent(GrooveTimeout):
    """Nothing listens at the endpoint (connecting was refused for as long as the client was told to wait), or the
    coordinator said nothing for a whole deadline while a call went unanswered: the calls still queued behind it
    fail at once, unsent."""


class Stopped(GrooveError):
    """The caller was told to stop and its time to finish ran out before the reply came (a write sent may still
    be applied, once)."""


class BadEndpoint(GrooveError):
    """The endpoint string is not one a ZeroMQ socket can connect to (raised before anything is sent)."""


class RequestTooLarge(GrooveError):
    """The encoded request is over the protocol's message limit; it was not sent (split it into smaller ones)."""


class RemoteError(GrooveError):
    """The coordinator answered with an error; `code` is one of protocol.errors.ErrorCode."""

    code: str = ""

    def __init__(self, code: str, message: str, retryable: bool = False, retry_after_ms: int | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retryable = retryable
        self.retry_after_ms = retry_after_ms


class BadRequest(RemoteError):
    """The request was malformed or a value was invalid; nothing was changed."""


class UnknownOp(RemoteError):
    """The coordinator does not know the operation."""


class UnsupportedVersion(RemoteError):
    """The coordinator does not speak this protocol version."""


class NotFound(RemoteError):
    """A learning the request names does not exist."""


class Conflict(RemoteError):
    """The request contradicts stored data (e.g. an id already used in another tier)."""


class Busy(RemoteError):
    """The coordinator is overloaded or shutting down; retry after `retry_after_ms`."""


class Unauthorized(RemoteError):
    """The client's key or role may not do this."""


class TierUnavailable(RemoteError):
    """The tier the request needs could not be opened (corrupt or unreadable files); other tiers still serve."""


class WrongCoordinator(RemoteError):
    """The coordinator does not own the tier the write changes; `owner` names the one that does (in a
    cluster: the client's map is stale or wrong)."""

    owner: str = ""


class StorageFull(RemoteError):
    """A tier's disk is full: nothing of the request was applied; send it again once space is freed."""


class StorageIO(RemoteError):
    """A tier's files could not be written (a read-only or vanished data dir, an I/O error): nothing of the
    request was applied; the message gives the operating system's words."""


class InternalError(RemoteError):
    """The coordinator failed while serving the request; retrying with the same id is safe."""


_BY_CODE: dict[str, type[RemoteError]] = {
    ErrorCode.BAD_REQUEST: BadRequest,
    ErrorCode.UNKNOWN_OP: UnknownOp,
    ErrorCode.UNSUPPORTED_VERSION: UnsupportedVersion,
    ErrorCode.NOT_FOUND: NotFound,
    ErrorCode.CONFLICT: Conflict,
    ErrorCode.BUSY: Busy,
    ErrorCode.UNAUTHORIZED: Unauthorized,
    ErrorCode.TIER_UNAVAILABLE: TierUnavailable,
    ErrorCode.WRONG_COORDINATOR: WrongCoordinator,
    ErrorCode.STORAGE_FULL: StorageFull,
    ErrorCode.STORAGE_IO: StorageIO,
    ErrorCode.INTERNAL: InternalError,
}


def from_wire(error: dict[str, Any]) -> RemoteError:
    """The typed exception for a reply's `error` map (RemoteError itself for codes this client lacks)."""
    code = str(error.get("code", "internal"))
    retry_after = error.get("retry_after_ms")
    exc = _BY_CODE.get(code, RemoteError)(
        code,
        str(error.get("message", "")),
        bool(error.get("retryable", False)),
        retry_after if isinstance(retry_after, int) else None,
    )
    if isinstance(exc, WrongCoordinator):
        exc.owner = str(error.get("owner", ""))
    return exc
