"""Trust for the Codex hooks `groove hooks install --agent codex` writes, so that Codex runs them.

Codex (0.169) runs a hook of a project's `.codex/hooks.json` only when both hold: the project is trusted
(`[projects."/abs/path"] trust_level = "trusted"` in the user's `~/.codex/config.toml`; an untrusted project's
`.codex/` is not loaded at all), and the hook itself was reviewed (a `[hooks.state."KEY"]` table with its
`trusted_hash`, written when a person approves it in Codex's `/hooks` view). An untrusted hook is skipped
without a word. The user-level `~/.codex/hooks.json` needs only the second.

The hash is Codex's own: groove asks the installed Codex for it (`codex app-server`, method `hooks/list`,
which lists each hook with its key and `currentHash`) rather than imitating its algorithm, and writes the
trust for groove's hooks only, in a block of the user's config between `# groove-trust:begin <hooks file>`
and `# groove-trust:end <hooks file>` markers; uninstalling takes that block out. A project or a hook the
user already decided on (a `[projects]` or `[hooks.state]` table outside the block) is left as it is: a project
marked untrusted is an error, not overruled.
"""

from __future__ import annotations

import json
import subprocess
import threading
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from groove.integrations.install import write_atomically

_LIST_TIMEOUT_S: Final = 30.0


class TrustError(Exception):
    """Codex could not say what to trust, or the user's config stands in the way: one line."""


@dataclass(frozen=True)
class Trusted:
    """What to write for one hooks file: the project to trust (None: a user-level file) and each groove hook's key
    and hash."""

    hooks_file: Path
    project: Path | None
    hashes: dict[str, str]


def _markers(hooks_file: Path) -> tuple[str, str]:
    return f"# groove-trust:begin {hooks_file}", f"# groove-trust:end {hooks_file}"


def without_block(text: str, hooks_file: Path) -> str:
    """The config without groove's trust block for `hooks_file` (and the blank line before it)."""
    begin, end = _markers(hooks_file)
    start = text.find(begin)
    if start < 0:
        return text
    stop = text.find(end, start)
    stop = len(text) if stop < 0 else stop + len(end)
    stop += 1 if text[stop : stop + 1] == "\n" else 0
    head = text[:start]
    return (head[:-1] if head.endswith("\n\n") else head) + text[stop:]


def with_block(text: str, trusted: Trusted) -> str:
    """The config with groove's trust block for the file: the project trusted unless the config already says
    so, and a `trusted_hash` for each groove hook the config has no decision on. Raises TrustError if the
    project is marked untrusted, or if the config is not TOML."""
    rest = without_block(text, trusted.hooks_file)
    try:
        config = tomllib.loads(rest)
    except tomllib.TOMLDecodeError as exc:
        raise TrustError(f"the Codex config is not valid TOML ({exc}); fix it first") from None
    lines = []
    if trusted.project is not None:
        level = config.get("projects", {}).get(str(trusted.project), {}).get("trust_level")
        if level is None:
            lines += [f"[projects.{json.dumps(str(trusted.project))}]", 'trust_level = "trusted"', ""]
        elif level != "trusted":
            raise TrustError(f"Codex marks {trusted.project} {level!r}; trust it in Codex first, then install again")
    decided = config.get("hooks", {}).get("state", {})
    for key, digest in trusted.hashes.items():
        if key not in decided:
            lines += [f"[hooks.state.{json.dumps(key)}]", f"trusted_hash = {json.dumps(digest)}", ""]
    if not lines:
        return rest
    begin, end = _markers(trusted.hooks_file)
    block = "\n".join([begin, *lines[:-1], end]) + "\n"
    return rest + ("" if not rest else "\n" if rest.endswith("\n") else "\n\n") + block


def list_hooks(codex: str, cwd: Path, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Every hook Codex would run in `cwd`, as its app server lists them (key, command, sourcePath,
    currentHash, trustStatus...). Raises TrustError if Codex does not answer."""
    requests = [
        {"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "groove", "version": "1"}}},
        {"method": "initialized"},
        {"id": 2, "method": "hooks/list", "params": {"cwds": [str(cwd)]}},
    ]
    try:
        proc = subprocess.Popen([codex, "app-server"], cwd=cwd, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)  # fmt: skip
    except OSError as exc:
        raise TrustError(f"cannot run {codex}: {exc.strerror or exc}") from None
    # the server ends at the end of its stdin, answered or not: it stays open until the answer is read
    timer = threading.Timer(_LIST_TIMEOUT_S, proc.kill)
    timer.start()
    try:
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write(b"".join(json.dumps(r).encode() + b"\n" for r in requests))
        proc.stdin.flush()
        for line in proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and message.get("id") == 2:
                if "error" in message:
                    raise TrustError(f"{codex} could not list its hooks: {message['error'].get('message', message)}")
                return [hook for entry in message["result"]["data"] for hook in entry["hooks"]]
    finally:
        timer.cancel()
        proc.kill()
        proc.wait()
    raise TrustError(f"{codex} app-server gave no list of hooks within {_LIST_TIMEOUT_S:g} s")


def ours(hooks: list[dict[str, Any]], hooks_file: Path, commands: set[str]) -> dict[str, str]:
    """The key and current hash of each hook of `hooks_file` that runs one of groove's `commands`, among those
    Codex listed."""
    return {
        h["key"]: h["currentHash"]
        for h in hooks
        if h.get("sourcePath") == str(hooks_file) and h.get("command") in commands
    }


def install_trust(codex: str, config: Path, hooks_file: Path, project: Path | None, commands: set[str]) -> int:
    """Trust groove's hooks (those running `commands`) in `hooks_file`, and the project for a project's file, in
    the Codex config `config`; how many hooks Codex now trusts. The project is trusted first: until then Codex
    does not load the project's hooks, so it could not list them."""
    current = config.read_text() if config.exists() else ""
    cwd = project or hooks_file.parent
    if project is not None:
        current = with_block(current, Trusted(hooks_file, project, {}))
        write_atomically(config, current.encode())
    hashes = ours(list_hooks(codex, cwd), hooks_file, commands)
    if not hashes:
        raise TrustError(f"{codex} does not list groove's hooks in {hooks_file}; is this Codex 0.169 or newer?")
    write_atomically(config, with_block(current, Trusted(hooks_file, project, hashes)).encode())
    listed = [h for h in list_hooks(codex, cwd) if h["key"] in hashes]
    return sum(1 for h in listed if h.get("trustStatus") == "trusted")


def remove_trust(config: Path, hooks_file: Path) -> bool:
    """Take groove's trust block for `hooks_file` out of the Codex config; whether there was one."""
    if not config.exists():
        return False
    text = config.read_text()
    left = without_block(text, hooks_file)
    if left == text:
        return False
    if left.strip():
        write_atomically(config, left.encode())
    else:
        config.unlink()
    return True
