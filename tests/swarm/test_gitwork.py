"""A task's worktree and branch (agents.gitwork), on real git repositories; the workers of a swarm are separate
processes, so the side-by-side test runs them as processes."""

from __future__ import annotations

import multiprocessing
import subprocess
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from groove.swarm import gitwork
from tests.realagents import git_repo

WORKERS, TASKS = 8, 160  # before the lock, 8 processes failed about 1 task in 80 (git 2.39)


def _attempt(repo: str, task: int) -> str:
    """One task's git side as a worker does it: a worktree, a change committed there, the worktree removed.
    Returns the error, or '' when every step worked."""
    try:
        tree = gitwork.add_worktree(Path(repo), f"t{task}", f"w{task % WORKERS}")
        (tree.path / f"t{task}.txt").write_text(f"t{task}\n")
        gitwork.commit_all(tree, f"task t{task}")
        gitwork.remove_worktree(Path(repo), tree)
    except gitwork.GitError as exc:
        return str(exc)
    return ""


def test_workers_in_separate_processes_add_and_remove_worktrees_side_by_side(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "shop")
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(WORKERS, mp_context=spawn) as pool:
        errors = [e for e in pool.map(_attempt, [str(repo)] * TASKS, range(TASKS)) if e]
    assert errors == []
    listed = subprocess.run(["git", "worktree", "list"], cwd=repo, capture_output=True, text=True, check=True)
    assert listed.stdout.count("\n") == 1  # the repository's own checkout alone
    for task in range(TASKS):
        shown = gitwork.git(repo, "show", f"{gitwork.branch_name(f't{task}', f'w{task % WORKERS}')}:t{task}.txt")
        assert shown == f"t{task}\n"


def test_a_worktree_git_cannot_make_is_a_git_error_and_leaves_nothing(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "shop")
    (tmp_path / "shop.worktrees").write_text("a file where the worktrees would go\n")
    with pytest.raises(gitwork.GitError):
        gitwork.add_worktree(repo, "t1", "w0")
    assert gitwork.git(repo, "worktree", "list").count("\n") == 1
