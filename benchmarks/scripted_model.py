"""A scripted model server on loopback, so the real coding agents (Claude Code, Codex) run offline: the figures
and tests that use it measure groove and the agents, never a model.

It speaks the two APIs the agents call, Anthropic's Messages API (`POST /v1/messages`, what Claude Code sends
to `ANTHROPIC_BASE_URL`) and OpenAI's Responses API (`POST /v1/responses`, a Codex `[model_providers]` entry
with `wire_api = "responses"`, or the OpenAI Agents SDK's Responses model), each streamed when asked (Claude
Code and Codex ask) and else one JSON reply, each reply from a script:

- A **scene** is chosen by the first of its `match` patterns (regular expressions) found in the request's
  text (system prompt and messages together); the first scene that matches wins, else the default scene.
- A scene's **turns** are its replies in order: the reply to a request is turn N, where N is the number of
  assistant turns already in the conversation the request carries. Both agents send the whole conversation
  each time, so the server keeps no state per conversation and a retried request gets the same reply.
- A turn is `{"text": "..."}` (the answer, ending the turn), `{"tool": NAME, "input": {...}}` or
  `{"tools": [...]}` (tool calls; the agent runs them and comes back with their results), `{"error": STATUS}`
  (an HTTP error), or adds `"delay": SECONDS` to wait first (a slow or hung model). Past the last turn the
  scene answers its final text.
- Strings in a turn may name `{field}`s: the first capture of each pattern in `fields`, searched in the
  request's text (e.g. the task id the worker's prompt names, or a learning id the session was given).

Every request is logged (`requests`), so a test can assert what the model was shown, and when.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final

MESSAGES_PATH: Final = "/v1/messages"
RESPONSES_PATH: Final = "/v1/responses"
MODEL: Final = "scripted-model"
DONE_TEXT: Final = "Done."
# what the agents' side requests (titles, summaries, quota probes) get: they carry no tools
_SIDE_TEXT: Final = "ok"
MCP_TOOL: Final = re.compile(r"mcp__([A-Za-z0-9_-]+?)__(\w+)")


@dataclass
class Scene:
    """One conversation's replies, chosen by the first pattern of `match` found in a request."""

    match: list[str]
    turns: list[dict[str, Any]]
    final: str = DONE_TEXT

    def turn(self, n: int) -> dict[str, Any]:
        """The reply to a request with `n` assistant turns before it."""
        return self.turns[n] if n < len(self.turns) else {"text": self.final}


@dataclass
class Script:
    """Scenes tried in order, the default for a request no scene matches, and the named fields."""

    scenes: list[Scene] = field(default_factory=list)
    default: Scene = field(default_factory=lambda: Scene([], []))
    fields: dict[str, str] = field(default_factory=dict)  # name -> a pattern whose first group is the value

    def scene(self, text: str) -> Scene:
        """The scene for a request's text."""
        for scene in self.scenes:
            if any(re.search(pattern, text) for pattern in scene.match):
                return scene
        return self.default

    def fill(self, value: Any, text: str) -> Any:
        """`value` with each `{field}` in its strings replaced by that field's value found in `text`."""
        if isinstance(value, str):
            return re.sub(r"\{(\w+)\}", lambda m: self._field(m.group(1), text) or m.group(0), value)
        if isinstance(value, list):
            return [self.fill(v, text) for v in value]
        if isinstance(value, dict):
            return {k: self.fill(v, text) for k, v in value.items()}
        return value

    def _field(self, name: str, text: str) -> str | None:
        pattern = self.fields.get(name)
        found = re.search(pattern, text) if pattern is not None else None
        return found.group(1) if found else None


@dataclass(frozen=True)
class Logged:
    """One request the server answered: when, which API, the body, the scene's turn given."""

    at: float  # time.time()
    path: str
    body: dict[str, Any]
    text: str  # the request's text, as scenes and fields search it
    turn: dict[str, Any]


def request_text(body: dict[str, Any]) -> str:
    """Everything a request shows the model, as one string: the system prompt and every message's text,
    tool results included (Messages: `system` + `messages`; Responses: `instructions` + `input`)."""
    parts: list[str] = []
    _collect(body.get("system"), parts)
    _collect(body.get("instructions"), parts)
    _collect(body.get("messages"), parts)
    _collect(body.get("input"), parts)
    return "\n".join(parts)


