"""The `stats` operation's messages: the coordinator's state and recent performance (PROTOCOL.md, `stats`)."""

from __future__ import annotations

from pydantic import Field

from groove.protocol.models import Body, Reply, StorageFault


class StatsRequest(Body):
    """`stats`: no fields."""


class Summary(Reply):
    """Mean, median and 99th percentile of recent samples."""

    mean: float
    p50: float
    p99: float
    samples: int


class TierStats(Reply):
    """Counts for one open tier."""

    tier: str
    learnings: int
    path: str
    rocksdb_mb: float = 0.0  # its share of memory_mb["rocksdb"], by its files (0 while released)
    released: bool = False  # its RocksDB is closed until the next use (idle)


class RowCacheStats(Reply):
    """The search row cache: rows held, and lookups answered from it or not since start."""

    rows: int
    hits: int
    misses: int


class ProcessStats(Reply):
    """A process the coordinator runs beside itself: its front, or an embedding worker."""

    name: str  # "front", "embed-0", "embed-1", ...
    pid: int | None
    alive: bool
    restarts: int  # times it died and was started again
    last_exit: int | None  # how its previous run ended (negative: killed by that signal)
    up_s: float  # seconds since its current run started (0 while it is down)
    device: str | None = None  # an embedding worker's: where its model runs (None while it loads)
    embedded: int = 0  # an embedding worker's: texts it embedded


class UnavailableTier(Reply):
    """A tier whose files could not be opened, and why; its requests get `tier_unavailable`."""

    tier: str
    reason: str


class HistogramOut(Reply):
    """Counts since start by bucket: `counts[i]` fell at or below `bounds[i]` and above the bound before it;
    the last count is above every bound."""

    bounds: list[float]
    counts: list[int]
    sum: float


class StatsReply(Reply):
    """The coordinator's state and recent performance."""

    tiers: list[TierStats]
    disk_tiers: list[str]
    write_queue_depth: int
    write_queue_capacity: int
    batches_committed: int
    writes_committed: int
    writes_rejected: int
    batch_size: Summary
    commit_ms: Summary
    agents_known: int
    agents_alive: int
    requests_served: int
    requests_checked_in_front: int = 0
    replies_dropped: int
    rss_mb: float
    # the process's memory by part, MB (PROTOCOL.md `stats`), adding up to rss_mb with "unaccounted"
    memory_mb: dict[str, float] = Field(default_factory=dict)
    memory_budget_mb: int = 0
    cpu_percent: float
    uptime_s: float
    embedder: str
    embedding_queue_depth: int
    embedding_oldest_ms: float = 0.0
    embedding_over_capacity: bool = False
    embeddings_per_s: float
    visibility_lag_ms: Summary
    query_embedding_ms: Summary = Summary(mean=0.0, p50=0.0, p99=0.0, samples=0)
    processes: list[ProcessStats] = Field(default_factory=list)
    embedding_duty: float = 1.0
    commit_threads: int = 1
    writers: int = 1
    keyword_entries: int
    vectors: int
    near_duplicate_backlog: int
    vector_work_ms: float = 0.0
    vector_index: dict[str, str]
    # tier -> "kept" (its indexes loaded as the last checkpoint saved them; ", N read again" from its derived log),
    # "rebuilt", which one was, or progress
    index_loads: dict[str, str] = Field(default_factory=dict)
    row_cache: RowCacheStats
    op_ms: dict[str, Summary]
    op_counts: dict[str, int]
    durability: str
    cluster_name: str | None = None  # its name in the cluster map it was started with (None: not in one)
    wal_syncs: int
    last_stop: str
    recovery_ms: float
    tiers_unavailable: list[UnavailableTier]
    storage_faults: dict[str, StorageFault] = Field(default_factory=dict)  # tier -> its disk's fault, while it lasts
    auth: str
    handshakes_refused: int
    requests_unauthorized: int
    # counts since start, for a scraper: requests by op and outcome ("ok" or an error code), events, histograms
    op_outcomes: dict[str, dict[str, int]]
    events: dict[str, int]
    histograms: dict[str, HistogramOut]
    op_histograms: dict[str, HistogramOut]
