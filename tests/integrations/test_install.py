"""`groove hooks install|uninstall`: merged into a user's own settings, never clobbering them; uninstalled
byte for byte."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from groove.integrations.install import InstallError, Manifest, Setup, plan_install, plan_uninstall
from groove.swarm.coding import groove_argv

# A user's own files, written the way people write them: tabs, inline arrays, no final newline, non-ASCII.
CLAUDE_SETTINGS = '{\n\t"permissions": {"allow": ["Bash(npm test)"]},\n\t"hooks": {\n\t\t"Stop": [{"hooks": ' \
    '[{"type": "command", "command": "notify-send \\"fertig ✓\\""}]}]\n\t},\n\t"model": "opus"\n}'  # fmt: skip
MCP_JSON = '{"mcpServers": {"github": {"command": "gh-mcp", "args": []}}}\n'
CLAUDE_MD = "# Shop\n\nUse pnpm, not npm.\n"
CODEX_TOML = 'model = "gpt-5-codex"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root`, by relative path, with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def run(setup: Setup, manifest: Manifest, removing: bool = False) -> int:
    """Install or uninstall; how many files changed."""
    changes = (plan_uninstall if removing else plan_install)(setup, manifest)
    manifest.apply(changes, removing)
    return len(changes)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A user's home with a project whose agent files are already configured."""
    home = tmp_path / "home"
    project = home / "shop"
    (project / ".claude").mkdir(parents=True)
    (project / ".git").mkdir()
    (project / ".claude/settings.json").write_text(CLAUDE_SETTINGS)
    (project / ".mcp.json").write_text(MCP_JSON)
    (project / "CLAUDE.md").write_text(CLAUDE_MD)
    (home / ".codex").mkdir()
    (home / ".codex/config.toml").write_text(CODEX_TOML)
    return home


@pytest.mark.parametrize("agent", ["claude", "codex"])
@pytest.mark.parametrize("for_user", [False, True])
def test_install_merges_reinstall_changes_nothing_and_uninstall_restores_every_byte(
    home: Path, tmp_path: Path, agent: str, for_user: bool
) -> None:
    before = snapshot(home)
    setup = Setup(agent, home, None if for_user else home / "shop", ["groove"], ["--timeout", "3"], prompts=True,
                  nudges=True)  # fmt: skip
    manifest = Manifest(tmp_path / "state")
    assert run(setup, manifest) == (4 if agent == "claude" and not for_user else 3)
    files = setup.files()
    hooks = json.loads(files["hooks"].read_text())["hooks"]
    assert {e: [h["command"] for g in groups for h in g["hooks"]] for e, groups in hooks.items()}.items() >= {
        "SessionStart": ["groove hook SessionStart --timeout 3"],
        "UserPromptSubmit": ["groove hook UserPromptSubmit --timeout 3"],
        "SessionEnd": ["groove hook SessionEnd --timeout 3"],
        "PostToolUse": ["groove hook PostToolUse --timeout 3"],
    }.items()
    if agent == "claude" and not for_user:
        settings = json.loads(files["hooks"].read_text())
        assert settings["permissions"] == {"allow": ["Bash(npm test)"]}  # the user's own, kept
        assert settings["model"] == "opus"
        assert [h["command"] for g in settings["hooks"]["Stop"] for h in g["hooks"]] == [
            'notify-send "fertig ✓"',
            "groove hook Stop --timeout 3",
        ]
        servers = json.loads(files["mcp"].read_text())["mcpServers"]
        assert servers == {"github": {"command": "gh-mcp", "args": []},
                           "groove": {"command": "groove", "args": ["mcp", "--timeout", "3"]}}  # fmt: skip
        claude_md = files["import"].read_text()
        assert claude_md.startswith(CLAUDE_MD)
        assert "\n@AGENTS.md\n" in claude_md
    if agent == "codex":
        config = tomllib.loads(files["mcp"].read_text())
        assert config["mcp_servers"]["groove"] == {"command": "groove", "args": ["mcp", "--timeout", "3"]}
        if for_user:
            assert config["model"] == "gpt-5-codex"
            assert config["mcp_servers"]["docs"] == {"command": "docs-mcp"}
    assert "record_learning" in files["instructions"].read_text()

    assert run(setup, manifest) == 0  # installed already: nothing to change
    assert run(setup, manifest, removing=True) == (4 if agent == "claude" and not for_user else 3)
    assert snapshot(home) == before
    assert not (home / "shop/.codex").exists()  # a directory groove made and emptied is gone too
    assert run(setup, manifest, removing=True) == 0


