"""`export` and `import`: learnings, their usage and archive state, and relations as one JSON file.

Embeddings are left out (they are the model's, 1.5 KB each, and can be made again): import queues every
imported learning for embedding. Both run with group commits held, so an export is one consistent
moment and an import never interleaves with a batch.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from coordinator.derived import Derived
from coordinator.errors import Rejected
from coordinator.records import (
    JOINED_BODY,
    JOINED_HEAD,
    LEARNING_COLS,
    RELATION_COLS,
    USAGE_COLS,
    content_hash,
    learning_row,
    learning_wire,
    put_script,
)
from coordinator.tiers import Tier, TierSet
from protocol.codec import describe
from protocol.errors import ErrorCode
from protocol.ids import now_ms
from protocol.portability import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    ExportFile,
    ExportRequest,
    ImportRequest,
)

log = logging.getLogger(__name__)

_ARCHIVE_COLS = ("learning_id", "archived_at", "reason")
_HASH_COLS = ("learning_id", "scope", "hash")
_MAX_IMPORT_BYTES = 2 * 1024**3


def _tier_dump(tier: Tier) -> dict[str, Any]:
    archived = {
        lid: (at, why)
        for lid, at, why in tier.run("?[l, a, r] := *archived{learning_id: l, archived_at: a, reason: r}")
    }
    learnings = []
    for row in tier.run(f"?[{JOINED_HEAD}] := {JOINED_BODY} :order id"):
        item = learning_wire(row, tier.name)
        del item["tier"]
        at_why = archived.get(item["id"])
        item["archived"] = {"archived_at": at_why[0], "reason": at_why[1]} if at_why else None
        learnings.append(item)
    relations = [
        dict(zip(RELATION_COLS, row, strict=True))
        for row in tier.run(f"?[{', '.join(RELATION_COLS)}] := *learning_relations{{{', '.join(RELATION_COLS)}}}")
    ]
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


def import_file(tiers: TierSet, derived: Derived, body: ImportRequest) -> dict[str, Any]:
    """Add the file's learnings and relations, skipping ids already stored anywhere; rebuild the derived
    data of each tier written (which queues the new learnings for embedding)."""
    export = read_export(Path(body.path))
    ids = [item.id for t in export.tiers for item in t.learnings]
    if len(set(ids)) != len(ids):
        raise Rejected(ErrorCode.BAD_REQUEST, f"{body.path}: a learning id appears twice")
    existing = set(tiers.locate(ids))
    counts = dict.fromkeys(("learnings_imported", "learnings_skipped", "relations_imported", "relations_skipped"), 0)
    queued = 0
    for part in export.tiers:
        tier = tiers.get(part.tier, create=True)
        assert tier is not None
        fresh = [item for item in part.learnings if item.id not in existing]
        counts["learnings_skipped"] += len(part.learnings) - len(fresh)
        stored = {
            (f, r, t)
            for f, r, t in tier.run("?[f, r, t] := *learning_relations{from_id: f, relation_type: r, to_id: t}")
        }
        relations = [rel for rel in part.relations if (rel.from_id, rel.relation_type, rel.to_id) not in stored]
        counts["relations_skipped"] += len(part.relations) - len(relations)
        if not fresh and not relations:
            continue
        params: dict[str, Any] = {
            "learnings": [learning_row(i, i.id, i.confidence, i.created_at, i.updated_at) for i in fresh],
            "usage": [[i.id, *(getattr(i.usage, c) for c in USAGE_COLS[1:])] for i in fresh],
            "hashes": [[i.id, i.scope, content_hash(i.description, i.insight)] for i in fresh],
            "archived": [[i.id, i.archived.archived_at, i.archived.reason] for i in fresh if i.archived],
            "relations": [[getattr(rel, c) for c in RELATION_COLS] for rel in relations],
        }
        script = "\n".join(
            [
                put_script("learning", LEARNING_COLS, 1, "learnings"),
                put_script("usage_stats", USAGE_COLS, 1, "usage"),
                put_script("learning_hashes", _HASH_COLS, 1, "hashes"),
                put_script("archived", _ARCHIVE_COLS, 1, "archived"),
                put_script("learning_relations", RELATION_COLS, 3, "relations"),
            ]
        )
        tier.run(script, params)  # one transaction per tier
        tier.learnings += len(fresh)
        counts["learnings_imported"] += len(fresh)
        counts["relations_imported"] += len(relations)
        derived.load_tier(tier)
        queued += len(fresh)
        log.info("import: tier %s, %d learnings and %d relations added", tier.name, len(fresh), len(relations))
    return counts | {"tiers": len(export.tiers), "queued_for_embedding": queued if derived.embeddings else 0}
