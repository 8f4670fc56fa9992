"""How a swarm worker runs a real coding agent headless on one task: Claude Code (`claude -p`) or Codex
(`codex exec`), in the task's git worktree, with groove's hooks and MCP server configured for that run only.

Nothing is written into the worktree or the user's configuration: Claude Code takes the hooks (`--settings`)
and the MCP server (`--mcp-config`) as arguments, Codex takes both as `-c` overrides. Codex runs a hook only
once a person has reviewed it, or with `--dangerously-bypass-hook-trust`, which its help reserves for
automation that vets its own hook sources: the worker wrote these hooks itself, so it passes the flag.

The agent learns who it is from its environment (`Identity.env`): groove's PostToolUse hook reads the agent
id there to hand the agent its nudges at its next tool call, and the set injection id tells groove's session
hooks, if the repository also has them installed, that the worker prepares and closes this session itself.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from typing import Any, Final

from groove.client.errors import GrooveError
from groove.protocol import constants as C

CLAUDE, CODEX = "claude", "codex"
CODING_AGENTS: Final = (CLAUDE, CODEX)
POST_TOOL_USE: Final = "PostToolUse"
# What a Claude Code worker may do without a person to ask (`-p` refuses anything else; as root Claude Code
# refuses to skip permissions altogether): edit the worktree, run commands, use groove's tools.
CLAUDE_TOOLS: Final = "Bash,Edit,MultiEdit,Write,Read,Glob,Grep,NotebookEdit,TodoWrite,mcp__groove__*"
AGENT_TIMEOUT_S: Final = 1800.0  # what one task's agent may take by default before it is stopped (and the task failed)
_HOOK_TIMEOUT_S: Final = 10
# the first turn may already call groove's tools, and the agents only offer tools their MCP servers listed
_MCP_STARTUP_TIMEOUT_S: Final = 20


def groove_argv(*args: str) -> list[str]:
    """The command line that runs `groove ARGS` with this interpreter."""
    return [sys.executable, "-m", "groove.cli", *args]


class AgentNotFound(GrooveError):
    """The coding agent's program is not installed where it was looked for."""


def find_binary(agent: str, given: str | None = None) -> str:
    """The agent's program: `given` (a path or a name on PATH), else `claude` / `codex` on PATH. Raises
    AgentNotFound with what to install."""
    name = given or agent
    found = shutil.which(name)
    if found is None:
        package = "@anthropic-ai/claude-code" if agent == CLAUDE else "@openai/codex"
        raise AgentNotFound(
            f"{name!r} not found{'' if os.sep in name else ' on PATH'}: install {package} "
            f"(npm install -g {package}) or give the program's path with --agent-binary"
        )
    return found


@dataclass(frozen=True)
class Identity:
    """Who the agent is working for, handed to it (and to groove's hooks in it) through the environment."""

    agent_id: str
    memory_id: str
    task_id: str
    injection_id: str
    role: str | None = None

    def env(self) -> dict[str, str]:
        """The environment variables that carry it."""
        env = {
            C.ENV_AGENT_ID: self.agent_id,
            C.ENV_MEMORY_ID: self.memory_id,
            C.ENV_TASK_ID: self.task_id,
            C.ENV_INJECTION_ID: self.injection_id,
        }
        return env | ({C.ENV_ROLE: self.role} if self.role else {})


@dataclass(frozen=True)
class Launch:
    """How to start the agent: its command line and the environment added to the worker's."""

    argv: list[str]
    env: dict[str, str]


