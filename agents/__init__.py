"""What agents use to talk to a groove coordinator: the client, its exceptions, and the worker process.

Imports only `protocol`; never the coordinator, never an embedding model.
"""

from agents.client import GrooveClient
from agents.errors import (
    BadEndpoint,
    BadRequest,
    Busy,
    Conflict,
    CoordinatorAbsent,
    GrooveError,
    GrooveTimeout,
    InternalError,
    NotFound,
    RemoteError,
    RequestTooLarge,
    StorageFull,
    StorageIO,
    TierUnavailable,
    Unauthorized,
    UnknownOp,
    UnsupportedVersion,
    WrongCoordinator,
)

__all__ = [
    "BadEndpoint",
    "BadRequest",
    "Busy",
    "Conflict",
    "CoordinatorAbsent",
    "GrooveClient",
    "GrooveError",
    "GrooveTimeout",
    "InternalError",
    "NotFound",
    "RemoteError",
    "RequestTooLarge",
    "StorageFull",
    "StorageIO",
    "TierUnavailable",
    "Unauthorized",
    "UnknownOp",
    "UnsupportedVersion",
    "WrongCoordinator",
]
