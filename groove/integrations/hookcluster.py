"""The hook's calls over a cluster map (`groove hook --cluster FILE`, or GROOVE_CLUSTER): the same three calls
as `hook.Wire`, made through GrooveCluster. A session in a project another coordinator owns is then injected
from both tiers, and its outcome closed on both (PROTOCOL.md, section 11).

A module of its own, imported only when a map is given: it brings the client and pydantic, which the hook's
usual path, one coordinator over `Wire`, does without.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from groove.client.cluster import GrooveCluster
from groove.client.errors import GrooveError, GrooveTimeout, RemoteError
from groove.integrations.hook import HookError, Refused, Unreachable
from groove.protocol.cluster import ClusterMap
from groove.protocol.keys import CurveClient

T = TypeVar("T")


class ClusterLink:
    """`hook.Link` over every coordinator of a cluster map."""

    def __init__(self, cluster: ClusterMap, curve: CurveClient | None, timeout: float) -> None:
        self.cluster = GrooveCluster(cluster, timeout=timeout, curve=curve)

    def inject(self, session_id: str, project: str) -> dict[str, Any]:
        """`inject.prepare` for a session in a project, its candidates gathered from the tiers' owners."""
        return _mapped(lambda: self.cluster.inject(session_id, project=project).model_dump())

    def search(self, text: str, limit: int, project: str) -> list[dict[str, Any]]:
        """`search` in a project's context, merged from the tiers' owners."""
        return _mapped(lambda: [hit.model_dump() for hit in self.cluster.search(text, limit=limit, project=project)])

    def close_session(self, injection_id: str, session_id: str) -> None:
        """`outcome.record` closing an injection with an unknown outcome, on the home and each owner."""
        _mapped(lambda: self.cluster.close_session(injection_id=injection_id, session_id=session_id))

    def nudges(self, agent_id: str, role: str | None) -> list[dict[str, Any]]:
        """`nudge.poll` on the home coordinator, which holds the board."""
        home = self.cluster.clients[self.cluster.map.home]
        return _mapped(lambda: [n.model_dump() for n in home.poll_nudges(agent_id, role)])

    def ack(self, agent_id: str, ids: list[str]) -> None:
        """`nudge.ack` on the home coordinator."""
        home = self.cluster.clients[self.cluster.map.home]
        _mapped(lambda: home.ack_nudges(agent_id, ids))

    def close(self) -> None:
        """Close every connection."""
        self.cluster.close()


def _mapped(call: Callable[[], T]) -> T:
    """The client's errors as the hook's: an unanswered call is Unreachable, an error answer Refused."""
    try:
        return call()
    except GrooveTimeout:
        raise Unreachable from None
    except RemoteError as exc:
        raise Refused(exc.code, exc.message) from None
    except GrooveError as exc:
        raise HookError(str(exc)) from None
