"""The README's "Use it from Claude Code", run the way Claude Code runs it: `groove hooks install` in a
repository, then the hook commands it wrote (through a shell, the event's JSON on stdin) and the MCP server it
registered (launched from `.mcp.json`, driven by the SDK's ClientSession), for two sessions: the first records
a learning, the second is given it and rates it, and its confidence moves."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult

from groove.swarm.coding import groove_argv
from tests.helpers import RunningCoordinator


def value(result: CallToolResult) -> Any:
    """What a tool returned."""
    assert not result.is_error, result.content
    content = result.structured_content
    assert content is not None
    return content


@pytest.mark.slow
def test_two_sessions_share_a_learning_rate_it_and_its_confidence_moves(
    coordinator: RunningCoordinator, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    repo = home / "src/shop"
    (repo / ".git").mkdir(parents=True)
    env = {**os.environ, "HOME": str(home), "GROOVE_STATE_DIR": str(tmp_path / "state"),
           "GROOVE_ENDPOINT": coordinator.endpoint}  # fmt: skip

    def groove(*args: str) -> str:
        done = subprocess.run(groove_argv(*args), cwd=repo, env=env, capture_output=True, text=True, timeout=120,
                              check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    # step 3: `groove hooks install` (the command is spelled out: `groove` need not be on this test's PATH)
    groove("hooks", "install", "--command", f"{sys.executable} -m groove.cli")
    hooks = json.loads((repo / ".claude/settings.json").read_text())["hooks"]
    command = {event: groups[0]["hooks"][0]["command"] for event, groups in hooks.items()}
    assert set(command) == {"SessionStart", "Stop", "SessionEnd"}
    server = json.loads((repo / ".mcp.json").read_text())["mcpServers"]["groove"]
    assert "@AGENTS.md" in (repo / "CLAUDE.md").read_text()

    def hook(event: str, session_id: str) -> str:
        """The hook as Claude Code runs it: through a shell, in the repository, the event on stdin."""
        given = {"session_id": session_id, "transcript_path": f"/tmp/{session_id}.jsonl", "cwd": str(repo),
                 "hook_event_name": event, "source": "startup", "reason": "prompt_input_exit"}  # fmt: skip
        done = subprocess.run(command[event], shell=True, input=json.dumps(given), cwd=repo, env=env,
                              capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        return done.stdout

    async def agent(work: Any) -> Any:
        params = StdioServerParameters(command=server["command"], args=server["args"], cwd=repo)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await work(session)

    # step 4, session 1: nothing to give yet; the agent records what it found
    assert hook("SessionStart", "session-1") == ""

    async def record(mcp: ClientSession) -> str:
        made = value(await mcp.call_tool("record_learning", {
            "description": "The orders tests hang when Redis is not running",
            "insight": "Start redis-server before running the orders tests",
            "category": "tool_usage", "project": str(repo),
        }))  # fmt: skip
        return str(made["id"])

    lid = anyio.run(agent, record)
    assert hook("Stop", "session-1") == ""
    assert hook("SessionEnd", "session-1") == ""

    # session 2 is given the learning with the injection id, follows it and says it helped
    started = json.loads(hook("SessionStart", "session-2"))["hookSpecificOutput"]
    assert started["hookEventName"] == "SessionStart"
    assert "Start redis-server before running the orders tests" in started["additionalContext"]
    assert lid in started["additionalContext"]
    found = re.search(r"injection_id `([0-9a-f-]+)`", started["additionalContext"])
    assert found is not None
    injection_id = found.group(1)

    async def rate(mcp: ClientSession) -> dict[str, Any]:
        ended = value(await mcp.call_tool("end_session", {"injection_id": injection_id, "success": True,
                                                          "helpful": [lid]}))  # fmt: skip
        assert ended == {"applied": 1, "ignored": 0, "rated_before": 0}
        shown = await mcp.read_resource(f"groove://session/{injection_id}")
        return dict(json.loads(shown.contents[0].text))  # type: ignore[union-attr]

    session = anyio.run(agent, rate)
    assert [g["id"] for g in session["learnings"]] == [lid]
    assert session["closed_at"] is not None
    assert hook("SessionEnd", "session-2") == ""  # already closed by the agent: nothing counted twice

    # step 5: its confidence moved
    stored = json.loads(groove("get", lid, "--json"))
    assert stored["usage"]["times_helpful"] == 1
    assert stored["usage"]["times_ignored"] == 0
    assert stored["confidence"] > 0.5
    assert "Start redis-server" in groove("search", "orders tests", "--project", ".")