def _collect(value: Any, parts: list[str]) -> None:
    if isinstance(value, str):
        parts.append(value)
    elif isinstance(value, list):
        for item in value:
            _collect(item, parts)
    elif isinstance(value, dict):
        for key in ("text", "content", "output", "arguments", "input"):
            if key in value:  # a tool call's `input` map is shown as its JSON
                inner = value[key]
                _collect(inner if key != "input" or isinstance(inner, list) else json.dumps(inner), parts)


def assistant_turns(path: str, body: dict[str, Any]) -> int:
    """How many times the model has already answered in the conversation a request carries (a Responses
    request's consecutive function calls are one answer, as a Messages reply's tool_use blocks are)."""
    if path == MESSAGES_PATH:
        return sum(1 for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "assistant")
    turns, previous_was_answer = 0, False
    for item in body.get("input", []) if isinstance(body.get("input"), list) else []:
        answer = isinstance(item, dict) and (
            item.get("type") == "function_call" or (item.get("type") == "message" and item.get("role") == "assistant")
        )
        if answer and not previous_was_answer:
            turns += 1
        previous_was_answer = answer and item.get("type") == "function_call"
    return turns


class ScriptedModel:
    """The server, on a thread: `with ScriptedModel(script) as model:` then point an agent at `model.url`."""

    def __init__(self, script: Script, host: str = "127.0.0.1", port: int = 0) -> None:
        self.script = script
        self.requests: list[Logged] = []
        self._lock = threading.Lock()
        self._server = _Server((host, port), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, name="scripted-model", daemon=True)

    @property
    def url(self) -> str:
        """The server's base URL (Claude Code's ANTHROPIC_BASE_URL; Codex's base_url adds `/v1`)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> ScriptedModel:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()

    def environment(self, home: Path) -> dict[str, str]:
        """The environment that points both agents at this server, with nothing of the machine's own
        configuration: `home` as HOME, a CODEX_HOME under it whose config.toml names this server as the
        provider (Codex reads its providers only from there), any API key."""
        codex_home = home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        (codex_home / "config.toml").write_text(
            f'model_provider = "scripted"\nmodel = "{MODEL}"\n'
            f'[model_providers.scripted]\nname = "scripted"\nbase_url = "{self.url}/v1"\n'
            'wire_api = "responses"\nenv_key = "SCRIPTED_MODEL_KEY"\n'
        )
        return {
            "HOME": str(home),
            "CODEX_HOME": str(codex_home),
            "SCRIPTED_MODEL_KEY": "offline",
            "ANTHROPIC_BASE_URL": self.url,
            "ANTHROPIC_API_KEY": "offline",
            "DISABLE_AUTOUPDATER": "1",
        }

    def answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The turn for a request (logged), its `{field}`s filled."""
        text = request_text(body)
        if not body.get("tools"):  # an agent's side request (a title, a summary): not the conversation
            turn: dict[str, Any] = {"text": _SIDE_TEXT}
        else:
            turn = self.script.fill(self.script.scene(text).turn(assistant_turns(path, body)), text)
        with self._lock:
            self.requests.append(Logged(time.time(), path, body, text, turn))
        return turn

    def seen(self, pattern: str) -> Iterator[Logged]:
        """The logged conversation requests (those offering tools) whose text matches `pattern`."""
        with self._lock:
            logged = list(self.requests)
        return (r for r in logged if r.body.get("tools") and re.search(pattern, r.text))


# --- the two APIs' reply shapes ------------------------------------------------------------------------


SHELL_TOOLS: Final = {MESSAGES_PATH: ("Bash", "command"), RESPONSES_PATH: ("exec_command", "cmd")}


def _tool_calls(turn: dict[str, Any], path: str) -> list[dict[str, Any]]:
    """The turn's tool calls; `{"shell": CMD}` becomes the agent's own shell tool (Claude Code's Bash, Codex's
    exec_command)."""
    calls = [{"name": turn["tool"], "input": turn.get("input", {})}] if "tool" in turn else list(turn.get("tools", []))
    if "shell" in turn:
        name, argument = SHELL_TOOLS[path]
        calls.append({"name": name, "input": {argument: turn["shell"]}})
    return calls


def messages_reply(turn: dict[str, Any]) -> dict[str, Any]:
    """A Messages API reply (not streamed) for a turn."""
    calls = _tool_calls(turn, MESSAGES_PATH)
    content: list[dict[str, Any]] = [{"type": "text", "text": turn["text"]}] if "text" in turn else []
    content += [
        {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}", "name": c["name"], "input": c["input"]}
        for c in calls
    ]
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }


