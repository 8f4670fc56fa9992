"""Folders of derived files kept across a clean stop, each vouched for by a token file written last.

A clean stop writes a folder's files, syncs them, and only then writes its token; the tier records the same token
(`derived_saved`) after every folder is down. As a tier opens, its tokens are read and removed from it before any
write can reach it (`Tier.take_saved`), and a folder's token file is removed as it is read (`take`): from then on
only the next clean stop can make the two match again. A folder is trusted only where they do.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

TOKEN_FILE = "token"  # written last into a kept folder


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


def write_folder(folder: Path, write: Callable[[Path], None]) -> str:
    """Make `folder` afresh with what `write` puts in it, synced, then its token; returns the token."""
    (folder / TOKEN_FILE).unlink(missing_ok=True)  # the old files no longer match what is about to be written
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    write(folder)
    token = new_token()
    fsync(sorted(folder.iterdir()))  # the token goes down only after the files it vouches for
    (folder / TOKEN_FILE).write_text(token)
    fsync([folder / TOKEN_FILE, folder])
    return token


def take(folder: Path, token: str | None) -> bool:
    """Whether `folder` was written with `token` (the tier's); its token file goes either way, since the folder
    matches the tier only until the tier's next write. OSError if the token file cannot be read or removed."""
    mark = folder / TOKEN_FILE
    saved = mark.read_text().strip() if mark.exists() else None
    mark.unlink(missing_ok=True)
    return token is not None and saved == token
