"""`groove hooks install --agent codex` with the real Codex (installed by `make`): after it, a plain `codex exec`
in the repository (no flag that bypasses hook trust) runs groove's SessionStart hook, and the project's learning
is in the model's first request; uninstalling takes the trust out again and leaves the rest of the config."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from benchmarks.scripted_model import Scene, Script, ScriptedModel
from groove.client import GrooveClient
from groove.swarm.coding import groove_argv
from tests.helpers import RunningCoordinator, run_groove
from tests.realagents import agent_env, binary, git_repo

pytestmark = pytest.mark.slow


def test_codex_runs_the_installed_hooks_once_groove_has_them_trusted(
    coordinator: RunningCoordinator, client: GrooveClient, tmp_path: Path
) -> None:
    binary("codex")
    home = tmp_path / "home"
    repo = git_repo(tmp_path / "shop")
    client.learn(f"project:{repo}", "solution", "orders tests share one database", "give each test its own schema")
    with ScriptedModel(Script(default=Scene([], [{"text": "hello"}]))) as model:
        env = agent_env(home, model) | {"GROOVE_STATE_DIR": str(tmp_path / "state")}
        provider = (home / ".codex" / "config.toml").read_text()
        program = groove_argv()
        installed = subprocess.run(
            [*program, "hooks", "install", "--agent", "codex", "--project", str(repo), "--command", " ".join(program),
             "--endpoint", coordinator.endpoint],
            env=os.environ | env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert installed.returncode == 0, installed.stderr
        assert "Codex trusts groove's 3 hooks" in installed.stdout
        plain = [str(binary("codex")), "exec", "fix the orders tests"]  # no flag that bypasses hook trust
        ran = subprocess.run(plain, cwd=repo, env=os.environ | env, capture_output=True, text=True, timeout=120,
                             check=False, stdin=subprocess.DEVNULL)  # fmt: skip
        assert ran.returncode == 0, ran.stderr[-2000:]
        first = next(iter(model.seen("fix the orders tests")))
    assert "give each test its own schema" in first.text  # SessionStart's learning, before the first answer
    assert client.stats().op_counts.get("inject.prepare") == 1

    removed = run_groove("hooks", "uninstall", "--agent", "codex", "--project", str(repo),
                         env=env | {"GROOVE_STATE_DIR": str(tmp_path / "state")})  # fmt: skip
    assert removed.returncode == 0, removed.stderr
    assert (home / ".codex" / "config.toml").read_text() == provider
    assert not (repo / ".codex").exists()
