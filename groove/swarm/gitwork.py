"""The git side of a real agent's task: a worktree on its own branch, the agent's changes committed there, and
what changed, for the board's checkpoint and artifacts.

Each task gets a branch `groove/<task>/<agent>` from the repository's current HEAD and a worktree for it in
`<repo>.worktrees/` beside the repository (not inside it, where the agent's own checkout would see it, nor in
`.git`, where Claude Code refuses to edit files), so a second attempt by another agent starts clean on a
branch of its own. Once the attempt's work is committed on its branch, its worktree is removed: the branch
holds the work, and a long plan does not leave a checkout per task on the disk.

git's worktree commands are not safe side by side on one repository: run from several processes at once,
`add` fails reading another's half-made entry and `prune` deletes an entry being made. The workers of a
swarm, separate processes, take turns for them through a lock file in the repository's git directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from groove.client.errors import GrooveError

_GIT_TIMEOUT_S: Final = 60
_LOCK_FILE: Final = "groove-worktrees.lock"  # in the repository's (common) git directory
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# the artifact types of `artifact.record`, guessed from a path
_DOCS: Final = (".md", ".rst", ".txt", ".adoc")
_CONFIGS: Final = (".json", ".toml", ".yaml", ".yml", ".ini", ".cfg", ".conf", ".env")


class GitError(GrooveError):
    """A git command failed: its stderr says why."""


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd`; its stdout, or GitError with its stderr."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=_GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {' '.join(args)}: {exc}") from None
    if done.returncode != 0:
        raise GitError(f"git {' '.join(args)}: {done.stderr.strip() or f'exit status {done.returncode}'}")
    return done.stdout


def check_repo(repo: Path) -> Path:
    """The repository's top directory; GitError if `repo` is not in a git repository with a commit."""
    top = Path(git(repo, "rev-parse", "--show-toplevel").strip())
    git(top, "rev-parse", "--verify", "HEAD^{commit}")
    return top


@dataclass(frozen=True)
class Worktree:
    """A task's worktree: where it is, its branch, and the commit it started from."""

    path: Path
    branch: str
    base: str


def safe_name(text: str) -> str:
    """`text` as a branch, path or file name part: what is not a letter, digit or `._-` becomes `-`."""
    return _UNSAFE.sub("-", text)


def branch_name(task_id: str, agent_id: str) -> str:
    """The branch an agent's attempt at a task is committed on."""
    return f"groove/{safe_name(task_id)}/{safe_name(agent_id)}"


def add_worktree(repo: Path, task_id: str, agent_id: str) -> Worktree:
    """A fresh worktree on the attempt's branch, from HEAD (a leftover of an earlier attempt is replaced)."""
    branch = branch_name(task_id, agent_id)
    path = repo.parent / f"{repo.name}.worktrees" / branch.removeprefix("groove/").replace("/", "--")
    base = git(repo, "rev-parse", "HEAD").strip()
    with _worktrees_locked(repo):
        if path.exists():
            git(repo, "worktree", "remove", "--force", str(path))
        git(repo, "worktree", "prune")
        git(repo, "worktree", "add", "--force", "-B", branch, str(path), base)
    return Worktree(path, branch, base)


def remove_worktree(repo: Path, tree: Worktree) -> None:
    """Remove a worktree whose work is committed on its branch (the branch stays)."""
    with _worktrees_locked(repo):
        git(repo, "worktree", "remove", "--force", str(tree.path))
        git(repo, "worktree", "prune")


@contextlib.contextmanager
def _worktrees_locked(repo: Path) -> Iterator[None]:
    """This process alone changes `repo`'s worktrees while inside (an flock: a holder that dies lets go)."""
    common = repo / git(repo, "rev-parse", "--git-common-dir").strip()  # relative to `repo` unless absolute
    try:
        lock = (common / _LOCK_FILE).open("a")
    except OSError as exc:
        raise GitError(f"cannot open {common / _LOCK_FILE}: {exc.strerror or exc}") from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def commit_all(tree: Worktree, message: str) -> str:
    """Commit whatever the agent left uncommitted; the branch's head afterwards."""
    if git(tree.path, "status", "--porcelain").strip():
        git(tree.path, "add", "-A")
        git(tree.path, "-c", "user.name=groove", "-c", "user.email=groove@localhost", "commit", "-q", "-m", message)
    return git(tree.path, "rev-parse", "HEAD").strip()


def changed_files(tree: Worktree, head: str) -> list[str]:
    """The files the branch changed since its base that still exist, in git's order."""
    names = git(tree.path, "diff", "--name-only", "--no-renames", f"{tree.base}..{head}").splitlines()
    return [name for name in names if (tree.path / name).is_file()]


def artifact_type(path: str) -> str:
    """The artifact type `artifact.record` files a changed path under."""
    lower = path.lower()
    name = lower.rsplit("/", 1)[-1]
    if "migration" in lower:
        return "migration"
    if "test" in name or "/tests/" in f"/{lower}":
        return "test"
    if "schema" in name:
        return "schema"
    if name.endswith(_DOCS):
        return "document"
    if name.endswith(_CONFIGS):
        return "config"
    return "code"


def checksum(path: Path) -> str:
    """A file's sha256, as `sha256:<hex>`."""
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
