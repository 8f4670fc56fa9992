"""Error codes shared by the coordinator and every client, and the protocol package's exceptions."""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    """The `error.code` values a reply may carry. PROTOCOL.md says when each is sent."""

    BAD_REQUEST = "bad_request"
    UNKNOWN_OP = "unknown_op"
    UNSUPPORTED_VERSION = "unsupported_version"
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"
    BUSY = "busy"
    UNAUTHORIZED = "unauthorized"
    TIER_UNAVAILABLE = "tier_unavailable"
    WRONG_COORDINATOR = "wrong_coordinator"
    STORAGE_FULL = "storage_full"
    STORAGE_IO = "storage_io"
    INTERNAL = "internal"


# Whether a client may resend the same request (same id) after this error and expect a different answer.
RETRYABLE: dict[ErrorCode, bool] = {
    ErrorCode.BAD_REQUEST: False,
    ErrorCode.UNKNOWN_OP: False,
    ErrorCode.UNSUPPORTED_VERSION: False,
    ErrorCode.NOT_FOUND: False,
    ErrorCode.CONFLICT: False,
    ErrorCode.BUSY: True,
    ErrorCode.UNAUTHORIZED: False,
    ErrorCode.TIER_UNAVAILABLE: False,
    ErrorCode.WRONG_COORDINATOR: False,
    # Not resent by clients on their own: a full or failing disk is not mended in seconds, and resends until the
    # deadline would only hide it. Nothing of the request was applied, so the same id may be sent once it is.
    ErrorCode.STORAGE_FULL: False,
    ErrorCode.STORAGE_IO: False,
    ErrorCode.INTERNAL: True,
}


class ProtocolError(Exception):
    """Root of the protocol package's exceptions: a message that cannot be understood.

    Carries the error code the receiver should answer with and, when it could be read, the request id.
    """

    def __init__(self, code: ErrorCode, message: str, request_id: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id


class DecodeError(ProtocolError):
    """The bytes are not a msgpack map of the envelope's shape."""

    def __init__(self, message: str, request_id: str | None = None) -> None:
        super().__init__(ErrorCode.BAD_REQUEST, message, request_id)


class ValidationFailed(ProtocolError):
    """The envelope decoded, but a field is missing, mistyped or out of range."""