def test_a_file_edited_after_install_loses_only_groove_s_part(home: Path, tmp_path: Path) -> None:
    setup = Setup("claude", home, home / "shop", ["groove"], [])
    manifest = Manifest(tmp_path / "state")
    run(setup, manifest)
    settings = home / "shop/.claude/settings.json"
    edited = json.loads(settings.read_text())
    edited["env"] = {"CI": "1"}
    settings.write_text(json.dumps(edited, indent=2) + "\n")
    agents_md = home / "shop/AGENTS.md"
    agents_md.write_text("# Agents\n\nBe terse.\n\n" + agents_md.read_text())
    run(setup, manifest, removing=True)
    assert json.loads(settings.read_text()) == {**json.loads(CLAUDE_SETTINGS), "env": {"CI": "1"}}
    assert agents_md.read_text() == "# Agents\n\nBe terse.\n"
    assert (home / "shop/CLAUDE.md").read_text() == CLAUDE_MD
    assert (home / "shop/.mcp.json").read_text() == MCP_JSON  # unchanged since install: restored exactly


def test_without_the_state_directory_uninstall_still_takes_out_exactly_groove_s_part(
    home: Path, tmp_path: Path
) -> None:
    # the user's files as an editor that reformats JSON writes them
    canonical = json.dumps(json.loads(CLAUDE_SETTINGS), indent=2, ensure_ascii=False) + "\n"
    (home / "shop/.claude/settings.json").write_text(canonical)
    (home / "shop/.mcp.json").write_text(json.dumps(json.loads(MCP_JSON), indent=2) + "\n")
    before = snapshot(home)
    setup = Setup("claude", home, home / "shop", ["/opt/groove/bin/groove"], ["--endpoint", "tcp://10.0.0.5:5555"])
    run(setup, Manifest(tmp_path / "state"))
    shutil.rmtree(tmp_path / "state")
    other = Setup("claude", home, home / "shop", ["groove"], [])  # another --command: still recognised as groove's
    run(other, Manifest(tmp_path / "state"), removing=True)
    assert snapshot(home) == before


@pytest.mark.parametrize(
    ("path", "content", "says"),
    [
        ("shop/.claude/settings.json", "{not json", "is not valid JSON"),
        ("shop/.claude/settings.json", '{"hooks": []}', "'hooks' is not an object"),
        ("shop/.claude/settings.json", '{"hooks": {"Stop": {}}}', "hooks.Stop is not a list"),
        ("shop/.mcp.json", '{"mcpServers": {"groove": {"command": "node", "args": ["my-groove.js"]}}}',
         "that groove did not write"),
        ("shop/.mcp.json", "[]", "does not hold a JSON object"),
        ("shop/AGENTS.md", "caf\xe9", "is not UTF-8 text"),
    ],
)  # fmt: skip
def test_a_file_that_cannot_be_merged_is_an_error_and_nothing_changes(
    home: Path, tmp_path: Path, path: str, content: str, says: str
) -> None:
    (home / path).write_bytes(content.encode("latin-1"))  # the é of the last case is not UTF-8
    before = snapshot(home)
    with pytest.raises(InstallError, match=says):
        plan_install(Setup("claude", home, home / "shop", ["groove"], []), Manifest(tmp_path / "state"))
    assert snapshot(home) == before
    assert not (tmp_path / "state").exists()


