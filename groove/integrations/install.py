"""`groove hooks install|uninstall`: wire groove into a coding agent's own configuration, without clobbering it.

What is written, per agent and place (`--project DIR`, the default, or `--user`):

| agent | hooks | MCP server | instructions |
|---|---|---|---|
| claude, project | `DIR/.claude/settings.json` | `DIR/.mcp.json` | `DIR/AGENTS.md`, `@AGENTS.md` in `CLAUDE.md` |
| claude, user | `~/.claude/settings.json` | `~/.claude.json` | a block in `~/.claude/CLAUDE.md` |
| codex, project | `DIR/.codex/hooks.json` | `DIR/.codex/config.toml` | a block in `DIR/AGENTS.md` |
| codex, user | `~/.codex/hooks.json` | `~/.codex/config.toml` | a block in `~/.codex/AGENTS.md` |

Claude Code reads CLAUDE.md, not AGENTS.md: the block shared with other agents goes in AGENTS.md, which
CLAUDE.md imports. JSON files are merged: groove's hook groups are added to each event's list and its
server to `mcpServers`, everything else left as it was. Text files get a block between `groove:begin` and
`groove:end` markers. Installing twice changes nothing the second time. A server named `groove` that groove
did not write is an error, not overwritten.

Uninstalling removes exactly what was added. Each file's bytes before the first install are kept in the
state directory (never in the repository) with a digest of what was written: a file unchanged since is
restored byte for byte (or removed, if groove created it); one edited since has only groove's entries and
block taken out.
"""

from __future__ import annotations

import base64
import contextlib
import difflib
import hashlib
import json
import re
import shlex
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from groove.integrations.hook import EVENTS, POST_TOOL_USE, PROMPT_SUBMIT, SESSION_END, SESSION_START, STOP

AGENTS: Final = ("claude", "codex")
SERVER: Final = "groove"
HOOK_TIMEOUT_S: Final = 10  # the agent's limit on one hook run; the hook itself gives up on the coordinator sooner
_MD_BEGIN: Final = "<!-- groove:begin (written by `groove hooks install`; `groove hooks uninstall` removes it) -->"
_MD_END: Final = "<!-- groove:end -->"
_TOML_BEGIN: Final = "# groove:begin (written by `groove hooks install`; `groove hooks uninstall` removes it)"
_TOML_END: Final = "# groove:end"
INSTRUCTIONS: Final = """## Shared memory: groove
The agents working on this project share what they learn through groove (the `groove` MCP server).
- Your session starts with the project's best learnings (each with its id); `search_learnings` finds more.
- When you find something the next agent should know (a fix that worked, a trap, a convention), call
  `record_learning` with the insight written as advice.
- When you finish, call `end_session` with the injection id you were given, whether the task succeeded, and
  which learnings helped or were wrong here. That is what makes good advice rise and bad advice fade."""


class InstallError(Exception):
    """A file cannot be merged (not JSON, a foreign `groove` server...): nothing was changed."""


@dataclass(frozen=True)
class Change:
    """One file's content before and after (None: the file does not exist, or is to be removed)."""

    path: Path
    before: bytes | None
    after: bytes | None

    def diff(self) -> str:
        """A unified diff of the change, for `--dry-run`."""
        old = (self.before or b"").decode(errors="replace").splitlines(keepends=True)
        new = (self.after or b"").decode(errors="replace").splitlines(keepends=True)
        label = str(self.path)
        return "".join(difflib.unified_diff(old, new, f"{label} (now)", f"{label} (after)"))


