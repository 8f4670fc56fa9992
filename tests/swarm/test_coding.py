"""How a worker runs a coding agent: its command line, what its output said, and where its changes are filed."""

from __future__ import annotations

import json
import subprocess
import tomllib

import pytest

from groove.protocol import constants as C
from groove.swarm.coding import CLAUDE, CODEX, AgentNotFound, Identity, find_binary, launch, read_ending
from groove.swarm.gitwork import artifact_type, branch_name

WHO = Identity("claude-1", "01a21217-e463-731c-a343-6a35ee640326", "t:1", "01a21217-ec82-7661-a855-1ad0c187189e")


def test_claude_gets_groove_on_its_command_line_and_its_identity_in_the_environment() -> None:
    run = launch(CLAUDE, "/bin/claude", "do it", WHO, ["--endpoint", "tcp://127.0.0.1:5555"])
    argv = run.argv
    settings = json.loads(argv[argv.index("--settings") + 1])
    assert (
        "hook PostToolUse --endpoint tcp://127.0.0.1:5555" in settings["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    )
    server = json.loads(argv[argv.index("--mcp-config") + 1])["mcpServers"]["groove"]
    assert server["args"][-3:] == ["mcp", "--endpoint", "tcp://127.0.0.1:5555"]
    assert argv[:3] == ["/bin/claude", "-p", "do it"]
    assert run.env[C.ENV_AGENT_ID] == "claude-1"
    assert run.env[C.ENV_TASK_ID] == "t:1"
    assert run.env["ENABLE_TOOL_SEARCH"] == "false"


def test_codex_gets_the_same_as_config_overrides_it_parses() -> None:
    run = launch(CODEX, "/bin/codex", "do it", WHO, ["--endpoint", "tcp://127.0.0.1:5555"])
    overrides = dict(run.argv[i + 1].split("=", 1) for i, a in enumerate(run.argv) if a == "-c")
    parsed = tomllib.loads("\n".join(f"{k} = {v}" for k, v in overrides.items() if "." not in k))
    assert "hook PostToolUse" in parsed["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    assert overrides["mcp_servers.groove.required"] == "true"
    assert "--dangerously-bypass-hook-trust" in run.argv
    assert run.argv[-1] == "do it"


def test_the_agents_final_message_and_error_are_read_from_its_output() -> None:
    claude = "\n".join(
        json.dumps(e) for e in [{"type": "system"}, {"type": "result", "is_error": False, "result": "ok"}]
    )
    assert (read_ending(CLAUDE, claude).message, read_ending(CLAUDE, claude).error) == ("ok", None)
    failed = json.dumps({"type": "result", "is_error": True, "result": "API Error: 400"})
    assert read_ending(CLAUDE, failed).error == "API Error: 400"
    codex = "\n".join(json.dumps(e) for e in [
        {"type": "item.completed", "item": {"type": "agent_message", "text": "first"}},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "last"}},
        {"type": "turn.failed", "error": {"message": "stream disconnected"}}])  # fmt: skip
    assert (read_ending(CODEX, codex).message, read_ending(CODEX, codex).error) == ("last", "stream disconnected")
    assert read_ending(CODEX, "not json\n[1]").message == ""


def test_a_missing_agent_says_what_to_install() -> None:
    with pytest.raises(AgentNotFound, match="@openai/codex"):
        find_binary(CODEX, "/nowhere/codex")


@pytest.mark.parametrize(
    ("path", "kind"),
    [("src/refunds.py", "code"), ("tests/test_refunds.py", "test"), ("docs/refunds.md", "document"),
     ("db/migrations/0002_refunds.sql", "migration"), ("pyproject.toml", "config"), ("api/schema.graphql", "schema")],
)  # fmt: skip
def test_changed_files_are_filed_by_kind(path: str, kind: str) -> None:
    assert artifact_type(path) == kind


def test_a_branch_name_is_safe_for_any_task_id() -> None:
    assert branch_name("release:2.0/api", "claude 1") == "groove/release-2.0-api/claude-1"


def test_the_hook_command_reaches_the_shell_intact_whatever_a_key_holds() -> None:
    # a CURVE key in Z85 may hold `$`, `!`, `&`...: the agents run a hook through `sh -c`
    key = "rq:rM>}U?@Lns47E1$kR.o@n%FcmmsL/@{H8]yf!"
    hook = launch(CLAUDE, "/bin/claude", "x", WHO, ["--endpoint", "tcp://127.0.0.1:5555", "--server-key", key])
    command = json.loads(hook.argv[hook.argv.index("--settings") + 1])["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    words = subprocess.run(["sh", "-c", f"printf '%s\\n' {command}"], capture_output=True, text=True, check=True)
    assert words.stdout.splitlines()[-2:] == ["--server-key", key]
