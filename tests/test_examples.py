"""The examples/ a newcomer copies from run as shipped: the plan file is a valid plan, and the orchestrator
script drains it with workers (a QA one among them) and a review approved."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import RunningCoordinator, run_groove

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
