"""groove: shared memory and a coordinator for swarms of AI coding agents.

Everything groove installs lives under this one package: `groove.protocol` (the wire format and its models),
`groove.client` (the clients and their errors), `groove.swarm` (workers, fleets, the orchestrator),
`groove.coordinator`, `groove.cli`, `groove.integrations` and `groove.ui`, each the directory of that name here and
imported only by that name.

    from groove import GrooveClient, AsyncGrooveClient, NotFound

The names below are loaded on first use: `groove.coordinator`'s processes import this package too, and need
none of the client's modules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groove.client import (
        AsyncGrooveClient,
        BadEndpoint,
        BadRequest,
        Busy,
        Conflict,
        CoordinatorAbsent,
        GrooveClient,
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


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("groove.client"), name)
    raise AttributeError(f"module 'groove' has no attribute {name!r}")