def launch(agent: str, binary: str, prompt: str, identity: Identity, connection: list[str]) -> Launch:
    """The command that runs `agent` headless on `prompt`, with groove's PostToolUse hook and MCP server;
    `connection` are the connection options every groove command gets (`--endpoint URL`, ...)."""
    # the agents run a hook through a shell: single quotes keep a key's `$` or `!` from being expanded
    hook = shlex.join(groove_argv("hook", POST_TOOL_USE, *connection))
    server = groove_argv("mcp", *connection)
    env = identity.env()
    if agent == CLAUDE:
        settings = {"hooks": {POST_TOOL_USE: [{"matcher": "", "hooks": [_command_hook(hook)]}]}}
        mcp = {"mcpServers": {"groove": {"command": server[0], "args": server[1:]}}}
        argv = [binary, "-p", prompt, "--output-format", "stream-json", "--verbose",
                "--settings", json.dumps(settings), "--mcp-config", json.dumps(mcp),
                "--allowedTools", CLAUDE_TOOLS, "--permission-mode", "acceptEdits"]  # fmt: skip
        # groove's tools offered by name from the first turn, not deferred behind Claude Code's tool search
        return Launch(argv, env | {"ENABLE_TOOL_SEARCH": "false", "MCP_TIMEOUT": str(_MCP_STARTUP_TIMEOUT_S * 1000)})
    hooks = "{" + POST_TOOL_USE + "=[{hooks=[" + _toml_inline(_command_hook(hook)) + "]}]}"
    overrides = {
        "features.hooks": "true",
        "hooks": hooks,
        "mcp_servers.groove.command": json.dumps(server[0]),
        "mcp_servers.groove.args": json.dumps(server[1:]),
        "mcp_servers.groove.startup_timeout_sec": str(_MCP_STARTUP_TIMEOUT_S),
        "mcp_servers.groove.required": "true",  # wait for its tools before the first turn, which may call them
        "mcp_servers.groove.default_tools_approval_mode": '"approve"',  # `exec` has no one to ask
    }
    argv = [binary, "exec", "--json", "--dangerously-bypass-hook-trust", "--sandbox", "workspace-write",
            "--skip-git-repo-check"]  # fmt: skip
    for key, value in overrides.items():
        argv += ["-c", f"{key}={value}"]
    return Launch([*argv, prompt], env)


def _command_hook(command: str) -> dict[str, Any]:
    return {"type": "command", "command": command, "timeout": _HOOK_TIMEOUT_S}


def _toml_inline(table: dict[str, Any]) -> str:
    """A flat map as a TOML inline table (strings are JSON-quoted, which TOML reads the same)."""
    return "{" + ",".join(f"{k}={json.dumps(v)}" for k, v in table.items()) + "}"


@dataclass(frozen=True)
class Ending:
    """What the agent's output said at its end: its final message, and its error if it reported one."""

    message: str
    error: str | None


def read_ending(agent: str, output: str) -> Ending:
    """The final message and error in the agent's JSON-lines output (Claude Code's `stream-json`, whose last
    `result` event has both; Codex's `--json`, whose last `agent_message` is the answer and whose
    `turn.failed` or `error` events say what went wrong)."""
    message, error = "", None
    for line in output.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if agent == CLAUDE and kind == "result":
            message = str(event.get("result") or "")
            error = message or str(event.get("subtype")) if event.get("is_error") else None
        elif agent == CODEX:
            item: dict[str, Any] = event["item"] if isinstance(event.get("item"), dict) else {}
            if kind == "item.completed" and item.get("type") == "agent_message":
                message = str(item.get("text") or "")
            elif kind == "turn.failed":
                error = str((event.get("error") or {}).get("message") or "the turn failed")
            elif kind == "error":
                error = str(event.get("message") or "error")
    return Ending(message.strip(), error)


@dataclass(frozen=True)
class Given:
    """A learning a session was given, as the agent is shown it."""

    id: str
    description: str
    insight: str


def prompt_for(title: str, description: str, given: list[Given], board: str, identity: Identity, branch: str) -> str:
    """What the agent is asked to do: its task, the learnings chosen for it (with the ids to rate them by), the
    board's context, and how to finish."""
    learnings = [f"- **{' '.join(g.description.split())}** {' '.join(g.insight.split())} (id `{g.id}`)" for g in given]
    return "\n".join(
        [
            f"You are agent `{identity.agent_id}`, working task `{identity.task_id}` of the groove working "
            f"memory `{identity.memory_id}`.",
            "",
            f"# Task: {title}",
            *([description] if description else []),
            "",
            "## Learnings from groove",
            "What other agents learned in this project, best first; follow them where they apply.",
            *(learnings or ["_None matched this task yet._"]),
            board.rstrip(),
            "",
            "## When you are done",
            f"- Call the groove MCP tool `complete_task` with task_id `{identity.task_id}`, agent_id "
            f"`{identity.agent_id}` and a summary of what you did; if you cannot do the task, call `fail_task` "
            "with the error instead.",
            f"- Rate the learnings above with `end_session` (injection_id `{identity.injection_id}`): which helped, "
            "which were wrong here. Record what the next agent should know with `record_learning`.",
            f"- Work in this directory; whatever you leave uncommitted is committed on branch `{branch}` when you "
            "finish.",
        ]
    )
