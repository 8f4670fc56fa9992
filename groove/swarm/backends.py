"""Where a fleet's workers run: `local` processes on this host (the default) or `ray` actors over a cluster.

Kept apart from both backends so that choosing `local` never imports Ray, an optional extra.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from groove.protocol.keys import CurveClient
from groove.swarm.fleet import Fleet, FleetBase, FleetError

LOCAL, RAY = "local", "ray"
BACKENDS = (LOCAL, RAY)


def open_fleet(
    backend: str,
    endpoint: str,
    workdir: Path,
    *,
    agents: int,
    timeout: float = 30.0,
    curve: CurveClient | None = None,
    **ray_options: Any,
) -> FleetBase:
    """A fleet of `backend` for up to `agents` workers, talking CURVE with `curve`'s keys if given (either
    backend); `ray_options` (address, cpus_per_agent) are RayFleet's and must be absent for the local backend."""
    if backend == LOCAL:
        if ray_options:
            raise ValueError(f"{', '.join(sorted(ray_options))}: only for the {RAY} backend")
        return Fleet(endpoint, workdir, timeout=timeout, curve=curve)
    if backend == RAY:
        try:
            from groove.swarm.rayfleet import RayFleet  # noqa: PLC0415  (imported only when chosen)
        except ImportError as exc:
            raise FleetError(f"the {RAY} backend needs Ray ({exc}): pip install 'groove[ray]'") from None

        return RayFleet(endpoint, workdir, agents=agents, timeout=timeout, curve=curve, **ray_options)
    raise ValueError(f"unknown backend {backend!r}: expected one of {', '.join(BACKENDS)}")
