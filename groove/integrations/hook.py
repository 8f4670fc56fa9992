"""`groove hook EVENT`: a coding agent's session hooks (Claude Code, Codex), answered from groove.

The agent runs the command with the event's JSON on stdin and reads what it prints:
- `SessionStart`: `inject.prepare` for the session's project (the git root of its `cwd`); the learnings go
  back as `hookSpecificOutput.additionalContext`, each with its id and the injection id to rate them by.
  The injection id is remembered for the session under the state directory, never in the repository. A
  session that starts again (`resume`, `compact`) is given the same learnings without a new injection.
- `UserPromptSubmit` (installed only with `--prompts`): the best matches for the prompt that this session
  was not already given, as additional context.
- `Stop`: the end of a turn, not of the session (both agents run it after every answer), so it only
  marks the session as active.
- `SessionEnd`: closes the injection with an unknown outcome (PROTOCOL.md, `outcome.record`): the
  learnings the agent did not rate through the MCP server's `end_session` count as ignored. An agent that
  already closed it gets nothing twice (`conflict` is the expected answer).
- `PostToolUse`: after each tool call, the nudges waiting for this agent (`nudge.poll`), acknowledged and
  given to the model as additional context, so a nudge sent while the agent works is in front of it at its
  next step. The agent is the one named by `GROOVE_AGENT_ID` (and `GROOVE_ROLE`) in the environment, as a
  swarm worker starts it or a person may; without it the hook answers nothing and connects to nothing.

A session a swarm worker runs carries `GROOVE_INJECTION_ID`: the worker prepared it (the learnings are in
the agent's prompt) and closes it, so the session hooks installed in the repository stand aside.
Sessions that never ended (Codex has no SessionEnd; a killed terminal sends none) are closed the same way
by the next SessionStart once idle for `STALE_AFTER_S`.

A hook must never block or break the user's session: a coordinator that is down or does not answer
within the timeout means no output and exit 0 (an injection still to close stays remembered and is closed
later). Bad input is one line on stderr and exit 1, which both agents show without stopping.

It runs before every session, so this module imports only the standard library, pyzmq and the protocol's
light modules (`protocol.envelope`, not pydantic): the CLI's entry point loads it without the other verbs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import socket
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

import zmq

from groove.protocol import constants as C
from groove.protocol.endpoints import check_endpoint
from groove.protocol.envelope import decode_reply, encode_request
from groove.protocol.errors import DecodeError, ErrorCode
from groove.protocol.keys import CurveClient

SESSION_START: Final = "SessionStart"
PROMPT_SUBMIT: Final = "UserPromptSubmit"
STOP: Final = "Stop"
SESSION_END: Final = "SessionEnd"
POST_TOOL_USE: Final = "PostToolUse"
EVENTS: Final = (SESSION_START, PROMPT_SUBMIT, STOP, SESSION_END, POST_TOOL_USE)
STALE_AFTER_S: Final = 12 * 3600  # a session idle this long is taken for ended
_SWEEP_AT_MOST: Final = 20  # stale sessions closed per SessionStart, so one start never waits on a backlog
_PROMPT_MATCHES: Final = 3
_MAX_INPUT_BYTES: Final = 1 << 20
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")


class HookError(Exception):
    """The hook's input or the coordinator's answer is unusable: one line for the agent to show."""


class Refused(Exception):
    """The coordinator answered with an error."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


class Unreachable(Exception):
    """The coordinator did not answer: the hook stays silent."""


