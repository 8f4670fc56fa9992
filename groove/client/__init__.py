"""What agents use to talk to a groove coordinator: the client (sync, async, over a cluster) and its exceptions.

Imports only `protocol`: never the swarm runtime (`groove.swarm`), the coordinator or an embedding model.
`AsyncGrooveClient` is imported on first use: a synchronous agent never loads asyncio.
"""

from typing import TYPE_CHECKING, Any

from groove.client.client import GrooveClient
from groove.client.errors import (
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
    Stopped,
    StorageFull,
    StorageIO,
    TierUnavailable,
    Unauthorized,
    UnknownOp,
    UnsupportedVersion,
    WrongCoordinator,
)

if TYPE_CHECKING:
    from groove.client.asyncclient import AsyncGrooveClient


def __getattr__(name: str) -> Any:
    if name == "AsyncGrooveClient":
        from groove.client.asyncclient import AsyncGrooveClient  # noqa: PLC0415 - asyncio only for those who use it

        return AsyncGrooveClient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AsyncGrooveClient",
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
    "Stopped",
    "StorageFull",
    "StorageIO",
    "TierUnavailable",
    "Unauthorized",
    "UnknownOp",
    "UnsupportedVersion",
    "WrongCoordinator",
]
