"""`groove hook EVENT` as the agents run it: a real process given each event's documented JSON on stdin,
against a real coordinator; its output is read as the agent reads it and the coordinator's state checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from groove.client import GrooveClient
from groove.integrations.hook import STALE_AFTER_S, Hook, HookInput, Sessions, Wire
from groove.swarm.coding import groove_argv
from tests.helpers import RunningCoordinator, silent_endpoint

# The events' input, as documented; the fields groove does not read are kept so the shapes stay the agents'.
# Claude Code: https://code.claude.com/docs/en/hooks#hook-input (common fields) and the per-event sections
# https://code.claude.com/docs/en/hooks#sessionstart-input, #userpromptsubmit-input, #stop-input,
# #sessionend-input.
CLAUDE_SESSION_START = {
    "session_id": "abc123",
    "transcript_path": "/Users/alex/.claude/projects/shop/00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
    "cwd": "REPO",
    "permission_mode": "default",
    "hook_event_name": "SessionStart",
    "source": "startup",
    "model": "claude-sonnet-4-6",
}
CLAUDE_PROMPT = {
    "session_id": "abc123",
    "transcript_path": "/Users/alex/.claude/projects/shop/00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
    "cwd": "REPO",
    "permission_mode": "default",
    "hook_event_name": "UserPromptSubmit",
    "prompt": "Write a function to calculate the factorial of a number",
}
CLAUDE_STOP = {
    "session_id": "abc123",
    "transcript_path": "~/.claude/projects/shop/00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
    "cwd": "REPO",
    "permission_mode": "default",
    "hook_event_name": "Stop",
    "stop_hook_active": True,
}
CLAUDE_SESSION_END = {
    "session_id": "abc123",
    "transcript_path": "/Users/alex/.claude/projects/shop/00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
    "cwd": "REPO",
    "permission_mode": "default",
    "hook_event_name": "SessionEnd",
    "reason": "prompt_input_exit",
}
# Codex: https://developers.openai.com/codex/hooks (common input fields; SessionStart's `source`).
CODEX_SESSION_START = {
    "session_id": "0199a213-81c0-7800-8aa1-bbab2a035a53",
    "transcript_path": None,
    "cwd": "REPO",
    "hook_event_name": "SessionStart",
    "model": "gpt-5-codex",
    "source": "startup",
}


def event(shape: dict[str, Any], repo: Path, **changes: Any) -> dict[str, Any]:
    """A documented event for a session working in `repo` (somewhere under it)."""
    return {**shape, "cwd": str(repo / "src"), **changes}


def hook(
    name: str, given: dict[str, Any] | str, endpoint: str, state: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `groove hook NAME` as the agent does: JSON on stdin, endpoint by argument, `env` over this one's."""
    stdin = given if isinstance(given, str) else json.dumps(given)
    argv = groove_argv("hook", name, "--endpoint", endpoint, "--timeout", "5")
    env = {**os.environ, "GROOVE_STATE_DIR": str(state), **(env or {})}
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=60, env=env, check=False)


