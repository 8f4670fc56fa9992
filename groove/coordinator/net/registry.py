"""The registry of agents that said `hello`, with last-seen times refreshed by every request and heartbeat."""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass

from groove.protocol import constants as C

MAX_AGENTS = 10_000  # agent records kept; past this the longest-silent are forgotten


@dataclass(slots=True)
class AgentRecord:
    """What the coordinator knows of one agent."""

    agent_id: str
    role: str
    pid: int
    host: str
    first_seen: float
    last_seen: float
    requests: int = 0
    peer: bytes = b""
    status: str = "idle"
    task_id: str | None = None
    # board tasks it ended since this coordinator started: counted by the acker thread only, on each ack
    tasks_completed: int = 0
    tasks_failed: int = 0


class AgentRegistry:
    """Agents by id, and which socket peer speaks for which agent. Written by the socket loop only."""

    def __init__(self) -> None:
        self._agents: dict[str, AgentRecord] = {}
        self._peers: dict[bytes, AgentRecord] = {}
        self._lock = threading.Lock()

    def hello(
        self,
        peer: bytes,
        agent_id: str,
        role: str,
        pid: int,
        host: str,
        now: float | None = None,
        status: str | None = None,
        task_id: str | None = None,
    ) -> None:
        """Register (or re-register, e.g. after a reconnect) an agent and bind it to the peer."""
        at = time.time() if now is None else now
        with self._lock:
            record = self._agents.get(agent_id)
            if record is None:
                record = AgentRecord(agent_id, role, pid, host, first_seen=at, last_seen=at)
                self._agents[agent_id] = record
            else:
                record.role, record.pid, record.host, record.last_seen = role, pid, host, at
                # a reconnect or restart arrives as a new peer: forget the old one, so peers do not pile up
                self._peers.pop(record.peer, None)
            record.peer = peer
            self._peers[peer] = record
            self._say(record, status, task_id)
            if len(self._agents) > MAX_AGENTS:
                self._forget_oldest()

    def _forget_oldest(self) -> None:
        # a flood of made-up agent ids must not grow memory without bound
        for record in sorted(self._agents.values(), key=lambda r: r.last_seen)[: len(self._agents) // 10]:
            del self._agents[record.agent_id]
            self._peers.pop(record.peer, None)

    def beat(
        self, agent_id: str, now: float | None = None, status: str | None = None, task_id: str | None = None
    ) -> bool:
        """A heartbeat from `agent_id`; False if it never said hello (e.g. this coordinator restarted since)."""
        record = self._agents.get(agent_id)
        if record is None:
            return False
        record.last_seen = time.time() if now is None else now
        self._say(record, status, task_id)
        return True

    @staticmethod
    def _say(record: AgentRecord, status: str | None, task_id: str | None) -> None:
        if status is not None:  # what it is doing: a status without a task means it holds none now
            record.status, record.task_id = status, task_id
        elif task_id is not None:
            record.task_id = task_id

    def peers_for(self, target: str, now: float | None = None) -> list[bytes]:
        """The connections of the alive agents a nudge's target names: one agent, `role:<role>` or `all`."""
        at = time.time() if now is None else now
        with self._lock:
            records = list(self._agents.values())
        role = target.removeprefix(C.NUDGE_TARGET_ROLE) if target.startswith(C.NUDGE_TARGET_ROLE) else None
        return [
            r.peer
            for r in records
            if at - r.last_seen <= C.AGENT_ALIVE_WINDOW_S
            and (target in (C.NUDGE_TARGET_ALL, r.agent_id) or r.role == role)
        ]

    def connection(self, agent_id: str) -> tuple[bytes, str] | None:
        """The peer the agent said `hello` on, and the role it said (None: an unknown agent)."""
        record = self._agents.get(agent_id)
        return None if record is None else (record.peer, record.role)

    def ended(self, agent_id: str, completed: bool) -> None:
        """The agent completed (or failed) a board task (acker thread)."""
        record = self._agents.get(agent_id)
        if record is not None:
            if completed:
                record.tasks_completed += 1
            else:
                record.tasks_failed += 1

    def gone(self, now: float | None = None) -> set[str]:
        """Agents not heard from within the alive window (read by the writer thread)."""
        at = time.time() if now is None else now
        with self._lock:
            records = list(self._agents.values())
        return {r.agent_id for r in records if at - r.last_seen > C.AGENT_ALIVE_WINDOW_S}

    def touch(self, peer: bytes, now: float | None = None) -> None:
        """A request arrived from `peer`: refresh its agent's last-seen time."""
        record = self._peers.get(peer)
        if record is not None:
            record.last_seen = time.time() if now is None else now
            record.requests += 1

    def listed(self, state: str | None = None, now: float | None = None) -> list[dict[str, object]]:
        """Every agent (or those in `state`: alive or gone), most recently seen first, as `agents.list` returns
        them. Gone: not heard from within AGENT_ALIVE_WINDOW_S, three heartbeat intervals."""
        at = time.time() if now is None else now
        with self._lock:
            records = sorted(self._agents.values(), key=lambda r: -r.last_seen)
        out = []
        for r in records:
            current = "alive" if at - r.last_seen <= C.AGENT_ALIVE_WINDOW_S else "gone"
            if state is None or state == current:
                row = asdict(r) | {"state": current}
                del row["peer"]
                out.append(row)
        return out

    def counts(self, now: float | None = None) -> tuple[int, int]:
        """(agents known, agents seen within the alive window)."""
        at = time.time() if now is None else now
        with self._lock:
            records = list(self._agents.values())
        alive = sum(1 for r in records if at - r.last_seen <= C.AGENT_ALIVE_WINDOW_S)
        return len(records), alive
