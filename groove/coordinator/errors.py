"""The coordinator's exceptions. Each that reaches a client carries the protocol error code it becomes."""

from __future__ import annotations

from groove.coordinator.wire.digests import comparable
from groove.protocol.errors import ErrorCode


class CoordinatorError(Exception):
    """Root of the coordinator's exceptions."""


class ConfigError(CoordinatorError):
    """A setting is missing, unknown or out of range; raised at start-up, before anything is opened."""


class StorageError(CoordinatorError):
    """A tier could not be opened, migrated or written."""


class EmbeddingUnavailable(CoordinatorError):
    """No embedding worker could embed a query in time: the search goes on by its words."""


class DamagedIndex(CoordinatorError):
    """A saved derived index's files do not make the index they claim to (`search/saved.py`): it is rebuilt."""


class DataDirLocked(StorageError):
    """Another process (a coordinator, or an offline restore) holds the data directory."""


class Rejected(CoordinatorError):
    """A request that cannot be served as asked; the client gets `code` and the message."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.detail: dict[str, str] = {}  # the code's own fields in the error map


class WrongCoordinator(Rejected):
    """A write to a tier another coordinator of the cluster owns (the client's map is stale or wrong)."""

    def __init__(self, tier: str, owner: str, me: str) -> None:
        super().__init__(
            ErrorCode.WRONG_COORDINATOR,
            f"tier {tier!r} is written by coordinator {owner!r}, not by this one ({me!r}); update the cluster map",
        )
        self.detail = {"owner": owner}


class DiskFault(Rejected):
    """A tier's disk refuses writes (full, read-only, gone): `storage_full` or `storage_io`, the operating
    system's words; raised for every request touching the tier until a commit to it succeeds again."""


class TierUnavailable(Rejected):
    """A tier whose files could not be opened: its requests fail, every other tier keeps serving."""

    def __init__(self, tier: str, reason: str) -> None:
        super().__init__(ErrorCode.TIER_UNAVAILABLE, f"tier {tier!r} is unavailable: {reason}")
        self.tier = tier
        self.reason = reason


def not_found(learning_id: str) -> Rejected:
    """The rejection for an id no tier holds."""
    return Rejected(ErrorCode.NOT_FOUND, f"no learning with id {learning_id}")


def already_closed(injection_id: str) -> Rejected:
    """The rejection for a second outcome of one injection."""
    return Rejected(ErrorCode.CONFLICT, f"the outcome of injection {injection_id} was already recorded")


def reused_id(request_id: str, first_op: str, first_digest: str, op: str, digest: str) -> Rejected | None:
    """Why a write's request id seen before cannot be answered with its first reply, or None if it can: another
    operation is `bad_request`, another body (by `protocol.digests.body_digest`) is `conflict`; an id names one
    request, so nothing is changed. Digests are compared only where `protocol.digests.comparable` says so."""
    if first_op != op:
        return Rejected(
            ErrorCode.BAD_REQUEST, f"request id {request_id} was already used for {first_op}; use a new id per request"
        )
    if first_digest != digest and comparable(first_digest, digest):
        return Rejected(
            ErrorCode.CONFLICT,
            f"request id {request_id} was already used with a different body; a resend must repeat its request "
            "exactly (nothing was changed): give a new request a new id",
        )
    return None