def context_of(done: subprocess.CompletedProcess[str], name: str) -> str:
    """The additional context a hook's output gives the agent."""
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == name
    text: str = out["additionalContext"]
    return text


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with a subdirectory the agent works in."""
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    return root


def test_a_session_is_given_its_projects_learnings_and_its_end_closes_them(
    coordinator: RunningCoordinator, client: GrooveClient, repo: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    redis = client.learn(f"project:{repo}", "tool_usage", "orders tests hang without redis",
                         "Start redis-server before the orders tests", confidence=0.95)  # fmt: skip
    started = hook("SessionStart", event(CLAUDE_SESSION_START, repo), coordinator.endpoint, state)
    context = context_of(started, "SessionStart")
    assert "Start redis-server before the orders tests" in context
    assert redis in context
    remembered = json.loads(next((state / "sessions").glob("*.json")).read_text())
    assert remembered["project"] == str(repo)  # the git root, not the cwd
    injection = client.get_injection(remembered["injection_id"])
    assert [g.id for g in injection.learnings] == [redis]
    assert injection.session_id == "abc123"
    assert injection.closed_at is None
    assert remembered["injection_id"] in context

    resumed = hook("SessionStart", event(CLAUDE_SESSION_START, repo, source="resume"), coordinator.endpoint, state)
    assert context_of(resumed, "SessionStart") == context  # the same learnings, no second injection
    assert client.get(redis).usage.times_injected == 1

    factorial = client.learn(f"project:{repo}", "code_pattern", "factorial of a number: recursion overflows",
                             "Compute factorials iteratively", confidence=0.6)  # fmt: skip
    prompted = context_of(hook("UserPromptSubmit", event(CLAUDE_PROMPT, repo), coordinator.endpoint, state),
                          "UserPromptSubmit")  # fmt: skip
    assert factorial in prompted
    assert redis not in prompted  # already given this session

    stopped = hook("Stop", event(CLAUDE_STOP, repo), coordinator.endpoint, state)
    assert (stopped.returncode, stopped.stdout) == (0, "")
    assert client.get_injection(injection.injection_id).closed_at is None  # a turn ended, not the session

    ended = hook("SessionEnd", event(CLAUDE_SESSION_END, repo), coordinator.endpoint, state)
    assert (ended.returncode, ended.stdout, ended.stderr) == (0, "", "")
    assert client.get_injection(injection.injection_id).closed_at is not None
    assert client.get(redis).usage.times_ignored == 1  # not rated by the agent: ignored
    assert list((state / "sessions").glob("*.json")) == []
    again = hook("SessionEnd", event(CLAUDE_SESSION_END, repo), coordinator.endpoint, state)
    assert (again.returncode, again.stdout) == (0, "")


def test_a_session_the_agent_closed_itself_is_not_closed_twice_and_codex_is_served_alike(
    coordinator: RunningCoordinator, client: GrooveClient, repo: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    lid = client.learn(f"project:{repo}", "solution", "migrations", "Write a down migration", confidence=0.95)
    started = hook("SessionStart", event(CODEX_SESSION_START, repo), coordinator.endpoint, state)
    assert lid in context_of(started, "SessionStart")
    injection = client.get_injection(json.loads(next((state / "sessions").glob("*.json")).read_text())["injection_id"])
    client.close_session([(lid, "helpful")], injection_id=injection.injection_id, success=True)  # end_session
    ended = hook("SessionEnd", event(CODEX_SESSION_START, repo, hook_event_name="SessionEnd"), coordinator.endpoint,
                 state)  # fmt: skip
    assert (ended.returncode, ended.stderr) == (0, "")
    usage = client.get(lid).usage
    assert (usage.times_helpful, usage.times_ignored) == (1, 0)


def test_a_project_without_learnings_gets_no_output_and_nothing_is_given_twice(
    coordinator: RunningCoordinator, client: GrooveClient, repo: Path, tmp_path: Path
) -> None:
    started = hook("SessionStart", event(CLAUDE_SESSION_START, repo), coordinator.endpoint, tmp_path / "state")
    assert (started.returncode, started.stdout, started.stderr) == (0, "", "")


def test_an_unreachable_coordinator_is_silent_and_fast_and_a_stale_session_is_closed_later(
    coordinator: RunningCoordinator, client: GrooveClient, repo: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    with silent_endpoint() as nowhere:
        began = time.monotonic()
        quiet = hook("SessionStart", event(CLAUDE_SESSION_START, repo), nowhere, state)
        assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
        assert time.monotonic() - began < 5  # refused at once, not after the timeout
    assert not (state / "sessions").exists()

    lid = client.learn(f"project:{repo}", "solution", "lint", "Run ruff before committing", confidence=0.95)
    assert lid in context_of(hook("SessionStart", event(CLAUDE_SESSION_START, repo), coordinator.endpoint, state),
                             "SessionStart")  # fmt: skip
    coordinator.kill()
    lost = hook("SessionEnd", event(CLAUDE_SESSION_END, repo), coordinator.endpoint, state)
    assert (lost.returncode, lost.stdout) == (0, "")
    assert len(list((state / "sessions").glob("*.json"))) == 1  # kept, to be closed once the coordinator is back
    coordinator.restart()

    # the next session to start, half a day later, closes the one that never ended (time passed in as now=)
    sessions = Sessions(state)
    later = time.time() + STALE_AFTER_S + 60
    wire = Wire(coordinator.endpoint, None, timeout=20)
    try:
        Hook(wire, sessions, now=later, env={}).start(HookInput("next-session", str(repo)))
    finally:
        wire.close()
    assert client.get(lid).usage.times_ignored == 1
    assert sessions.load("abc123") is None
    assert sessions.load("next-session") is not None


@pytest.mark.parametrize(
    ("stdin", "says"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "a JSON object"),
        (json.dumps({"cwd": "/tmp"}), "session_id"),
        (json.dumps({"session_id": "s", "cwd": "relative/dir"}), "cwd, an absolute path"),
    ],
)
def test_bad_input_is_one_line_exit_1_and_changes_nothing(
    coordinator: RunningCoordinator, tmp_path: Path, stdin: str, says: str
) -> None:
    done = hook("SessionStart", stdin, coordinator.endpoint, tmp_path / "state")
    assert done.returncode == 1
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1
    assert says in done.stderr
    assert not (tmp_path / "state").exists()


def test_the_hook_path_loads_neither_pydantic_nor_the_other_verbs(tmp_path: Path) -> None:
    """Its start-up is most of its latency: the entry point keeps the hook free of the rest of the CLI."""
    probe = (
        "import sys\nimport groove.cli.entry\nsys.argv = ['groove', 'hook', 'Stop']\n"
        "try:\n    groove.cli.entry.main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'mcp') "
        "or m.startswith(('groove.client', 'groove.swarm', 'groove.coordinator'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        input=json.dumps({"session_id": "s", "cwd": str(tmp_path)}),
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "GROOVE_STATE_DIR": str(tmp_path / "state")},
    )  # fmt: skip
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout + done.stderr


CLAUDE_POST_TOOL_USE = {
    "session_id": "abc123",
    "transcript_path": "/home/alex/.claude/projects/shop/abc123.jsonl",
    "cwd": "REPO",
    "hook_event_name": "PostToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "make test"},
    "tool_response": {"stdout": "ok", "stderr": ""},
    "tool_use_id": "toolu_01",
}


def test_post_tool_use_hands_an_agent_its_nudges_once(
    coordinator: RunningCoordinator, client: GrooveClient, repo: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    memory = client.create_memory(str(repo), "m", "g")
    client.send_nudge("claude-1", memory, "the build is red: rebase on main", "lead", priority="high")
    client.send_nudge("role:qa", memory, "check the refund flow", "lead")
    client.send_nudge("codex-9", memory, "not for claude-1", "lead")
    me = {"GROOVE_AGENT_ID": "claude-1", "GROOVE_ROLE": "qa"}
    given = context_of(hook("PostToolUse", event(CLAUDE_POST_TOOL_USE, repo), coordinator.endpoint, state, me),
                       "PostToolUse")  # fmt: skip
    assert given.index("(high) the build is red: rebase on main (from lead)") < given.index("check the refund flow")
    assert "not for claude-1" not in given
    # acknowledged once handed over: the next tool call adds nothing, and the nudge shows who has it
    again = hook("PostToolUse", event(CLAUDE_POST_TOOL_USE, repo), coordinator.endpoint, state, me)
    assert (again.returncode, again.stdout) == (0, "")
    assert all("claude-1" in n.acked_by for n in client.nudges(memory) if n.target != "codex-9")
    # a session with no agent identity (a person's own) gets nothing and leaves the nudges alone
    anonymous = hook("PostToolUse", event(CLAUDE_POST_TOOL_USE, repo), coordinator.endpoint, state)
    assert (anonymous.returncode, anonymous.stdout) == (0, "")
    assert client.poll_nudges("codex-9")[0].message == "not for claude-1"


def test_a_worker_run_session_leaves_preparing_and_closing_to_the_worker(
    coordinator: RunningCoordinator, client: GrooveClient, repo: Path, tmp_path: Path
) -> None:
    client.learn(f"project:{repo}", "solution", "orders tests share a database", "give each test its own schema")
    state = tmp_path / "state"
    worker = {"GROOVE_AGENT_ID": "claude-1", "GROOVE_INJECTION_ID": "01a21217-ec82-7661-a855-1ad0c187189e"}
    for name, shape in (("SessionStart", CLAUDE_SESSION_START), ("SessionEnd", CLAUDE_SESSION_END)):
        done = hook(name, event(shape, repo), coordinator.endpoint, state, worker)
        assert (done.returncode, done.stdout) == (0, "")
    assert client.stats().op_counts.get("inject.prepare", 0) == 0
    assert not (state / "sessions").exists()
