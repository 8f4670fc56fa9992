"""The trust block groove writes into a Codex config: what it adds, what it leaves to the user, how it goes."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from groove.integrations.codextrust import Trusted, TrustError, ours, with_block, without_block

HOOKS = Path("/home/alex/shop/.codex/hooks.json")
PROJECT = Path("/home/alex/shop")
USER_CONFIG = f'model = "gpt-5-codex"\n\n[hooks.state."{HOOKS}:stop:0:0"]\ntrusted_hash = "sha256:mine"\n'
HASHES = {f"{HOOKS}:session_start:0:0": "sha256:aa", f"{HOOKS}:stop:0:0": "sha256:bb"}


def test_the_block_trusts_the_project_and_groove_s_hooks_and_comes_out_byte_for_byte() -> None:
    written = with_block(USER_CONFIG, Trusted(HOOKS, PROJECT, HASHES))
    config = tomllib.loads(written)
    assert config["projects"][str(PROJECT)] == {"trust_level": "trusted"}
    assert config["hooks"]["state"][f"{HOOKS}:session_start:0:0"] == {"trusted_hash": "sha256:aa"}
    assert config["hooks"]["state"][f"{HOOKS}:stop:0:0"] == {"trusted_hash": "sha256:mine"}  # the user's decision
    assert with_block(written, Trusted(HOOKS, PROJECT, HASHES)) == written  # a reinstall changes nothing
    assert without_block(written, HOOKS) == USER_CONFIG


def test_a_project_the_user_marked_untrusted_is_not_overruled() -> None:
    untrusted = f'[projects."{PROJECT}"]\ntrust_level = "untrusted"\n'
    with pytest.raises(TrustError, match="untrusted"):
        with_block(untrusted, Trusted(HOOKS, PROJECT, HASHES))
    with pytest.raises(TrustError, match="not valid TOML"):
        with_block("[broken", Trusted(HOOKS, PROJECT, HASHES))


def test_only_hooks_running_groove_s_commands_in_that_file_are_trusted() -> None:
    listed = [
        {"key": "a", "currentHash": "sha256:1", "sourcePath": str(HOOKS), "command": "groove hook Stop"},
        {"key": "b", "currentHash": "sha256:2", "sourcePath": str(HOOKS), "command": "notify-send done"},
        {"key": "c", "currentHash": "sha256:3", "sourcePath": "/elsewhere/hooks.json", "command": "groove hook Stop"},
    ]
    assert ours(listed, HOOKS, {"groove hook Stop"}) == {"a": "sha256:1"}
