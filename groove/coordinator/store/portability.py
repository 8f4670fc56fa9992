"""`export` and `import`: learnings, their usage and archive state, and relations as one JSON file.

Embeddings are left out (they are the model's, 1.5 KB each, and can be made again): import queues every
imported learning for embedding. An export runs with group commits held, so it is one consistent moment.
An import is read and validated here, then written through the batcher (planning.ImportRecord): one
transaction per tier, exactly once under resends like every write.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from groove.coordinator.errors import Rejected
from groove.coordinator.store.records import learning_wire
from groove.coordinator.store.relations import ARCHIVED, JOINED_BODY, JOINED_HEAD, RELATIONS
from groove.coordinator.store.tiers import Tier
from groove.coordinator.store.tierset import TierSet
from groove.coordinator.wire.codec import describe
from groove.protocol.errors import ErrorCode
from groove.protocol.ids import now_ms
from groove.protocol.portability import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    ExportFile,
    ExportRequest,
    ImportRequest,
)

log = logging.getLogger(__name__)

_MAX_IMPORT_BYTES = 2 * 1024**3


def _tier_dump(tier: Tier) -> dict[str, Any]:
    archived = {lid: (at, why) for lid, at, why in tier.run(ARCHIVED.scan())}
    learnings = []
    for row in tier.run(f"?[{JOINED_HEAD}] := {JOINED_BODY} :order id"):
        item = learning_wire(row, tier.name)
        del item["tier"]
        at_why = archived.get(item["id"])
        item["archived"] = {"archived_at": at_why[0], "reason": at_why[1]} if at_why else None
        learnings.append(item)
    relations = [RELATIONS.wire(row) for row in tier.run(RELATIONS.scan())]
    return {"tier": tier.name, "learnings": learnings, "relations": relations}


def export_tiers(tiers: TierSet, body: ExportRequest) -> dict[str, Any]:
    """Write the export file (atomically: a temp file renamed into place); returns the counts."""
    path = Path(body.path)
    if path.is_dir() or not path.parent.is_dir():
        raise Rejected(ErrorCode.BAD_REQUEST, f"{path}: give a file path in an existing directory")
    chosen = tiers.named(body.tiers)
    dumps = []
    for tier in chosen:
        dumps.append(_tier_dump(tier))
        log.info("export: tier %s, %d learnings", tier.name, len(dumps[-1]["learnings"]))
    document = {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, "exported_at": now_ms(), "tiers": dumps}
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w") as out:
            json.dump(document, out, ensure_ascii=False, indent=1)
            out.flush()
            os.fsync(out.fileno())
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise Rejected(ErrorCode.BAD_REQUEST, f"cannot write {path}: {exc.strerror or exc}") from None
    return {
        "path": str(path),
        "tiers": len(dumps),
        "learnings": sum(len(d["learnings"]) for d in dumps),
        "relations": sum(len(d["relations"]) for d in dumps),
    }


def read_export(path: Path) -> ExportFile:
    """Parse and validate an export file; Rejected `bad_request` says what is wrong (nothing is written)."""
    try:
        size = path.stat().st_size
        if size > _MAX_IMPORT_BYTES:
            raise Rejected(ErrorCode.BAD_REQUEST, f"{path} is {size} bytes; the import limit is {_MAX_IMPORT_BYTES}")
        data = json.loads(path.read_bytes())
    except OSError as exc:
        raise Rejected(ErrorCode.BAD_REQUEST, f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise Rejected(ErrorCode.BAD_REQUEST, f"{path} is not JSON: {exc}") from None
    try:
        return ExportFile.model_validate(data)
    except ValidationError as exc:
        raise Rejected(ErrorCode.BAD_REQUEST, f"{path} is not a groove export: {describe(exc)}") from None


def check_import(body: ImportRequest) -> ExportFile:
    """The export file an `import` names, read and validated whole before anything is written (on a reader
    thread); its learnings and relations are then committed through the batcher like any write."""
    export = read_export(Path(body.path))
    ids = [item.id for t in export.tiers for item in t.learnings]
    if len(set(ids)) != len(ids):
        raise Rejected(ErrorCode.BAD_REQUEST, f"{body.path}: a learning id appears twice")
    return export
