"""What the tests with the real Claude Code and Codex share: the binaries `make` installed, a scratch home for
each, a scripted model to point them at, a git repository to work in.

A binary that is missing fails the test (run `make install`): these tests are the proof that real agents work
the board, so they never skip.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from benchmarks.scripted_model import Scene, Script, ScriptedModel
from tests.helpers import ROOT

BIN = ROOT / "coding-agents" / "node_modules" / ".bin"
# What the scripted model reads from a worker's prompt (agents.coding.prompt_for) to fill its tool calls.
FIELDS = {
    "task_id": r"working task `([^`]+)`",
    "agent_id": r"You are agent `([^`]+)`",
    "memory_id": r"of the groove working memory `([^`]+)`",
    "injection_id": r"injection_id `([^`]+)`",
    "learning_id": r"\(id `([0-9a-f-]{36})`\)",
}


def binary(agent: str) -> Path:
    """The agent's program as `make` installed it; fails the test if it is missing."""
    path = BIN / agent
    assert path.exists(), f"{path} is missing: `make install` installs the pinned Claude Code and Codex"
    return path


def complete(summary: str = "done: {task_id}") -> dict[str, object]:
    """A scripted turn: the agent completes its task through groove's MCP tool."""
    return {"tool": "mcp__groove__complete_task",
            "input": {"task_id": "{task_id}", "agent_id": "{agent_id}", "summary": summary}}  # fmt: skip


def agent_env(home: Path, model: ScriptedModel) -> dict[str, str]:
    """The environment that runs both agents offline against `model`, with the installed binaries on PATH."""
    return model.environment(home) | {"PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}


def git_repo(path: Path) -> Path:
    """A git repository with one commit."""
    path.mkdir(parents=True)
    (path / "README.md").write_text("# shop\n")
    for args in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)
    return path


def script(*scenes: Scene) -> Script:
    """A script of these scenes with the worker's prompt fields."""
    return Script(scenes=list(scenes), fields=FIELDS)