def test_codex_config_that_is_not_toml_or_has_its_own_groove_server_is_refused(home: Path, tmp_path: Path) -> None:
    for content, says in (("model = ", "is not valid TOML"), ('[mcp_servers.groove]\ncommand = "x"\n', "not written")):
        (home / ".codex/config.toml").write_text(content)
        with pytest.raises(InstallError, match=says):
            plan_install(Setup("codex", home, None, ["groove"], []), Manifest(tmp_path / "state"))


def test_a_claude_md_that_imports_agents_md_already_is_left_alone(home: Path, tmp_path: Path) -> None:
    (home / "shop/CLAUDE.md").write_text("@AGENTS.md\n")
    changes = plan_install(Setup("claude", home, home / "shop", ["groove"], []), Manifest(tmp_path / "state"))
    assert home / "shop/CLAUDE.md" not in [c.path for c in changes]


def test_the_cli_dry_run_prints_the_diff_and_writes_nothing(home: Path, tmp_path: Path) -> None:
    before = snapshot(home)
    # groove on PATH, as in an activated venv
    env = {**os.environ, "HOME": str(home), "GROOVE_STATE_DIR": str(tmp_path / "state"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}  # fmt: skip
    shown = subprocess.run(groove_argv("hooks", "install", "--project", str(home / "shop/.claude"), "--dry-run"),
                           capture_output=True, text=True, env=env, timeout=60, check=False)  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    added = [line for line in shown.stdout.splitlines() if line.startswith("+")]
    assert any('"command": "groove hook SessionStart --timeout 3"' in line for line in added)
    assert shown.stdout.splitlines()[-1] == "dry run: 4 file(s) would change, none was written"
    assert snapshot(home) == before
    refused = subprocess.run(groove_argv("hooks", "install", "--project", str(home / "shop"), "--user"),
                             capture_output=True, text=True, env=env, timeout=60, check=False)  # fmt: skip
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1


def test_without_groove_on_path_the_hooks_run_this_python(home: Path, tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(home), "GROOVE_STATE_DIR": str(tmp_path / "state"), "PATH": "/nowhere"}
    done = subprocess.run([sys.executable, "-m", "groove.cli", "hooks", "install", "--project", str(home / "shop")],
                          capture_output=True, text=True, env=env, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "groove is not on PATH" in done.stderr
    hooks = json.loads((home / "shop/.claude/settings.json").read_text())["hooks"]
    assert (
        hooks["SessionStart"][0]["hooks"][0]["command"]
        == f"{sys.executable} -m groove.cli hook SessionStart --timeout 3"
    )
    server = json.loads((home / "shop/.mcp.json").read_text())["mcpServers"]["groove"]
    assert server == {"command": sys.executable, "args": ["-m", "groove.cli", "mcp", "--timeout", "3"]}


def test_a_cluster_map_is_written_into_every_command_and_a_bad_one_is_refused(home: Path, tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.toml"
    cluster.write_text('home = "a"\n[coordinators]\na = "tcp://10.0.0.1:5555"\n')
    env = {**os.environ, "HOME": str(home), "GROOVE_STATE_DIR": str(tmp_path / "state"), "PATH": "/nowhere"}
    argv = [
        sys.executable,
        "-m",
        "groove.cli",
        "--cluster",
        str(cluster),
        "hooks",
        "install",
        "--project",
        str(home / "shop"),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    hooks = json.loads((home / "shop/.claude/settings.json").read_text())["hooks"]
    said = f"{sys.executable} -m groove.cli hook SessionStart --timeout 3 --cluster {cluster}"
    assert hooks["SessionStart"][0]["hooks"][0]["command"] == said
    server = json.loads((home / "shop/.mcp.json").read_text())["mcpServers"]["groove"]
    assert server["args"][-2:] == ["--cluster", str(cluster)]
    cluster.write_text('home = "b"\n[coordinators]\na = "tcp://10.0.0.1:5555"\n')  # b is no coordinator
    before = snapshot(home)
    refused = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert refused.returncode == 2
    assert refused.stderr.startswith(f"groove: error: cluster map {cluster}: ")
    assert refused.stderr.count("\n") == 1
    assert snapshot(home) == before
