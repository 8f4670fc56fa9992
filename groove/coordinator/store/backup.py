"""Backups: a consistent snapshot of every tier while serving, restoring one into an empty data dir, and
(the automatic snapshot a tier gets before its schema is migrated is `schema.snapshot_before_migration`).

A backup directory holds `manifest.json` and one CozoDB backup file per tier (an SQLite database that
`cozo` itself can open), named after the tier's directory: `user.cozo`, `projects/<slug>-<hash>.cozo`,
`enterprises/<org>.cozo`. The snapshot is taken with group commits held, so every tier shows the same
moment: no acked write is in one tier's file and missing from another's.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pycozo.client import Client

from groove.coordinator import release
from groove.coordinator.errors import Rejected, StorageError
from groove.coordinator.store.schema import CURRENT_VERSION
from groove.coordinator.store.tiers import DB_DIR, TIER_FILE, tier_dir
from groove.coordinator.store.tierset import TierSet
from groove.protocol.errors import ErrorCode
from groove.protocol.ids import now_ms

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
BACKUP_FORMAT = "groove-backup"
_SUFFIX = ".cozo"


def _backup_name(data_dir: Path, tier: str) -> str:
    return str(tier_dir(data_dir, tier).relative_to(data_dir)) + _SUFFIX


def backup_tiers(tiers: TierSet, directory: Path) -> dict[str, Any]:
    """Write every tier (open or not, unavailable ones aside) into `directory`; call with commits held."""
    started = time.monotonic()
    if directory.exists() and any(directory.iterdir()):
        raise Rejected(ErrorCode.CONFLICT, f"{directory} is not empty; back up into a new or empty directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise Rejected(ErrorCode.BAD_REQUEST, f"cannot make {directory}: {exc.strerror or exc}") from None
    written = []
    for tier in tiers.open_all():
        name = _backup_name(tiers.data_dir, tier.name)
        target = directory / name
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            with tier.using() as db:
                db.backup(str(target))
        except Exception as exc:  # pycozo raises bare exceptions
            raise Rejected(ErrorCode.INTERNAL, f"backing up tier {tier.name!r} failed: {exc}") from None
        written.append({"tier": tier.name, "file": name, "learnings": tier.learnings, "bytes": target.stat().st_size})
        log.info("backup: tier %s (%d learnings) -> %s", tier.name, tier.learnings, target)
    manifest = {
        "format": BACKUP_FORMAT,
        "groove": release(),
        "schema_version": CURRENT_VERSION,
        "created_at": now_ms(),
        "tiers": written,
        "unavailable": sorted(tiers.unavailable()),
    }
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return {"directory": str(directory), "tiers": written, "took_ms": (time.monotonic() - started) * 1000}


def restore_backup(directory: Path, data_dir: Path, progress: Callable[[str], None]) -> list[dict[str, Any]]:
    """Make a data dir from a backup; refuses a data dir that holds any tier. Returns the restored tiers."""
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
    except OSError as exc:
        raise StorageError(f"{directory} is not a groove backup: cannot read {MANIFEST} ({exc.strerror})") from None
    except ValueError:
        raise StorageError(f"{directory / MANIFEST} is not JSON") from None
    if not isinstance(manifest, dict) or manifest.get("format") != BACKUP_FORMAT:
        raise StorageError(f"{directory / MANIFEST} is not a groove backup manifest")
    present = [p for p in ("user", "projects", "enterprises") if (data_dir / p).exists()]
    if present:
        raise StorageError(
            f"data dir {data_dir} already holds tiers ({', '.join(present)}), and restoring never overwrites them: "
            f"pass --data-dir with a new directory (then serve from it), or move {data_dir} aside first"
        )
    owner = TierSet(data_dir)
    owner.lock()  # no coordinator may start on it meanwhile
    try:
        return _restore(directory, manifest, data_dir, progress)
    finally:
        owner.close()


def _restore(
    directory: Path, manifest: dict[str, Any], data_dir: Path, progress: Callable[[str], None]
) -> list[dict[str, Any]]:
    restored = []
    for n, entry in enumerate(manifest["tiers"], 1):
        source = directory / entry["file"]
        if not source.is_file():
            raise StorageError(f"the backup lacks {source} (tier {entry['tier']})")
        path = tier_dir(data_dir, entry["tier"])
        path.mkdir(parents=True)
        (path / TIER_FILE).write_text(json.dumps({"tier": entry["tier"]}) + "\n")
        db = Client("rocksdb", str(path / DB_DIR), dataframe=False)
        try:
            db.restore(str(source))
            count = int(db.run("?[count(id)] := *learning{id}")["rows"][0][0])
        except Exception as exc:
            raise StorageError(f"restoring tier {entry['tier']} from {source} failed: {exc}") from None
        finally:
            db.close()
        if count != entry["learnings"]:
            raise StorageError(
                f"tier {entry['tier']}: {count} learnings restored, the manifest says {entry['learnings']}"
            )
        restored.append({"tier": entry["tier"], "learnings": count})
        progress(f"[{n}/{len(manifest['tiers'])}] tier {entry['tier']}: {count} learnings")
    return restored