def messages_events(reply: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A Messages API reply as the server-sent events of a streamed one (`"stream": true`)."""
    head = reply | {"content": [], "stop_reason": None}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": head})]
    for index, block in enumerate(reply["content"]):
        if block["type"] == "text":
            start, delta = block | {"text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            arguments = json.dumps(block["input"])
            start, delta = block | {"input": {}}, {"type": "input_json_delta", "partial_json": arguments}
        events += [
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}),
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    stop = {"stop_reason": reply["stop_reason"], "stop_sequence": None}
    events.append(("message_delta", {"type": "message_delta", "delta": stop, "usage": reply["usage"]}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def responses_reply(turn: dict[str, Any]) -> dict[str, Any]:
    """A Responses API reply (not streamed, as the OpenAI Agents SDK's `Runner.run` asks) for a turn."""
    usage = {
        "input_tokens": 10,
        "output_tokens": 10,
        "total_tokens": 20,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    return {
        "id": f"resp_{uuid.uuid4().hex[:24]}",
        "object": "response",
        "created_at": int(time.time()),
        "model": MODEL,
        "status": "completed",
        "output": _responses_items(turn),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }


def responses_events(turn: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The Responses API's server-sent events for a turn: created, each output item, completed."""
    response_id = f"resp_{uuid.uuid4().hex[:24]}"
    usage = {"input_tokens": 10, "output_tokens": 10, "total_tokens": 20}
    return [
        ("response.created", {"type": "response.created", "response": {"id": response_id}}),
        *(
            ("response.output_item.done", {"type": "response.output_item.done", "item": i})
            for i in _responses_items(turn)
        ),
        ("response.completed", {"type": "response.completed", "response": {"id": response_id, "usage": usage}}),
    ]


def _responses_items(turn: dict[str, Any]) -> list[dict[str, Any]]:
    """A turn's output items: its text as a message, each tool call as a function call. Codex offers an MCP
    server's tools in a namespace (`mcp__groove`): a call of `mcp__groove__X` is `X` in that namespace."""
    items: list[dict[str, Any]] = []
    if "text" in turn:
        items.append(
            {
                "type": "message",
                "role": "assistant",
                "id": f"msg_{uuid.uuid4().hex[:24]}",
                "content": [{"type": "output_text", "text": turn["text"]}],
            }
        )
    for call in _tool_calls(turn, RESPONSES_PATH):
        item = {
            "type": "function_call",
            "id": f"fc_{uuid.uuid4().hex[:24]}",
            "call_id": f"call_{uuid.uuid4().hex[:24]}",
            "name": call["name"],
            "arguments": json.dumps(call["input"]),
        }
        if (found := MCP_TOOL.fullmatch(call["name"])) is not None:
            item |= {"namespace": f"mcp__{found.group(1)}", "name": found.group(2)}
        items.append(item)
    return items


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """An agent killed mid-request resets its connection: nothing to report."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _handler(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_: Any) -> None:  # the log is `model.requests`, not stderr
            return

        def do_POST(self) -> None:
            path = self.path.split("?", 1)[0]
            length = int(self.headers.get("content-length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self._send(400, "application/json", b'{"error": "not JSON"}')
                return
            if path.endswith("/count_tokens"):
                self._send(200, "application/json", b'{"input_tokens": 10}')
                return
            if path not in (MESSAGES_PATH, RESPONSES_PATH):
                self._send(404, "application/json", b'{"error": "no such API here"}')
                return
            turn = model.answer(path, body)
            if turn.get("delay"):
                time.sleep(float(turn["delay"]))
            if "error" in turn:
                error = {"type": "error", "error": {"type": "api_error", "message": "scripted failure"}}
                self._send(int(turn["error"]), "application/json", json.dumps(error).encode())
                return
            if not body.get("stream"):
                reply = messages_reply(turn) if path == MESSAGES_PATH else responses_reply(turn)
                self._send(200, "application/json", json.dumps(reply).encode())
                return
            stream = messages_events(messages_reply(turn)) if path == MESSAGES_PATH else responses_events(turn)
            events = "".join(f"event: {kind}\ndata: {json.dumps(data)}\n\n" for kind, data in stream)
            self._send(200, "text/event-stream", events.encode())

        def _send(self, status: int, kind: str, payload: bytes) -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler
