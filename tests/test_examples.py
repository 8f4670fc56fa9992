"""The examples/ a newcomer copies from run as shipped: the plan file is a valid plan, the orchestrator script
drains it with workers (a QA one among them) and a review approved, and the Claude Code quick start runs two
real Claude Code sessions (against a scripted model) that share a learning."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.scripted_model import Scene, Script, ScriptedModel
from groove.client import GrooveClient
from tests.helpers import RunningCoordinator, run_groove
from tests.realagents import agent_env, binary, git_repo

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_the_example_plan_is_taken_whole_by_tasks_add(coordinator: RunningCoordinator) -> None:
    endpoint = ("--endpoint", coordinator.endpoint)
    made = run_groove(*endpoint, "memory", "create", "--project", "/srv/example", "--name", "refunds", "--goal", "g")
    assert made.returncode == 0, made.stderr
    memory = made.stdout.split()[-1]
    added = run_groove(*endpoint, "tasks", "add", memory, str(EXAMPLES / "plan.yaml"))
    assert added.returncode == 0, added.stderr
    assert added.stdout.strip() == "added 4 tasks"


def test_the_example_orchestrator_drains_the_example_plan(coordinator: RunningCoordinator) -> None:
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / "orchestrator.py"), "--endpoint", coordinator.endpoint, "--timeout", "90"],
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "approved docs" in run.stdout  # the task marked needs_review waited for it
    assert run.stdout.strip().splitlines()[-1] == "api completed, docs completed, schema completed, tests completed"


@pytest.mark.slow
def test_the_claude_code_quick_start_shares_a_learning_between_two_real_sessions(
    coordinator: RunningCoordinator, client: GrooveClient, tmp_path: Path
) -> None:
    binary("claude")
    repo = git_repo(tmp_path / "shop")
    session_1 = Scene(["Find out why, fix them"], [{"tool": "mcp__groove__record_learning", "input": {
        "description": "The orders tests fail when they share one database",
        "insight": "Give each orders test its own schema", "category": "tool_usage"}}], final="Fixed.")  # fmt: skip
    # session 2 rates what SessionStart gave it, by the ids the hook's block names (its context holds session
    # 1's learning, so each scene is matched by its prompt alone)
    session_2 = Scene(["Add a refunds test"], [{"tool": "mcp__groove__end_session", "input": {
        "injection_id": "{injection_id}", "success": True, "helpful": ["{learning_id}"]}}], final="Added.")  # fmt: skip
    fields = {"injection_id": r"injection_id `([^`]+)`", "learning_id": r"\(id `([0-9a-f-]{36})`"}
    with ScriptedModel(Script([session_1, session_2], fields=fields)) as model:
        venv = Path(sys.executable).parent  # `groove` is on a user's PATH once the venv is activated
        agents = agent_env(tmp_path / "home", model)
        env = agents | {
            "PATH": f"{venv}{os.pathsep}{agents['PATH']}",
            "GROOVE_ENDPOINT": coordinator.endpoint,
            "GROOVE_STATE_DIR": str(tmp_path / "state"),
            "ENABLE_TOOL_SEARCH": "false",  # the scripted model calls groove's tools by name, undeferred
        }
        run = subprocess.run(
            ["bash", str(EXAMPLES / "claude-code.sh"), str(repo)],
            env=os.environ | env, capture_output=True, text=True, timeout=240, check=False,
        )  # fmt: skip
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        given = next(iter(model.seen("Add a refunds test")))
    assert "Give each orders test its own schema" in given.text  # SessionStart's block, before the first answer
    (hit,) = [h for h in client.search("orders tests", project=str(repo)) if "own schema" in h.learning.insight]
    usage = hit.learning.usage
    assert (usage.times_injected, usage.times_helpful, usage.times_ignored) == (1, 1, 0)
    assert "Give each orders test its own schema" in run.stdout  # the script's last step: the search