@dataclass(frozen=True)
class Setup:
    """What to install: where, for which agent, and how the agent should run groove."""

    agent: str
    home: Path  # the user's home: the user-level files live under it
    project: Path | None  # None: install for the user
    program: list[str]  # how the agent runs groove: ["groove"], ["/opt/venv/bin/groove"], ["uvx", "groove"]
    options: list[str]  # connection options given to every groove command (--endpoint ...)
    prompts: bool = False  # also add the prompt's matches on every UserPromptSubmit
    nudges: bool = False  # also hand the agent named by GROOVE_AGENT_ID its nudges after every tool call

    def events(self) -> list[str]:
        """The hook events to install."""
        return [SESSION_START, *([PROMPT_SUBMIT] if self.prompts else []), STOP, SESSION_END,
                *([POST_TOOL_USE] if self.nudges else [])]  # fmt: skip

    def hook_command(self, event: str) -> str:
        """The command the agent runs for `event`."""
        return shlex.join([*self.program, "hook", event, *self.options])  # run by a shell: `$` stays as it is

    def server(self) -> dict[str, Any]:
        """The MCP server entry: how the agent starts `groove mcp`."""
        return {"command": self.program[0], "args": [*self.program[1:], "mcp", *self.options]}

    def files(self) -> dict[str, Path]:
        """Each file this setup writes, by what it holds."""
        home, root = self.home, self.project
        if self.agent == "claude":
            if root is None:
                return {"hooks": home / ".claude/settings.json", "mcp": home / ".claude.json",
                        "instructions": home / ".claude/CLAUDE.md"}  # fmt: skip
            return {"hooks": root / ".claude/settings.json", "mcp": root / ".mcp.json",
                    "instructions": root / "AGENTS.md", "import": root / "CLAUDE.md"}  # fmt: skip
        base = home / ".codex" if root is None else root / ".codex"
        return {"hooks": base / "hooks.json", "mcp": base / "config.toml",
                "instructions": (home / ".codex" if root is None else root) / "AGENTS.md"}  # fmt: skip


# `groove hook EVENT`, or `python -m groove.cli hook EVENT` where groove was not on PATH at install time
_OUR_HOOK = re.compile(r"(?:groove[\"']?|-m\s+cli)\s+hook\s+(" + "|".join(EVENTS) + r")\b")


def _ours(group: Any) -> bool:
    """Whether a hook group in an agent's settings was written by groove (by any `--command`)."""
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return (
        isinstance(hooks, list)
        and bool(hooks)
        and all(isinstance(h, dict) and _OUR_HOOK.search(str(h.get("command", ""))) for h in hooks)
    )


# --- each kind of file: text -> text, given the setup; `add` installs, `remove` takes groove's part out ------


def _read_json(path: Path, text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InstallError(f"{path} is not valid JSON ({exc}); fix it first, nothing was changed") from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} does not hold a JSON object; nothing was changed")
    return data


def _write_json(data: dict[str, Any], text: str) -> str:
    """`data` in the file's own indentation (two spaces if it has none yet)."""
    found = re.search(r"^([ \t]+)\"", text, re.M)
    indent: str | int = found.group(1) if found else 2
    return json.dumps(data, indent=indent, ensure_ascii=False) + "\n"


