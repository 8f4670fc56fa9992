"""The README's "Run a swarm of Claude Code agents", run as written: its five commands in a shell, with its
plan file in a git repository, a scratch HOME, and the real Claude Code (installed by `make`) answered by a
scripted model on loopback."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest
import yaml

from benchmarks.scripted_model import Scene, Script, ScriptedModel
from tests.helpers import ROOT, example
from tests.realagents import FIELDS, agent_env, binary, complete, git_repo

pytestmark = pytest.mark.slow


def test_the_readme_swarm_runs_as_written(tmp_path: Path) -> None:
    binary("claude")
    home = tmp_path / "home"
    repo = git_repo(home / "src" / "shop")
    (repo / "plan.yaml").write_text(example("realswarm-plan", "yaml"))
    tasks = [t["id"] for t in yaml.safe_load((repo / "plan.yaml").read_text())["tasks"]]
    with socket.socket() as s:  # a port of its own for the README's coordinator, not the default 5555
        s.bind(("127.0.0.1", 0))
        endpoint = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    work = Scene([], [{"shell": "echo {task_id} > {task_id}.txt"}, complete(), {"text": "done"}])
    # the README's commands as written; the coordinator it starts in the background is stopped at the end
    script = f"set -e\ntrap 'kill $(jobs -p) 2>/dev/null' EXIT\n{example('realswarm', 'sh')}"
    with ScriptedModel(Script(default=work, fields=FIELDS)) as model:
        env = os.environ | agent_env(home, model) | {"GROOVE_BIND": endpoint, "GROOVE_ENDPOINT": endpoint}
        done = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=400,
                              check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]  # `groove swarm` exits 0 only once every task is completed
    # `git branch` marks a branch checked out in a worktree with `+`
    branches = [b for line in done.stdout.splitlines() if (b := line.lstrip("+* ").strip()).startswith("groove/")]
    assert sorted(b.split("/")[1] for b in branches) == sorted(tasks), done.stdout[-3000:]
    for branch in branches:
        task = branch.split("/")[1]
        shown = subprocess.run(["git", "show", f"{branch}:{task}.txt"], cwd=repo, capture_output=True, text=True,
                               check=False)  # fmt: skip
        assert shown.stdout.strip() == task
