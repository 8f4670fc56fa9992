#!/usr/bin/env bash
# Claude Code with groove, in one repository: session 1 records what it learned, session 2 is given it when
# it starts and rates it when it ends.
#
#   examples/claude-code.sh ~/src/shop
#
# Needs a running coordinator (`groove serve --data-dir ~/.local/share/groove &`; GROOVE_ENDPOINT names
# another one than tcp://127.0.0.1:5555), and `groove` and `claude` on PATH: `source .venv/bin/activate`,
# and `make install` puts Claude Code in coding-agents/node_modules/.bin.
set -euo pipefail

repo=$(cd "${1:?usage: examples/claude-code.sh REPOSITORY}" && pwd)
cd "$repo"
groove ping >/dev/null   # no coordinator: one line naming the endpoint, within 3 s
groove hooks install     # SessionStart/SessionEnd hooks, the groove MCP server, AGENTS.md (undo: groove hooks uninstall)

# headless sessions (-p) may use groove's MCP tools without asking; an interactive `claude` asks once
allowed=(--allowedTools 'mcp__groove__*')
claude -p "The orders tests fail. Find out why, fix them, and record what you learned." "${allowed[@]}"
claude -p "Add a refunds test to the orders suite." "${allowed[@]}"

groove search "orders tests" --project .   # session 1's learning, with the rating session 2 gave it
