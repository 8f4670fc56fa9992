"""The `stats` reply: the coordinator's state and recent performance, gathered from every subsystem."""

from __future__ import annotations

from typing import Any, Protocol

from groove.coordinator.metrics import Metrics
from groove.coordinator.net.config import Settings
from groove.coordinator.net.link import FrontLink
from groove.coordinator.net.memory import parts, rocksdb_shares
from groove.coordinator.net.registry import AgentRegistry
from groove.coordinator.net.resends import Resends
from groove.coordinator.search.derived import Derived
from groove.coordinator.search.duty import OVER_CAPACITY_S
from groove.coordinator.search.embedpool import EmbedPool
from groove.coordinator.store.tierset import TierSet
from groove.coordinator.write.batcher import Batcher
from groove.coordinator.write.ops import WriteItem
from groove.coordinator.write.parts import OutcomePart
from groove.protocol.boardrecords import NudgeAckRequest


class Observed(Protocol):
    """What `stats` reads of the coordinator."""

    settings: Settings
    metrics: Metrics
    registry: AgentRegistry
    derived: Derived
    tiers: TierSet
    batcher: Batcher
    link: FrontLink
    pool: EmbedPool | None
    resends: Resends
    last_stop: str
    recovery_ms: float

    def uptime(self) -> float:
        """Seconds since it started."""
        ...


def count_write(metrics: Metrics, item: WriteItem, result: dict[str, Any]) -> None:
    """Count the events an acked write tells: the ratings its tiers applied, by kind (a close's implied ignored
    included, an attribution the session had made already not), and nudges acknowledged."""
    for tier, part in item.parts.items():
        if isinstance(part, OutcomePart) and tier in item.replies:
            for rating in part.ratings:
                metrics.count(f"outcomes_{rating.outcome}")
    if isinstance(item.body, NudgeAckRequest):
        metrics.count("nudges_acked", result["acked"])


def reply(c: Observed) -> dict[str, Any]:
    """The `stats` reply body (fields in PROTOCOL.md, `stats`)."""
    batch_size, commit_ms = c.metrics.batch_summaries()
    known, alive = c.registry.counts()
    rss_mb, cpu = c.metrics.resources()
    memory = parts(rss_mb, (c.metrics.base_rss_mb, c.metrics.base_heap_bytes), c.derived, c.tiers, c.resends)
    shares = rocksdb_shares(c.tiers.opened(), memory["rocksdb"])
    derived = c.derived
    held, held_since = c.pool.holding() if c.pool is not None else (0, None)  # waiting for their vectors too
    return {
        "tiers": [
            {"tier": t.name, "learnings": t.learnings, "path": str(t.path), "released": t.released}
            | {"rocksdb_mb": shares[t.name]}
            for t in c.tiers.opened()
        ],
        "disk_tiers": c.tiers.on_disk(),
        "write_queue_depth": c.batcher.depth(),
        "write_queue_capacity": c.batcher.capacity,
        "batches_committed": c.metrics.batches_committed,
        "writes_committed": c.metrics.writes_committed,
        "writes_rejected": c.metrics.writes_rejected,
        "batch_size": batch_size,
        "commit_ms": commit_ms,
        "agents_known": known,
        "agents_alive": alive,
        "requests_served": c.metrics.requests_served,
        "requests_checked_in_front": c.metrics.front_checked,
        "replies_dropped": c.link.dropped,
        "rss_mb": rss_mb,
        "memory_mb": memory,
        "memory_budget_mb": c.settings.memory_mb,
        "cpu_percent": cpu,
        "uptime_s": c.uptime(),
        "embedder": derived.status(),
        "embedding_queue_depth": derived.queue_depth() + held,
        "embedding_oldest_ms": (oldest := derived.oldest_ms(held_since)),
        "embedding_over_capacity": c.pool is not None and oldest > OVER_CAPACITY_S * 1000,
        "embeddings_per_s": derived.embeddings_per_s(),
        "visibility_lag_ms": derived.lag_summary(),
        "query_embedding_ms": derived.queries.summary(),
        "processes": [c.link.report(), *(c.pool.report() if c.pool is not None else [])],
        "embedding_duty": c.pool.duty if c.pool is not None else 1.0,
        "commit_threads": c.batcher.commit_threads,
        "writers": c.batcher.writers,
        "keyword_entries": len(derived.keywords),
        "vectors": sum(len(index) for index in derived.vectors.values()),
        "near_duplicate_backlog": derived.near.backlog(),
        "vector_work_ms": round(derived.vector_seconds() * 1000, 3),
        "vector_index": {name: index.state for name, index in sorted(derived.vectors.items())},
        "index_loads": dict(sorted(derived.loads.items())),
        "row_cache": {"rows": len(derived.rows), "hits": derived.rows.hits, "misses": derived.rows.misses},
        "op_ms": c.metrics.op_summaries(),
        "op_counts": c.metrics.op_totals(),
        "durability": c.settings.durability,
        "cluster_name": c.settings.cluster_name,
        "last_stop": c.last_stop,
        "recovery_ms": c.recovery_ms,
        "wal_syncs": c.batcher.syncer.syncs if c.batcher.syncer is not None else 0,
        "tiers_unavailable": [{"tier": t, "reason": r} for t, r in sorted(c.tiers.unavailable().items())],
        "storage_faults": c.batcher.faults.snapshot(),
        "auth": "curve" if c.settings.curve else "none",
        "handshakes_refused": c.link.refused,
        "requests_unauthorized": c.metrics.unauthorized,
    } | c.metrics.totals()
