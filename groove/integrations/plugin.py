"""The `groove` Claude Code plugin and the marketplace that lists it, rendered from what `groove hooks install`
writes, so the two ways into Claude Code never disagree on a hook, the MCP server or the instructions.

The repository is the marketplace: `.claude-plugin/marketplace.json` at its root lists one plugin, `groove`, in
`plugins/groove/`. A person runs `claude plugin marketplace add <path or git URL>` and `claude plugin install
groove@groove`, and every Claude Code session (any project) runs groove's hooks and MCP server, both started as
`groove ...` from PATH with the connection from the environment (`GROOVE_ENDPOINT`, ...). The files are
generated: `python -m groove.integrations.plugin` (in the repository root) rewrites them, and a test fails when
they are stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Final

from groove.integrations.install import INSTRUCTIONS, SERVER, Setup, hook_group
from groove.protocol.constants import GROOVE_VERSION

NAME: Final = "groove"
PLUGIN_DIR: Final = Path("plugins") / NAME  # under the repository (the marketplace) root
# Claude Code names a plugin's MCP server plugin_<plugin>_<server>: the prefix of the tools the model sees
TOOL_PREFIX: Final = f"mcp__plugin_{NAME}_{SERVER}__"
DESCRIPTION: Final = (
    "Every Claude Code session starts with its project's best learnings from groove, the shared memory of coding "
    "agents; the agent records what it learns and rates what it was given"
)
SKILL: Final = (
    "---\n"
    f"name: {NAME}\n"
    "description: "
    + json.dumps(
        "Use at the start of a task, when you find something the next agent should know, and when you finish: "
        "search, record and rate the project's shared learnings in groove."
    )
    + "\n"
    "---\n"
    f"{INSTRUCTIONS}\n"
    "- Rate a learning as soon as you know how it turned out: `record_outcome` (`helpful`, `ignored` or\n"
    "  `contradicted`) with the injection id. Each rating counts once.\n"
)
# The plugin's hooks: a session's start, turns and end, and a swarm worker's nudges after each tool call
# (without GROOVE_AGENT_ID that hook answers nothing and connects to nothing). No `--prompts`: it would add a
# coordinator round trip before every prompt for every user of the plugin.
SETUP: Final = Setup(agent="claude", home=Path("~"), project=None, program=["groove"], options=[], nudges=True)


def _json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def files() -> dict[Path, str]:
    """Each file of the marketplace and its plugin, by its path under the repository root."""
    plugin = {"name": NAME, "version": GROOVE_VERSION, "description": DESCRIPTION, "author": {"name": NAME},
              "keywords": ["memory", "mcp", "hooks", "agents"]}  # fmt: skip
    marketplace = {
        "name": NAME,
        "owner": {"name": NAME},
        "metadata": {"description": "groove: the shared memory and coordinator for swarms of coding agents"},
        "plugins": [
            {
                "name": NAME,
                "source": f"./{PLUGIN_DIR.as_posix()}",
                "description": DESCRIPTION,
                "version": GROOVE_VERSION,
            }
        ],
    }
    return {
        Path(".claude-plugin/marketplace.json"): _json(marketplace),
        PLUGIN_DIR / ".claude-plugin/plugin.json": _json(plugin),
        PLUGIN_DIR / "hooks/hooks.json": _json({"hooks": {e: [hook_group(SETUP, e)] for e in SETUP.events()}}),
        PLUGIN_DIR / ".mcp.json": _json({"mcpServers": {SERVER: SETUP.server()}}),
        PLUGIN_DIR / f"skills/{NAME}/SKILL.md": SKILL,
    }


def stale(root: Path) -> list[Path]:
    """The files under `root` that differ from their rendering (or are missing)."""
    return [path for path, text in files().items() if not (root / path).is_file() or (root / path).read_text() != text]


def main(argv: list[str]) -> int:
    """Write the files under the repository root given (default: the current directory)."""
    root = Path(argv[0]) if argv else Path.cwd()
    for path, text in files().items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
        print(f"wrote {root / path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
