"""Derived indexes kept across a clean stop, and trusted only where the tier says they match it.

A start used to rebuild every tier's keyword entries and vectors from CozoDB: at 100,000 learnings a restarted
coordinator found every learning again after 34 s, and settled its graph after 54. Now a clean stop saves each
open tier's vector index (the folder `VECTOR_DIR` in the tier's directory) and its count and content hashes
(`Tier.save_counts`), and marks its entries in the keyword file, each with a fresh token (`store/kept.py`), and
only then records those tokens in the tier (`derived_saved`). A tier that opens
holding a token loads the index saved with it instead of rebuilding that index; the rest is rebuilt as before.

The tier's tokens are removed as it opens, before any write can reach it, and so are the saved files' (the
keyword file's mark, the vector folder's token file): from then on only the next clean stop's save can match the
tier again. A crash at any moment, a save that failed, a tier restored from a backup, files damaged or missing:
each leaves a token that is not the tier's, or none, and that index is rebuilt from the source. Nothing is served
from an index that does not hold exactly what its tier held when the token was recorded. The keyword file, which
all tiers share and which is written unsynced while serving, is made afresh after a crash
(`KeywordIndex.distrust`): a tier the crashed run never opened keeps its vectors, not its keyword entries.
"""

from __future__ import annotations

import logging
import time

from groove.coordinator.errors import DamagedIndex
from groove.coordinator.search.keywords import KeywordIndex
from groove.coordinator.search.vectors import VectorIndex
from groove.coordinator.store import kept
from groove.coordinator.store.relations import DERIVED_SAVED
from groove.coordinator.store.tiers import COUNTS, Tier
from groove.protocol.ids import now_ms

log = logging.getLogger(__name__)

KEYWORDS, VECTORS = "keywords", "vectors"  # the names of a tier's saved indexes
VECTOR_DIR = "derived-vectors"  # in a tier's directory, beside its database


def record_tokens(tier: Tier, tokens: dict[str, str], now: int) -> None:
    """Say in the tier that the indexes saved with these tokens match it (the last step of a clean stop)."""
    if tokens:
        tier.clear_tokens()  # those of the save before: a name saved then and not now must vouch for nothing
        tier.run(DERIVED_SAVED.put("rows"), {"rows": [[name, token, now] for name, token in tokens.items()]})


def load_vectors(tier: Tier, token: str | None, exact_limit: int) -> VectorIndex | None:
    """The vector index saved with `token` in the tier's folder, or None (then it is rebuilt)."""
    folder = tier.path / VECTOR_DIR
    try:
        return VectorIndex.load(folder, exact_limit) if kept.take(folder, token) else None
    except (OSError, ValueError, RuntimeError, DamagedIndex) as exc:  # numpy: ValueError; usearch: RuntimeError
        log.warning("tier %s: its saved vectors cannot be loaded (%s); rebuilding them", tier.name, exc)
        return None


def save_indexes(
    tiers: dict[str, Tier], vectors: dict[str, VectorIndex], keywords: KeywordIndex, build_wait_s: float
) -> None:
    """At a clean stop, once nothing writes: save each of these tiers' vector index and mark its keyword entries,
    then record the tokens in each tier. What cannot be saved is rebuilt at the next start; a graph still being
    built after `build_wait_s` is not saved."""
    started = time.monotonic()
    tokens: dict[str, dict[str, str]] = {name: {} for name in tiers}
    for name, tier in tiers.items():
        index = vectors.get(name)
        if index is None or not index.wait_built(max(0.0, started + build_wait_s - time.monotonic())):
            continue
        try:
            tokens[name][VECTORS] = kept.write_folder(tier.path / VECTOR_DIR, index.save)
        except Exception as exc:  # derived data: the next start rebuilds it
            log.warning("tier %s: its vectors cannot be saved (%s); they are rebuilt at the next start", name, exc)
    for name, tier in tiers.items():
        try:
            tokens[name][COUNTS] = tier.save_counts()
        except Exception as exc:  # derived data: the next start counts again
            log.warning("tier %s: its counts cannot be saved (%s); counted again at the next start", name, exc)
    for name, token in keywords.mark(list(tiers)).items():
        tokens[name][KEYWORDS] = token
    for name, saved in tokens.items():
        try:
            record_tokens(tiers[name], saved, now_ms())
        except Exception as exc:  # pycozo raises bare exceptions
            log.warning("tier %s: its saved indexes cannot be recorded (%s); rebuilt at the next start", name, exc)
    log.info("derived indexes of %d tiers saved in %.0f ms", len(tokens), (time.monotonic() - started) * 1000)
