"""Folders of derived files kept from one run to the next, each named by the token it was saved with.

A checkpoint writes a new folder, `<parent>/<token>/`, syncs its files and the folder, and only then does the tier
record the token (`derived_saved`); the folder of the checkpoint before stays until that record is in, so a crash at
any moment leaves the tier holding a token whose folder is whole. A folder is trusted only where the tier holds its
token; the others are removed once a later record is in (`prune`).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path


def fsync(paths: list[Path]) -> None:
    """fsync each file or directory, in order."""
    for target in paths:
        fd = os.open(target, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def new_token() -> str:
    """A token for one save: never the same twice."""
    return uuid.uuid4().hex


def write_folder(parent: Path, write: Callable[[Path], None]) -> str:
    """Make a folder in `parent` holding what `write` puts in it, synced; returns its token (its name)."""
    token = new_token()
    folder = parent / token
    folder.mkdir(parents=True)
    try:
        write(folder)
        fsync([*sorted(folder.iterdir()), folder, parent])
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return token


def folder(parent: Path, token: str | None) -> Path | None:
    """The folder saved with `token` (the tier's), or None when there is none."""
    if token is None or not token.isalnum():
        return None
    found = parent / token
    return found if found.is_dir() else None


def prune(parent: Path, token: str | None) -> None:
    """Remove everything in `parent` but the folder saved with `token`: older checkpoints, and halves of ones a
    crash interrupted."""
    try:
        entries = list(parent.iterdir()) if parent.is_dir() else []
        for entry in entries:
            if entry.name == token:
                continue
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
    except OSError:  # leftovers cost disk, never a wrong answer: the next prune tries again
        return