def default_state_dir() -> Path:
    """Where groove keeps what its hooks and installs remember: `$XDG_STATE_HOME/groove`, by default
    `~/.local/state/groove` (outside every repository)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "groove"


@dataclass(frozen=True)
class HookInput:
    """The fields of the event's JSON the hook uses (the agents send more; the rest is ignored)."""

    session_id: str
    cwd: str
    source: str | None = None  # SessionStart: startup | resume | clear | compact
    prompt: str | None = None  # UserPromptSubmit

    @classmethod
    def read(cls, raw: bytes) -> HookInput:
        """Parse the event's JSON; raises HookError saying what is wrong."""
        if len(raw) > _MAX_INPUT_BYTES:
            raise HookError(f"the hook's input is {len(raw):,} bytes; at most {_MAX_INPUT_BYTES:,} are read")
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise HookError(f"the hook's input is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise HookError("the hook's input must be a JSON object with session_id and cwd")
        session_id, cwd = data.get("session_id"), data.get("cwd")
        if not isinstance(session_id, str) or not 0 < len(session_id) <= C.MAX_AGENT_FIELD_CHARS:
            raise HookError("the hook's input needs session_id, a non-empty string")
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            raise HookError("the hook's input needs cwd, an absolute path")
        source, prompt = data.get("source"), data.get("prompt")
        return cls(
            session_id,
            cwd,
            source if isinstance(source, str) else None,
            prompt if isinstance(prompt, str) and prompt.strip() else None,
        )


def project_root(cwd: str) -> str:
    """The repository a session works in: the nearest directory from `cwd` up holding `.git` (a directory, or
    a file in a worktree), else `cwd` itself."""
    path = Path(cwd)
    for candidate in (path, *path.parents):
        if (candidate / ".git").exists():
            return str(candidate)
    return str(path)


@dataclass
class Session:
    """What the hook remembers of one agent session."""

    session_id: str
    project: str
    injection_id: str | None = None
    context: str = ""  # what SessionStart answered, given again on resume
    given: list[str] = field(default_factory=list)  # learning ids this session was shown


class Sessions:
    """One JSON file per session under `<state>/sessions/`; a file's mtime is the session's last activity."""

    def __init__(self, state_dir: Path) -> None:
        self.dir = state_dir / "sessions"

    def _path(self, session_id: str) -> Path:
        name = session_id if _SAFE_NAME.match(session_id) else hashlib.sha256(session_id.encode()).hexdigest()[:32]
        return self.dir / f"{name}.json"

    def load(self, session_id: str) -> Session | None:
        """The remembered session, or None (never seen, or its file is unreadable)."""
        return self._read(self._path(session_id))

    @staticmethod
    def _read(path: Path) -> Session | None:
        try:
            return Session(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def save(self, session: Session) -> None:
        """Write atomically: an agent may run two hooks of one session at once."""
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self._path(session.session_id)
        tmp = path.with_suffix(f".{uuid.uuid4().hex}.tmp")
        tmp.write_text(json.dumps(asdict(session)))
        tmp.replace(path)

    def touch(self, session_id: str) -> None:
        """Mark the session active now."""
        with contextlib.suppress(OSError):  # a session never started here has nothing to mark
            os.utime(self._path(session_id))

    def forget(self, session_id: str) -> None:
        """Drop what is remembered of the session."""
        self._path(session_id).unlink(missing_ok=True)

    def stale(self, now: float, limit: int) -> Iterator[Session]:
        """Sessions idle for STALE_AFTER_S or more, oldest first, at most `limit`."""
        if not self.dir.is_dir():
            return
        aged = []
        for path in self.dir.glob("*.json"):
            with contextlib.suppress(OSError):
                mtime = path.stat().st_mtime
                if now - mtime >= STALE_AFTER_S:
                    aged.append((mtime, path))
        for _, path in sorted(aged)[:limit]:
            session = self._read(path)
            if session is not None:
                yield session
            else:
                path.unlink(missing_ok=True)


class Link(Protocol):
    """What a hook asks of groove, as the wire's maps: `Wire` talks to one coordinator, and with a cluster map
    `hookcluster.ClusterLink` routes the same calls over the cluster. Each raises Refused or Unreachable."""

    def inject(self, session_id: str, project: str) -> dict[str, Any]:
        """`inject.prepare` for a session in a project: the reply's body."""

    def search(self, text: str, limit: int, project: str) -> list[dict[str, Any]]:
        """`search` in a project's context: the results."""

    def close_session(self, injection_id: str, session_id: str) -> None:
        """`outcome.record` closing an injection with an unknown outcome."""

    def nudges(self, agent_id: str, role: str | None) -> list[dict[str, Any]]:
        """`nudge.poll` for an agent working (not idle): the nudges not yet delivered to it."""

    def ack(self, agent_id: str, ids: list[str]) -> None:
        """`nudge.ack` of nudges handed to the agent."""

    def close(self) -> None:
        """Close the connections."""


class Wire:
    """One request at a time to the coordinator over a DEALER socket, with the envelope of `protocol.envelope`.

    A hook makes one or two requests and exits within one deadline: a request not answered by then is
    Unreachable; one answered `busy` (or another retryable error) is sent again until then. A TCP endpoint
    that refuses connections is found out at once, instead of at the deadline (ZeroMQ would keep
    reconnecting in silence)."""

    def __init__(self, endpoint: str, curve: CurveClient | None, timeout: float) -> None:
        self.endpoint = check_endpoint(endpoint)
        self.curve = curve
        self.deadline = time.monotonic() + timeout
        self._socket: zmq.Socket[bytes] | None = None

    def _connect(self) -> zmq.Socket[bytes]:
        if self._socket is None:
            transport, _, address = self.endpoint.partition("://")
            if transport == "tcp":
                host, _, port = address.rpartition(":")
                try:
                    socket.create_connection((host.strip("[]"), int(port)), timeout=self._left()).close()
                except OSError:
                    raise Unreachable from None
            elif transport == "ipc" and not os.path.exists(address):
                raise Unreachable
            sock: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.DEALER)
            sock.linger = 0
            if self.curve is not None:
                self.curve.apply(sock)
            sock.connect(self.endpoint)
            self._socket = sock
        return self._socket

    def _left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise Unreachable
        return left

    def call(self, op: str, body: dict[str, Any]) -> dict[str, Any]:
        """The reply's body; raises Refused with the coordinator's error code, or Unreachable (also when the
        coordinator stays `busy` until the deadline: a hook waits for no backlog)."""
        sock = self._connect()
        request_id = str(uuid.uuid4())  # kept across a resend: a write is applied once (PROTOCOL.md, section 7)
        request = [b"", encode_request(request_id, op, body)]
        sock.send_multipart(request)
        while sock.poll(int(self._left() * 1000) + 1):
            try:
                reply = decode_reply(sock.recv_multipart()[-1])
            except DecodeError as exc:
                raise HookError(f"the coordinator's reply is unreadable: {exc}") from None
            if reply.id != request_id:  # an unsolicited push, or a reply to nothing of ours
                continue
            if reply.error is None:
                return reply.body
            if not reply.error.get("retryable"):
                raise Refused(str(reply.error["code"]), str(reply.error.get("message", "")))
            time.sleep(min(self._left(), max(0.01, reply.error.get("retry_after_ms", 50) / 1000)))
            sock.send_multipart(request)
        raise Unreachable

    def close(self) -> None:
        """Close the socket."""
        if self._socket is not None:
            self._socket.close(linger=0)

    def inject(self, session_id: str, project: str) -> dict[str, Any]:
        """`inject.prepare` for a session in a project: the reply's body."""
        return self.call(C.OP_INJECT_PREPARE, {"session_id": session_id, "context": {"project": project}})

    def search(self, text: str, limit: int, project: str) -> list[dict[str, Any]]:
        """`search` in a project's context: the results."""
        body = {"text": text, "limit": limit, "context": {"project": project}}
        results: list[dict[str, Any]] = self.call(C.OP_SEARCH, body)["results"]
        return results

    def close_session(self, injection_id: str, session_id: str) -> None:
        """`outcome.record` closing an injection with an unknown outcome."""
        self.call(C.OP_OUTCOME_RECORD, {"injection_id": injection_id, "session_id": session_id})

    def nudges(self, agent_id: str, role: str | None) -> list[dict[str, Any]]:
        """`nudge.poll` for an agent working (not idle): the nudges not yet delivered to it."""
        body: dict[str, Any] = {"agent_id": agent_id, "idle": False} | ({"role": role} if role else {})
        nudges: list[dict[str, Any]] = self.call(C.OP_NUDGE_POLL, body)["nudges"]
        return nudges

    def ack(self, agent_id: str, ids: list[str]) -> None:
        """`nudge.ack` of nudges handed to the agent."""
        self.call(C.OP_NUDGE_ACK, {"agent_id": agent_id, "ids": ids})


def additional_context(event: str, text: str) -> str:
    """The JSON both agents read from a SessionStart or UserPromptSubmit hook to add `text` to the context."""
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}})