def _section(path: Path, data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise InstallError(f"{path}: {key!r} is not an object; nothing was changed")
    return value


def hook_group(setup: Setup, event: str) -> dict[str, Any]:
    """groove's hook group for `event`, as both agents' settings (and the Claude Code plugin) hold it."""
    return {"hooks": [{"type": "command", "command": setup.hook_command(event), "timeout": HOOK_TIMEOUT_S}]}


def add_hooks(path: Path, text: str, setup: Setup) -> str:
    """Give each event groove's hook group: in place of the one there (so a reinstall moves nothing), else at
    the end; events this setup leaves out lose groove's group (a reinstall without --prompts)."""
    data = _read_json(path, text)
    hooks = _section(path, data, "hooks")
    wanted = setup.events()
    for event in dict.fromkeys([*hooks, *wanted]):
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise InstallError(f"{path}: hooks.{event} is not a list; nothing was changed")
        ours_at = next((i for i, group in enumerate(groups) if _ours(group)), None)
        kept = [group for group in groups if not _ours(group)]
        if event in wanted:
            mine = hook_group(setup, event)
            at = len(kept) if ours_at is None else ours_at
            hooks[event] = [*kept[:at], mine, *kept[at:]]
        elif ours_at is not None:
            hooks[event] = kept
            if not kept:
                del hooks[event]
    return _write_json(data, text)


def remove_hooks(path: Path, text: str, _setup: Setup) -> str:
    """Take groove's hook groups out, and what is left empty by that; a file without any is left as it is."""
    data = _read_json(path, text)
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return text
    ours = [e for e, groups in hooks.items() if isinstance(groups, list) and any(_ours(g) for g in groups)]
    if not ours:
        return text
    for event in ours:
        hooks[event] = [g for g in hooks[event] if not _ours(g)]
        if not hooks[event]:
            del hooks[event]
    if not hooks:
        del data["hooks"]
    return _write_json(data, text) if data else ""


def add_server(path: Path, text: str, setup: Setup) -> str:
    """Add the `groove` entry to `mcpServers`."""
    data = _read_json(path, text)
    servers = _section(path, data, "mcpServers")
    if SERVER in servers and servers[SERVER] != setup.server() and not _is_groove(servers[SERVER]):
        raise InstallError(f"{path} already has an MCP server named {SERVER!r} that groove did not write")
    servers[SERVER] = setup.server()
    return _write_json(data, text)


def _is_groove(server: Any) -> bool:
    """Whether an MCP server entry runs `groove mcp` (by any `--command`)."""
    args = server.get("args") if isinstance(server, dict) else None
    return isinstance(args, list) and "mcp" in args and "groove" in " ".join(map(str, [server.get("command"), *args]))


def remove_server(path: Path, text: str, _setup: Setup) -> str:
    """Take the `groove` entry out of `mcpServers`; a file without it is left as it is."""
    data = _read_json(path, text)
    servers = data.get("mcpServers")
    if not isinstance(servers, dict) or not _is_groove(servers.get(SERVER)):
        return text
    del servers[SERVER]
    if not servers:
        del data["mcpServers"]
    return _write_json(data, text) if data else ""


def _add_block(text: str, body: str, begin: str, end: str) -> str:
    """Append a marked block (or replace the one there)."""
    block = f"{begin}\n{body}\n{end}\n"
    start = text.find(begin)
    if start >= 0:  # replaced where it is, so a reinstall leaves what the user wrote around it in place
        stop = _block_end(text, start, end)
        return text[:start] + block + text[stop:]
    if not text:
        return block
    return text + ("\n" if text.endswith("\n") else "\n\n") + block


def _remove_block(text: str, begin: str, end: str) -> str:
    """Take a marked block out, with the blank line `_add_block` put before it."""
    start = text.find(begin)
    if start < 0:
        return text
    stop = _block_end(text, start, end)
    head = text[:start]
    if head.endswith("\n\n"):
        head = head[:-1]
    return head + text[stop:]


def _block_end(text: str, start: int, end: str) -> int:
    """Where the block starting at `start` ends, its line break included."""
    stop = text.find(end, start)
    stop = len(text) if stop < 0 else stop + len(end)
    return stop + 1 if text[stop : stop + 1] == "\n" else stop


def add_instructions(_path: Path, text: str, _setup: Setup) -> str:
    """The block telling the agent how to use groove."""
    return _add_block(text, INSTRUCTIONS, _MD_BEGIN, _MD_END)


def remove_instructions(_path: Path, text: str, _setup: Setup) -> str:
    """Take the instructions block out."""
    return _remove_block(text, _MD_BEGIN, _MD_END)


def add_import(_path: Path, text: str, _setup: Setup) -> str:
    """`@AGENTS.md` in CLAUDE.md, unless it imports it already."""
    if any(line.strip() == "@AGENTS.md" for line in text.splitlines()):
        return text
    return _add_block(text, "@AGENTS.md", _MD_BEGIN, _MD_END)


def add_codex_server(path: Path, text: str, setup: Setup) -> str:
    """`[mcp_servers.groove]` in Codex's config.toml, as a marked block."""
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InstallError(f"{path} is not valid TOML ({exc}); fix it first, nothing was changed") from None
    if SERVER in config.get("mcp_servers", {}) and _TOML_BEGIN not in text:
        raise InstallError(f"{path} already has [mcp_servers.{SERVER}], not written by groove")
    server = setup.server()
    body = f"[mcp_servers.{SERVER}]\ncommand = {json.dumps(server['command'])}\nargs = {json.dumps(server['args'])}"
    return _add_block(text, body, _TOML_BEGIN, _TOML_END)


def remove_codex_server(_path: Path, text: str, _setup: Setup) -> str:
    """Take the `[mcp_servers.groove]` block out."""
    return _remove_block(text, _TOML_BEGIN, _TOML_END)


Edit = Callable[[Path, str, Setup], str]
_EDITS: dict[tuple[str, str], tuple[Edit, Edit]] = {
    ("claude", "hooks"): (add_hooks, remove_hooks),
    ("claude", "mcp"): (add_server, remove_server),
    ("claude", "instructions"): (add_instructions, remove_instructions),
    ("claude", "import"): (add_import, remove_instructions),
    ("codex", "hooks"): (add_hooks, remove_hooks),
    ("codex", "mcp"): (add_codex_server, remove_codex_server),
    ("codex", "instructions"): (add_instructions, remove_instructions),
}


def _plan(setup: Setup, removing: bool, manifest: Manifest) -> list[Change]:
    changes = []
    for role, path in setup.files().items():
        edit = _EDITS[(setup.agent, role)][1 if removing else 0]
        before = path.read_bytes() if path.exists() else None
        if removing and (kept := manifest.original(path, before)) is not None:
            after = kept.content
        else:
            try:
                current = (before or b"").decode()
            except UnicodeDecodeError:
                raise InstallError(f"{path} is not UTF-8 text; nothing was changed") from None
            text = edit(path, current, setup)
            after = text.encode() if text else None  # nothing left of a file groove emptied: removed
        if after != before:
            changes.append(Change(path, before, after))
    return changes


def plan_install(setup: Setup, manifest: Manifest) -> list[Change]:
    """The changes installing makes; raises InstallError before any is made."""
    return _plan(setup, False, manifest)


def plan_uninstall(setup: Setup, manifest: Manifest) -> list[Change]:
    """The changes uninstalling makes."""
    return _plan(setup, True, manifest)


@dataclass(frozen=True)
class Kept:
    """A file's content before groove first wrote it (None: it did not exist)."""

    content: bytes | None


class Manifest:
    """What each file held before groove first wrote it, and a digest of what groove wrote, under
    `<state>/installs/`."""

    def __init__(self, state_dir: Path) -> None:
        self.dir = state_dir / "installs"

    def _entry(self, path: Path) -> Path:
        return self.dir / (hashlib.sha256(str(path.absolute()).encode()).hexdigest()[:32] + ".json")

    def original(self, path: Path, now: bytes | None) -> Kept | None:
        """The content to restore, if the file is still exactly what groove wrote; else None."""
        try:
            entry = json.loads(self._entry(path).read_text())
        except (OSError, ValueError):
            return None
        if now is None or hashlib.sha256(now).hexdigest() != entry.get("written"):
            return None
        before = entry.get("before")
        return Kept(None if before is None else base64.b64decode(before))

    def apply(self, changes: list[Change], removing: bool) -> None:
        """Write the changes (each file atomically) and record or drop what is kept of each."""
        self.dir.mkdir(parents=True, exist_ok=True)
        for change in changes:
            entry = self._entry(change.path)
            if removing or change.after is None:
                entry.unlink(missing_ok=True)
            else:
                first = None if change.before is None else base64.b64encode(change.before).decode()
                kept = self.original(change.path, change.before)
                if kept is not None:  # a reinstall over groove's own untouched output keeps the first original
                    first = None if kept.content is None else base64.b64encode(kept.content).decode()
                written = hashlib.sha256(change.after).hexdigest()
                entry.write_text(json.dumps({"path": str(change.path.absolute()), "before": first, "written": written}))
            if change.after is None:
                change.path.unlink(missing_ok=True)
                if change.path.parent.name in (".claude", ".codex"):  # left empty by groove: tidied
                    with contextlib.suppress(OSError):
                        change.path.parent.rmdir()
                continue
            write_atomically(change.path, change.after)


def write_atomically(path: Path, content: bytes) -> None:
    """Write `path` whole or not at all (its directory made if missing): an agent may read it meanwhile."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".groove-tmp")
    tmp.write_bytes(content)
    tmp.replace(path)
