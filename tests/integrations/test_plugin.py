"""The Claude Code plugin's files are rendered from what `groove hooks install` writes (integrations/plugin.py):
the committed ones are current, and they say what the per-repository install says."""

from __future__ import annotations

import json
from pathlib import Path

from groove.integrations import plugin
from groove.integrations.install import INSTRUCTIONS, add_hooks, add_server
from tests.helpers import ROOT


def test_the_committed_plugin_is_its_rendering() -> None:
    assert plugin.stale(ROOT) == [], "run `python -m groove.integrations.plugin` in the repository root"


def test_the_plugin_says_what_a_per_repository_install_says(tmp_path: Path) -> None:
    rendered = {path.as_posix(): text for path, text in plugin.files().items()}
    hooks = json.loads(rendered[f"{plugin.PLUGIN_DIR.as_posix()}/hooks/hooks.json"])
    assert hooks == json.loads(add_hooks(tmp_path / "settings.json", "", plugin.SETUP))
    assert set(hooks["hooks"]) == {"SessionStart", "Stop", "SessionEnd", "PostToolUse"}
    servers = json.loads(rendered[f"{plugin.PLUGIN_DIR.as_posix()}/.mcp.json"])
    assert servers == json.loads(add_server(tmp_path / ".mcp.json", "", plugin.SETUP))
    assert INSTRUCTIONS in rendered[f"{plugin.PLUGIN_DIR.as_posix()}/skills/groove/SKILL.md"]
    marketplace = json.loads(rendered[".claude-plugin/marketplace.json"])
    assert [p["source"] for p in marketplace["plugins"]] == [f"./{plugin.PLUGIN_DIR.as_posix()}"]


def test_a_stale_file_is_named(tmp_path: Path) -> None:
    plugin.main([str(tmp_path)])
    assert plugin.stale(tmp_path) == []
    (tmp_path / plugin.PLUGIN_DIR / ".mcp.json").write_text("{}\n")
    (tmp_path / ".claude-plugin" / "marketplace.json").unlink()
    assert plugin.stale(tmp_path) == [Path(".claude-plugin/marketplace.json"), plugin.PLUGIN_DIR / ".mcp.json"]