def _learning_line(item: dict[str, Any]) -> str:
    learning = item["learning"]
    text = " ".join(f"**{learning['description']}** {learning['insight']}".split())
    return f"- {text} (id `{learning['id']}`, confidence {learning['confidence']:.2f})"


def learnings_block(learnings: list[dict[str, Any]]) -> list[str]:
    """The lines that give an agent its learnings, best first, each with its id and confidence."""
    return [
        "## Learnings from groove",
        "What other agents learned in this project, best first; follow them where they apply.",
        "",
        *(_learning_line(item) for item in learnings),
        "",
    ]


def session_context(injection_id: str, learnings: list[dict[str, Any]]) -> str:
    """What a SessionStart adds to the agent's context: the learnings, with their ids and how to rate them."""
    lines = [
        *learnings_block(learnings),
        f"When you finish, call the groove MCP tool `end_session` with injection_id `{injection_id}`, whether the "
        "task succeeded, and the ids of these learnings that helped (`helpful`) or were wrong here "
        "(`contradicted`); the others count as ignored. To rate one as you go, call `record_outcome` with this "
        "injection_id: a learning is counted once per session. Record what you learn with `record_learning`.",
    ]
    return "\n".join(lines)


def nudge_context(nudges: list[dict[str, Any]]) -> str:
    """What a PostToolUse adds: the nudges for the agent, most urgent first, with who sent them."""
    lines = ["## groove: nudges for you (from the swarm, while you work; act on them now)"]
    lines += [f"- ({n['priority']}) {n['message']} (from {n['created_by']})" for n in nudges]
    return "\n".join(lines)


