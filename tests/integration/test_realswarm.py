"""A swarm of real coding agents on the board: the real `claude` and `codex` binaries (installed by `make`), run
headless by groove's workers against a scripted model on loopback, draining a plan with dependencies, with a
learning passed on, a nudge delivered mid-task and a worker killed mid-task."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from benchmarks.scripted_model import Scene, ScriptedModel
from groove.client import GrooveClient
from groove.protocol.keys import CurveClient, generate_key_pair
from groove.swarm.coding import groove_argv
from tests.helpers import RunningCoordinator, wait_for
from tests.realagents import agent_env, binary, complete, git_repo, script

pytestmark = pytest.mark.slow

LESSON = {
    "description": "Refund amounts lost cents when stored as floats",
    "insight": "Store refund amounts as integer cents",
    "category": "solution",
    "scope": "project:{repo}",
}
NUDGE = "NUDGE: run the refund linter before you finish"
WHEN_IDLE = "WHEN IDLE: the staging database was reset overnight"
TITLES = {"t01": "the checkout page", "t04": "store refund amounts in integer cents"}
# the plan: (id, depends on, role); the two `codex` tasks go to the Codex worker, the rest to whoever is free
PLAN = [
    ("t01", [], None), ("t02", ["t01"], None), ("t03", ["t01"], "codex"), ("t04", ["t02", "t03"], None),
    ("t05", [], None), ("t06", ["t05"], None), ("t07", [], None), ("t08", ["t07"], "codex"),
    ("t09", ["t04"], None), ("t10", ["t08"], None), ("t11", ["t09", "t10"], None), ("t12", ["t06"], None),
]  # fmt: skip


def _write(task: str) -> dict[str, Any]:
    return {"shell": f"echo {task} > {task}.txt"}


def _busy(seconds: int) -> dict[str, Any]:
    """A command that takes `seconds` (Claude Code refuses a bare `sleep`)."""
    return {"shell": f'python3 -c "import time; time.sleep({seconds})"'}


def _until(path: Path) -> dict[str, Any]:
    """A command that waits until the file `path` exists."""
    return {"shell": f"until test -f {path}; do sleep 0.2; done"}


def _scenes(repo: Path, marker: Path, nudged: Path) -> list[Scene]:
    lesson = {k: v.replace("{repo}", str(repo)) for k, v in LESSON.items()}
    special = {
        # records the lesson the later refund task is given
        "t01": [_write("t01"), {"tool": "mcp__groove__record_learning", "input": lesson}, complete(), {"text": "ok"}],
        # is given it (the learnings in its prompt), rates it helpful, and ends without calling complete_task
        "t04": [_write("t04"), {"tool": "mcp__groove__end_session", "input": {
            "injection_id": "{injection_id}", "success": True, "helpful": ["{learning_id}"]}}, {"text": "t04 done"}],
        # works until the nudge has been sent, then makes more tool calls
        "t05": [_until(nudged), _write("t05"), complete(), {"text": "ok"}],
        # hangs until the test has killed the worker that holds it; the next attempt goes through
        "t07": [_until(marker), _write("t07"), complete(), {"text": "ok"}],
    }  # fmt: skip
    scenes = [Scene([rf"working task `{task}`"], turns) for task, turns in special.items()]
    for task, _, _ in PLAN:
        if task not in special:  # half complete through the tool, half by exiting with a final message
            ending = [complete(), {"text": "ok"}] if int(task[1:]) % 2 else [{"text": f"{task} finished"}]
            scenes.append(Scene([rf"working task `{task}`"], [_write(task), *ending]))
    return scenes


def _argv(process: psutil.Process) -> list[str]:
    """Its command line, or none when it exited after it was listed (an agent's git or shell comes and goes)."""
    try:
        return process.cmdline()
    except psutil.NoSuchProcess:
        return []


def _worker_tree(root: psutil.Process, agent_id: str) -> list[psutil.Process]:
    """The worker process named `agent_id` under `root` (a swarm), and its agent's tree."""
    candidates = [root, *root.children(recursive=True)]
    worker = next(p for p in candidates if f"--agent-id\x00{agent_id}\x00" in "\x00".join(_argv(p)) + "\x00")
    return [worker, *worker.children(recursive=True)]


def test_claude_and_codex_workers_drain_a_plan(
    coordinator: RunningCoordinator, client: GrooveClient, tmp_path: Path
) -> None:
    claude, codex = binary("claude"), binary("codex")
    repo, marker, nudged = git_repo(tmp_path / "shop"), tmp_path / "killed", tmp_path / "nudged"
    memory = client.create_memory(str(repo), "refunds", "refunds without a ticket", max_attempts=3)
    # only t04's title matches the lesson, so it is the first session given it (a first match is never held back)
    client.add_tasks(memory, [{"id": t, "title": TITLES.get(t, f"checkout step {t}"), "depends_on": deps}
                              | ({"role": role} if role else {}) for t, deps, role in PLAN])  # fmt: skip
    # held for an idle agent: it reaches the Codex worker with its next session, not in the middle of one
    client.send_nudge("codex-0", memory, WHEN_IDLE, "lead", delivery="when_idle")
    common = ["--memory", memory, "--repo", str(repo), "--lease-ms", "3000"]
    with ScriptedModel(script(*_scenes(repo, marker, nudged))) as model:
        env = os.environ | agent_env(tmp_path / "home", model)
        swarm = subprocess.Popen(
            groove_argv("--endpoint", coordinator.endpoint, "swarm", "--agent", "claude", "--workers", "3",
                        "--agent-binary", str(claude), "--json", *common),
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        started = [swarm]
        try:
            # the worker to kill: t07's, a Claude Code worker, once its agent runs (an attempt whose session could not
            # be prepared is retried, maybe by another). The Codex worker starts then: it takes a task of no role
            # too, and were it killed holding t07, t08 (a codex task) would wait for it for ever.
            wait_for(lambda: any(model.seen("working task `t07`")), "t07's agent running", timeout=180)
            victim = client.task("t07").assigned_to or ""
            worker = subprocess.Popen(
                groove_argv("--endpoint", coordinator.endpoint, "agent", "--agent", "codex", "--agent-id", "codex-0",
                            "--role", "codex", "--agent-binary", str(codex), *common),
                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            started.append(worker)
            # a nudge sent while t05's agent works is in front of its model at its next request; sent to the
            # worker holding t05 once its agent runs
            wait_for(lambda: any(model.seen("working task `t05`")), "t05's agent running", timeout=180)
            holder = client.task("t05").assigned_to or ""
            client.send_nudge(holder, memory, NUDGE, "lead", priority="high", delivery="immediate")
            nudged.touch()
            # kill -9 the worker holding t07 and its agent, mid-task
            for doomed in _worker_tree(psutil.Process(swarm.pid), victim):
                # a short-lived child of the agent (a shell, git) may have exited since the tree was listed
                with contextlib.suppress(psutil.NoSuchProcess):
                    doomed.send_signal(signal.SIGKILL)
            marker.touch()
            out, err = swarm.communicate(timeout=300)
            worker.communicate(timeout=120)
        finally:
            for proc in started:
                if proc.poll() is None:
                    proc.kill()
    tasks = {t.id: t for t in client.tasks(memory)}
    assert {t.status for t in tasks.values()} == {"completed"}, (err[-3000:], {t.id: t.status for t in tasks.values()})
    # never claimed before its dependencies were done; its agent said it started
    for task, deps, _ in PLAN:
        assert tasks[task].started_at is not None
        for dep in deps:
            assert (tasks[task].assigned_at or 0) >= (tasks[dep].completed_at or float("inf")), (task, dep)
    # the killed worker's task lapsed once and was finished by another worker, once
    assert tasks["t07"].attempts == 1
    assert tasks["t07"].assigned_to != victim
    report = json.loads(out)
    assert report["workers_without_report"] == 1
    # every task completed: exit 0 as its help says, the killed worker's crash in the report
    assert swarm.returncode == 0, err[-3000:]
    assert report["worker_crashes"] >= 1
    assert any(line.startswith(f"{victim}: ") for line in report["crashed"])
    for session in report["sessions"]:  # every finished session's injection is closed
        assert client.get_injection(session["injection_id"]).closed_at is not None, (session, err[-3000:])
    # the Codex worker did the codex tasks; their commits are on its branches
    for task in ("t03", "t08"):
        assert tasks[task].assigned_to == "codex-0"
    for task, t in tasks.items():
        branch = f"groove/{task}/{t.assigned_to}"
        show = ["git", "show", f"{branch}:{task}.txt"]
        shown = subprocess.run(show, cwd=repo, capture_output=True, text=True, check=False)
        assert shown.stdout.strip() == task, (branch, shown.stderr)
        # its work committed on the branch, the completed task's worktree is gone (git forgot it too)
        worktree = repo.parent / f"{repo.name}.worktrees" / branch.removeprefix("groove/").replace("/", "--")
        assert not worktree.exists(), worktree
    listed = subprocess.run(["git", "worktree", "list"], cwd=repo, capture_output=True, text=True, check=True).stdout
    assert not any(f"groove/{task}/{t.assigned_to}" in listed for task, t in tasks.items()), listed
    # each task's file is an artifact of it, and each finished attempt left a checkpoint
    assert {a.path for a in client.artifacts(memory)} == {f"{task}.txt" for task, _, _ in PLAN}
    assert {c.task_id for c in client.checkpoints(memory)} >= set(tasks)
    # the lesson t01 recorded was given to t04 and rated helpful there
    lesson = client.search("refund amounts as integer cents", project=str(repo))[0].learning
    assert lesson.insight == LESSON["insight"]
    assert any(lesson.id in r.text for r in model.seen("working task `t04`"))
    assert client.get(lesson.id).usage.times_helpful == 1
    # the nudge reached t05's agent at its next model request, and was acknowledged
    assert any(NUDGE in r.text for r in model.seen("working task `t05`"))
    assert all(holder in n.acked_by for n in client.nudges(memory) if n.message == NUDGE)
    # the when_idle nudge was in the Codex worker's first session's prompt, and handed over with it
    first = next(iter(model.seen("You are agent `codex-0`")))
    assert WHEN_IDLE in first.text
    assert all("codex-0" in n.acked_by for n in client.nudges(memory) if n.message == WHEN_IDLE)


def _run_one(coordinator: RunningCoordinator, home: Path, model: ScriptedModel, memory: str, repo: Path,
             *args: str) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run(
        groove_argv("--endpoint", coordinator.endpoint, "agent", "--agent", "claude", "--agent-id", "w",
                    "--memory", memory, "--repo", str(repo), "--agent-binary", str(binary("claude")), *args),
        env=os.environ | agent_env(home, model), capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip


def test_a_missing_agent_binary_is_refused_before_anything_is_claimed(
    coordinator: RunningCoordinator, client: GrooveClient, tmp_path: Path
) -> None:
    repo = git_repo(tmp_path / "shop")
    memory = client.create_memory(str(repo), "m", "g")
    client.add_tasks(memory, [{"id": "only", "title": "one task"}])
    with ScriptedModel(script()) as model:
        done = _run_one(coordinator, tmp_path / "home", model, memory, repo, "--agent-binary", "/nowhere/claude")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "not found" in done.stderr
    assert (client.task("only").status, client.task("only").attempts) == ("pending", 0)


@pytest.mark.parametrize(
    ("turns", "options", "error"),
    [
        ([{"error": 400}], [], "exited with status"),  # the model endpoint answers errors
        ([_busy(120)], ["--agent-timeout", "6"], "time-out of 6 s"),  # a hung agent
        ([{"tool": "mcp__groove__fail_task", "input": {"task_id": "{task_id}", "agent_id": "{agent_id}",
                                                       "error": "the tests do not build"}}, {"text": "gave up"}],
         [], "the tests do not build"),  # the agent fails the task itself
    ],
    ids=["model-errors", "hung-agent", "agent-fails-it"],
)  # fmt: skip
def test_a_task_the_agent_cannot_do_is_failed_and_retried(
    coordinator: RunningCoordinator,
    client: GrooveClient,
    tmp_path: Path,
    turns: list[dict[str, object]],
    options: list[str],
    error: str,
) -> None:
    repo = git_repo(tmp_path / "shop")
    memory = client.create_memory(str(repo), "m", "g", max_attempts=2)
    client.add_tasks(memory, [{"id": "doomed", "title": "a task that cannot be done"}])
    with ScriptedModel(script(Scene(["working task `doomed`"], turns))) as model:
        done = _run_one(coordinator, tmp_path / "home", model, memory, repo, "--lease-ms", "5000", *options)
        asked = len(list(model.seen("working task `doomed`")))
    assert done.returncode == 0, done.stderr
    task = client.task("doomed")
    assert (task.status, task.attempts) == ("failed", 2)  # retried once, then failed for good
    assert error in (task.last_error or ""), task.last_error
    if not options:  # the agent ran each attempt; a hung one's time-out says it was running when its time was up
        assert asked >= 2  # (with the suite beside it, Claude Code once took over 10 s to send its first request)
    sessions = json.loads(done.stdout.splitlines()[-1])["sessions"]
    assert [s["result"] for s in sessions] == ["retried", "failed"]
    for session in sessions:  # each attempt's injection closed, as a failure
        assert client.get_injection(session["injection_id"]).closed_at is not None


def test_a_session_the_worker_cannot_prepare_fails_the_task_and_closes_its_injection(
    coordinator: RunningCoordinator, client: GrooveClient, tmp_path: Path
) -> None:
    repo = git_repo(tmp_path / "shop")
    (tmp_path / "shop.worktrees").write_text("in the way\n")  # git cannot make the task's worktree here
    memory = client.create_memory(str(repo), "m", "g", max_attempts=2)
    client.add_tasks(memory, [{"id": "nowhere", "title": "a task with nowhere to work"}])
    with ScriptedModel(script(Scene(["working task `nowhere`"], [{"text": "never asked"}]))) as model:
        done = _run_one(coordinator, tmp_path / "home", model, memory, repo)
        asked = len(list(model.seen("working task `nowhere`")))
    assert done.returncode == 0, done.stderr
    assert asked == 0  # no agent ran
    task = client.task("nowhere")
    assert (task.status, task.attempts) == ("failed", 2)
    sessions = json.loads(done.stdout.splitlines()[-1])["sessions"]
    assert [s["result"] for s in sessions] == ["retried", "failed"]
    for session in sessions:  # its learnings never reached an agent, and the injection is not left open
        assert client.get_injection(session["injection_id"]).closed_at is not None


def test_a_cancelled_task_stops_its_agent(coordinator: RunningCoordinator, client: GrooveClient, tmp_path: Path,
                                          ) -> None:  # fmt: skip
    repo = git_repo(tmp_path / "shop")
    memory = client.create_memory(str(repo), "m", "g")
    client.add_tasks(memory, [{"id": "dropped", "title": "work that will be called off"}])
    with ScriptedModel(script(Scene(["working task `dropped`"], [_busy(120)]))) as model:
        proc = subprocess.Popen(
            groove_argv("--endpoint", coordinator.endpoint, "agent", "--agent", "claude", "--agent-id", "w",
                        "--memory", memory, "--repo", str(repo), "--agent-binary", str(binary("claude")),
                        "--lease-ms", "3000"),
            env=os.environ | agent_env(tmp_path / "home", model), stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        wait_for(lambda: any(model.seen("working task `dropped`")), "the agent running", timeout=60)
        client.cancel_task("dropped")
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert [s["result"] for s in json.loads(out.splitlines()[-1])["sessions"]] == ["cancelled"]
    assert client.task("dropped").status == "cancelled"


def test_a_swarm_against_a_curve_coordinator_hands_its_keys_to_the_agents_hooks_and_mcp_server(
    coordinator_factory: Callable[..., RunningCoordinator], tmp_path: Path
) -> None:
    keys = tmp_path / "keys"
    generate_key_pair(keys, "swarm", {"role": "curator", "orgs": "acme"})  # plans need a curator
    authorized = tmp_path / "authorized"
    authorized.mkdir()
    (authorized / "swarm.key").write_bytes((keys / "swarm.key").read_bytes())
    secured = coordinator_factory("--curve", "--authorized-keys", str(authorized))
    secret = str(keys / "swarm.key_secret")
    curve = CurveClient.load(str(secured.data_dir / "server.key"), secret)
    repo = git_repo(tmp_path / "shop")
    (repo / "plan.yaml").write_text("name: keys\ngoal: work over CURVE\ntasks:\n  - {id: sealed, title: sealed work}\n")
    # its first tool call lasts until the nudge is sent, then it completes through groove's MCP server
    sent = tmp_path / "sent"
    turns = [_until(sent), {"shell": "true"}, complete("done over curve"), {"text": "ok"}]
    with (
        ScriptedModel(script(Scene(["working task `sealed`"], turns))) as model,
        GrooveClient(secured.endpoint, timeout=20, curve=curve) as client,
    ):
        swarm = subprocess.Popen(
            groove_argv("--endpoint", secured.endpoint, "--server-key", str(secured.data_dir / "server.key"),
                        "--key", secret, "swarm", "--agent", "claude", "--workers", "1", "--plan", "plan.yaml",
                        "--agent-binary", str(binary("claude")), "--repo", str(repo), "--json"),
            cwd=repo, env=os.environ | agent_env(tmp_path / "home", model), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            wait_for(lambda: any(model.seen("working task `sealed`")), "the agent running", timeout=60)
            client.send_nudge("claude-0", client.task("sealed").memory_id, NUDGE, "lead", delivery="immediate")
            sent.touch()
            out, err = swarm.communicate(timeout=120)
        finally:
            if swarm.poll() is None:
                swarm.kill()
        assert swarm.returncode == 0, err[-2000:]
        task = client.task("sealed")
        assert task.status == "completed"
        assert (task.result or {})["summary"] == "done over curve"  # the MCP server's call, over CURVE
        assert any(NUDGE in r.text for r in model.seen("working task `sealed`"))  # the hook's, over CURVE
    assert json.loads(out)["tasks"] == {"completed": 1}
