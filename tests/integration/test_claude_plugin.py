"""The `groove` Claude Code plugin with the real Claude Code (installed by `make`), offline against the scripted
model: the repository is added as a marketplace and the plugin installed, as a person does; a headless session
is given the project's learning by the plugin's SessionStart hook and records a new one through the plugin's MCP
server; the next session is given that one; uninstalling leaves no trace of groove in Claude Code's settings,
and a session after it reaches no coordinator."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.scripted_model import Scene, Script, ScriptedModel
from groove.client import GrooveClient
from groove.integrations.plugin import PLUGIN_DIR, TOOL_PREFIX
from tests.helpers import ROOT, RunningCoordinator
from tests.realagents import FIELDS, agent_env, binary, git_repo

pytestmark = pytest.mark.slow

VENV_BIN = Path(sys.executable).parent  # where `groove` is installed beside this interpreter


def claude(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the real `claude` with `args`; fails the test on a non-zero exit."""
    done = subprocess.run([str(binary("claude")), *args], cwd=cwd, env=os.environ | env, capture_output=True,
                          text=True, timeout=180, check=False, stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.returncode == 0, f"claude {' '.join(args)}: {done.stdout[-2000:]} {done.stderr[-2000:]}"
    return done


def session(prompt: str, env: dict[str, str], repo: Path) -> None:
    """A headless session in `repo` that may use groove's MCP tools without asking."""
    claude("-p", prompt, "--output-format", "json", "--allowedTools", f"{TOOL_PREFIX}*", env=env, cwd=repo)


def test_claude_code_finds_the_marketplace_and_its_plugin_valid(tmp_path: Path) -> None:
    for path in (ROOT, ROOT / PLUGIN_DIR):
        checked = claude("plugin", "validate", "--strict", str(path), env={"HOME": str(tmp_path)}, cwd=tmp_path)
        assert "Validation passed" in checked.stdout


def test_the_plugin_brings_groove_into_every_session_and_leaves_nothing_when_uninstalled(
    coordinator: RunningCoordinator, client: GrooveClient, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    repo = git_repo(tmp_path / "shop")
    first = client.learn(f"project:{repo}", "solution", "orders tests share one database",
                         "Give each orders test its own schema")  # fmt: skip
    record = {"description": "The payments tests need the Stripe mock on port 12111",
              "insight": "Start stripe-mock before the payments tests", "category": "tool_usage",
              "project": str(repo)}  # fmt: skip
    script = Script(scenes=[
        Scene(["fix the orders tests"], [{"tool": f"{TOOL_PREFIX}record_learning", "input": record}, {"text": "ok"}]),
    ], default=Scene([], [{"text": "hello"}]))  # fmt: skip
    with ScriptedModel(script) as model:
        env = agent_env(home, model) | {
            "GROOVE_ENDPOINT": coordinator.endpoint,
            "GROOVE_STATE_DIR": str(tmp_path / "state"),
            "PATH": f"{VENV_BIN}{os.pathsep}{agent_env(home, model)['PATH']}",
            "ENABLE_TOOL_SEARCH": "false",
            # a headless session's first request waits for its MCP servers, up to 30 s (by default it waits 5 s
            # at most, or not at all): `groove mcp` takes 2 s to start here, far longer with the suite beside it
            "MCP_CONNECTION_NONBLOCKING": "false",
            "MCP_CONNECT_TIMEOUT_MS": "30000",
        }
        claude("plugin", "marketplace", "add", str(ROOT), env=env, cwd=tmp_path)
        claude("plugin", "install", "groove@groove", env=env, cwd=tmp_path)

        session("fix the orders tests", env, repo)
        opening = next(iter(model.seen("fix the orders tests")))
        assert "Give each orders test its own schema" in opening.text  # the plugin's SessionStart hook
        assert first in opening.text
        assert "Use at the start of a task" in opening.text  # the plugin's skill is offered
        injection = re.search(FIELDS["injection_id"], opening.text)
        assert injection is not None
        assert client.get_injection(injection.group(1)).closed_at is not None  # the plugin's SessionEnd hook
        assert f"{TOOL_PREFIX}record_learning" in {tool.get("name") for tool in opening.body["tools"]}
        recorded = [g for g in client.list_learnings(scope_prefix=f"project:{repo}").learnings if g.id != first]
        assert [g.insight for g in recorded] == ["Start stripe-mock before the payments tests"]

        session("update the payments page", env, repo)
        second = next(iter(model.seen("update the payments page")))
        assert "Start stripe-mock before the payments tests" in second.text

        claude("plugin", "uninstall", "groove@groove", env=env, cwd=tmp_path)
        claude("plugin", "marketplace", "remove", "groove", env=env, cwd=tmp_path)
        prepared = client.stats().op_counts.get("inject.prepare")
        session("rename the orders module", env, repo)
        after = next(iter(model.seen("rename the orders module")))
    assert "groove" not in json.dumps(after.body["tools"])
    assert client.stats().op_counts.get("inject.prepare") == prepared
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert "groove" not in json.dumps(settings)
    installed = json.loads((home / ".claude" / "plugins" / "installed_plugins.json").read_text())
    assert installed["plugins"] == {}
    assert "groove" not in (home / ".claude" / "plugins" / "known_marketplaces.json").read_text()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, check=True)
    assert status.stdout == ""  # nothing was ever written into the project