def prompt_context(hits: list[dict[str, Any]]) -> str:
    """What a UserPromptSubmit adds: learnings matching the prompt that the session was not given yet."""
    return "\n".join(["## groove: learnings matching this prompt", *(_learning_line(hit) for hit in hits)])


class Hook:
    """One event of one session, against groove over `link` and the sessions remembered in `sessions`; `env`
    is the agent's environment (its identity, when a swarm worker started it)."""

    def __init__(self, link: Link, sessions: Sessions, now: float, env: Mapping[str, str]) -> None:
        self.link = link
        self.sessions = sessions
        self.now = now
        self.agent_id = env.get(C.ENV_AGENT_ID) or None
        self.role = env.get(C.ENV_ROLE) or None
        self.worker_session = bool(env.get(C.ENV_INJECTION_ID))

    def handle(self, event: str, given: HookInput) -> str | None:
        """What to print for the event (None: nothing). Raises HookError, Refused or Unreachable."""
        if event == POST_TOOL_USE:
            return self.nudged()
        if self.worker_session:  # the worker prepared this session and closes it
            return None
        if event == SESSION_START:
            return self.start(given)
        if event == PROMPT_SUBMIT:
            return self.prompt(given)
        if event == STOP:
            self.sessions.touch(given.session_id)
            return None
        self.end(given.session_id)
        return None

    def start(self, given: HookInput) -> str | None:
        """Prepare the session (or give a known one its learnings again), after closing stale sessions."""
        known = self.sessions.load(given.session_id)
        if known is not None:
            self.sessions.touch(given.session_id)
            return additional_context(SESSION_START, known.context) if known.context else None
        for stale in self.sessions.stale(self.now, _SWEEP_AT_MOST):
            try:
                self.end(stale.session_id)
            except Refused:  # another session's trouble must not cost this one its learnings
                self.sessions.forget(stale.session_id)
        project = project_root(given.cwd)
        reply = self.link.inject(given.session_id, project)
        learnings = reply["learnings"]
        context = session_context(reply["injection_id"], learnings) if learnings else ""
        given_ids = [item["learning"]["id"] for item in learnings]
        self.sessions.save(Session(given.session_id, project, reply["injection_id"], context, given_ids))
        return additional_context(SESSION_START, context) if context else None

    def nudged(self) -> str | None:
        """The agent's nudges not yet delivered, acknowledged: they are in front of its model now."""
        if self.agent_id is None:
            return None
        nudges = self.link.nudges(self.agent_id, self.role)
        if not nudges:
            return None
        self.link.ack(self.agent_id, [n["id"] for n in nudges])
        return additional_context(POST_TOOL_USE, nudge_context(nudges))

    def prompt(self, given: HookInput) -> str | None:
        """The prompt's best matches not shown to this session yet."""
        if given.prompt is None:
            return None
        session = self.sessions.load(given.session_id) or Session(given.session_id, project_root(given.cwd))
        limit = min(C.MAX_SEARCH_LIMIT, _PROMPT_MATCHES + len(session.given))
        found = self.link.search(given.prompt[: C.MAX_QUERY_CHARS], limit, session.project)
        hits = [h for h in found if h["learning"]["id"] not in session.given]
        hits = hits[:_PROMPT_MATCHES]
        if not hits:
            self.sessions.touch(given.session_id)
            return None
        session.given += [hit["learning"]["id"] for hit in hits]
        self.sessions.save(session)
        return additional_context(PROMPT_SUBMIT, prompt_context(hits))

    def end(self, session_id: str) -> None:
        """Close the session's injection with an unknown outcome, then forget the session. If the coordinator
        is unreachable the session stays remembered, for a later SessionStart to close."""
        session = self.sessions.load(session_id)
        if session is not None and session.injection_id is not None:
            try:
                self.link.close_session(session.injection_id, session_id)
            except Refused as exc:
                # conflict: the agent closed it with end_session; not_found: that coordinator never had it
                if exc.code not in (ErrorCode.CONFLICT, ErrorCode.NOT_FOUND):
                    raise
        self.sessions.forget(session_id)
