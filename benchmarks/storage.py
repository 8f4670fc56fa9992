"""The storage limit: what CozoDB on RocksDB takes for exactly the rows learning writes store, with nothing
of the coordinator around it.

    python -m benchmarks.storage [--writes 20000]

The rows come from the coordinator's own planning of corpus learnings (`Planner`, `TierWrite`, `render.script`
on a scratch tier that is never committed to): per write a `learning`, a `usage_stats`, a `learning_hashes`
row (with its `by_hash` index) and an `applied_requests` row. The timed part only commits them into a fresh
tier, one transaction per batch, in two ways:

- `script`: the chained `{...}` blocks the writer commits (`:put`, and `:insert` for the request ids);
- `import`: `import_relations` of the same rows (puts only: it cannot refuse a request id seen before, and
  it fires no index maintenance the script would not; shown for how much the script language costs).

Then what pycozo's conversion of the parameters costs, per write, at batch 256 (`conversion`): the same
parameters handed to a script that reads none of them (CozoDB converts every one first), rows as lists (what
the writer sends) and as tuples.

Prints a table, then one JSON line.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from benchmarks.common import machine
from groove.cli.output import table
from groove.coordinator.store.faults import Faults
from groove.coordinator.store.relations import APPLIED, HASHES, LEARNING, USAGE, Relation
from groove.coordinator.store.tiers import Tier
from groove.coordinator.store.tierset import TierSet
from groove.coordinator.wire.digests import body_digest
from groove.coordinator.write.ops import PUT
from groove.coordinator.write.planning import Planner
from groove.coordinator.write.render import script
from groove.coordinator.write.tierwrite import TierWrite
from groove.protocol import constants as C
from groove.protocol.ids import now_ms, uuid7
from groove.protocol.models import LearningPutRequest
from groove.swarm.corpus import load

BATCHES = (1, 16, 256)
# the script's parameter names for the four relations a new learning's write stores (render.script)
_PARAMS: dict[str, Relation] = {"hashes": HASHES, "learning": LEARNING, "usage": USAGE, "applied": APPLIED}

Prepared = tuple[str, dict[str, Any]]


def prepare(work: Path, batch: int, writes: int, seed: int = 1) -> list[Prepared]:
    """`writes` corpus learnings as the writer would commit them, `batch` to a transaction: (script, params)."""
    corpus, rng = load(), random.Random(seed)
    tiers = TierSet(work / "scratch")
    tier = tiers.open_user()
    out: list[Prepared] = []
    try:
        for _ in range(max(1, writes // batch)):
            now = now_ms()
            planner = Planner(tiers, now, finds=[], claims=[], closes=[])
            bodies = []
            for _ in range(batch):
                learning = corpus.learning(rng, noted_by="bench") | {"scope": C.SCOPE_GLOBAL}
                bodies.append(LearningPutRequest.model_validate({"learnings": [learning]}))
            parts = [PUT.plan(planner, body)[C.TIER_USER] for body in bodies]
            write = TierWrite(tier, parts, now)
            for body, part in zip(bodies, parts, strict=True):
                write.apply(uuid7(), PUT.name, part, True, body_digest(body.model_dump(exclude_unset=True)))
            out.append(script(write))
    finally:
        tiers.close()
    return out


def _imports(params: dict[str, Any]) -> dict[str, Any]:
    return {rel.name: {"headers": list(rel.cols), "rows": params[name]} for name, rel in _PARAMS.items()}


def commit_rate(work: Path, prepared: list[Prepared], how: str) -> float:
    """Writes per second committing `prepared` into a fresh tier, one transaction per batch."""
    path = work / f"target-{how}-{len(prepared)}"
    path.mkdir()
    tier = Tier(C.TIER_USER, path, Faults())
    try:
        writes = sum(len(params["applied"]) for _, params in prepared)
        # the corpus repeats itself: a repeat within a batch reinforces the first instead of storing a row
        learnings = sum(len(params["learning"]) for _, params in prepared)
        if how == "import":
            payloads = [_imports(params) for _, params in prepared]
            started = time.perf_counter()
            with tier.using() as db:
                for payload in payloads:
                    db.import_relations(payload)
        else:
            started = time.perf_counter()
            for text, params in prepared:
                tier.run(text, params)
        elapsed = time.perf_counter() - started
        stored = tier.run("?[count(id)] := *learning{id}")[0][0]
        indexed = tier.run("?[count(h)] := *learning_hashes:by_hash{hash: h}")[0][0]
        if stored != learnings or indexed != learnings:
            raise RuntimeError(f"{how}: {learnings} learnings committed, {stored} stored, {indexed} indexed")
    finally:
        tier.close()
    return writes / elapsed


def conversion(work: Path, prepared: list[Prepared]) -> dict[str, float]:
    """µs per write that converting its parameters costs, rows as lists and as tuples (best of three)."""
    (work / "conversion").mkdir()
    tier = Tier(C.TIER_USER, work / "conversion", Faults())
    writes = sum(len(params["applied"]) for _, params in prepared)
    shapes = {
        "lists_us": [params for _, params in prepared],
        "tuples_us": [{k: [tuple(row) for row in rows] for k, rows in params.items()} for _, params in prepared],
    }
    found = {}
    try:
        for shape, all_params in shapes.items():
            best = float("inf")
            for _ in range(3):
                started = time.perf_counter()
                for params in all_params:
                    tier.run("?[n] := n = 1", params)
                best = min(best, time.perf_counter() - started)
            found[shape] = round(best / writes * 1e6, 2)
    finally:
        tier.close()
    return found


def measure(writes: int, batches: tuple[int, ...] = BATCHES) -> list[dict[str, Any]]:
    """Per batch size: writes/s by script and by import_relations."""
    results = []
    with tempfile.TemporaryDirectory(prefix="groove-storage-") as tmp:
        work = Path(tmp)
        for batch in batches:
            # batch 1 commits as many transactions as batch 256 commits writes: fewer writes keep it short
            n = min(writes, 2_000) if batch == 1 else writes
            prepared = prepare(work / f"prep-{batch}", batch, n)
            found: dict[str, Any] = {
                "batch": batch,
                "script_per_s": round(commit_rate(work, prepared, "script"), 1),
                "import_per_s": round(commit_rate(work, prepared, "import"), 1),
            }
            if batch == max(batches):
                found["conversion"] = conversion(work, prepared)
            results.append(found)
    return results


@click.command()
@click.option("--writes", type=click.IntRange(256), default=20_000, show_default=True, help="Writes per figure.")
def main(writes: int) -> None:
    """Time raw commits of learning writes' rows at batch 1, 16 and 256."""
    results = measure(writes)
    columns = ("batch", "script_per_s", "import_per_s")
    click.echo(table(columns, [tuple(r[c] for c in columns) for r in results]))
    converting = results[-1]["conversion"]
    lists, tuples = converting["lists_us"], converting["tuples_us"]
    click.echo(f"parameter conversion per write: rows as lists {lists} µs, as tuples {tuples} µs")
    click.echo(json.dumps({"bench": "storage", "results": results, "machine": machine()}))


if __name__ == "__main__":
    main()
