"""`/metrics`: the coordinator's counters in Prometheus' text format, read from `stats` at each scrape.

The coordinator counts since its start (requests by op and outcome, events, cumulative histograms); this
collector only translates, so restarting the dashboard loses no count, and a coordinator restart shows as a
counter reset, which Prometheus' `rate()` handles. Tasks by status, summed over the working memories, are
taken from the dashboard's last sample (every 5 s), counted here only before the first.
Each metric is declared once in `METRICS` with its help text; docs/dashboard.md's table is checked against the
same list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from groove.protocol import constants as C
from groove.protocol.stats import HistogramOut, StatsReply
from groove.ui.live import tasks_by_status
from groove.ui.source import Source, UiError


@dataclass(frozen=True)
class Declared:
    name: str
    kind: str  # counter, gauge or histogram
    help: str


METRICS = (
    Declared("groove_up", "gauge", "1 when the coordinator answered this scrape, else 0."),
    Declared("groove_uptime_seconds", "gauge", "Seconds since the coordinator started."),
    Declared("groove_requests", "counter", "Requests answered, by operation and outcome (ok or the error code)."),
    Declared("groove_request_duration_seconds", "histogram", "Time from receipt to reply, by operation."),
    Declared("groove_batch_size", "histogram", "Write requests per group commit."),
    Declared("groove_commit_duration_seconds", "histogram", "Time to commit one batch, all tiers together."),
    Declared("groove_writes_committed", "counter", "Write requests acked after their commit."),
    Declared("groove_writes_rejected", "counter", "Write requests answered with an error."),
    Declared(
        "groove_writes_checked_in_front",
        "counter",
        "Write requests the front process decoded and validated (plain puts built there included).",
    ),
    Declared("groove_write_queue_depth", "gauge", "Writes waiting for the group commit."),
    Declared("groove_write_queue_capacity", "gauge", "Writes the queue holds before it answers busy."),
    Declared("groove_embedding_queue_depth", "gauge", "Learnings waiting for their embedding."),
    Declared(
        "groove_embedding_lag_p99_seconds",
        "gauge",
        "p99 of commit-to-searchable-by-meaning: recent learnings embedded, and those still queued at their age.",
    ),
    Declared("groove_query_embedding_p99_seconds", "gauge", "p99 of how long recent queries waited for their vector."),
    Declared("groove_embedding_oldest_seconds", "gauge", "How long the oldest text queued for embedding has waited."),
    Declared("groove_embeddings_per_second", "gauge", "Texts embedded per second, recently."),
    Declared(
        "groove_vector_work_seconds",
        "gauge",
        "What each stored vector has cost the coordinator's indexes lately (insert and near-duplicate check).",
    ),
    Declared(
        "groove_embedding_duty",
        "gauge",
        "The embedding backlog's share of the workers' time: 1, or 0.1 while clients write with no core spare.",
    ),
    Declared("groove_process_up", "gauge", "1 while a process the coordinator runs beside itself is up, by name."),
    Declared("groove_process_restarts", "counter", "Times a process the coordinator runs beside itself was restarted."),
    Declared("groove_learnings", "gauge", "Stored learnings, by tier."),
    Declared("groove_agents", "gauge", "Agents the coordinator knows, by state (alive or gone)."),
    Declared("groove_tasks", "gauge", "Board tasks, by status, over every working memory (sampled every 5 s)."),
    Declared("groove_lease_expiries", "counter", "Task leases that lapsed unrenewed, or ended as their agent went."),
    Declared("groove_nudges_sent", "counter", "Nudges stored (nudge.send acked)."),
    Declared("groove_nudges_acked", "counter", "Nudges acknowledged by an agent for the first time."),
    Declared("groove_injections", "counter", "Sessions given learnings (inject.prepare acked)."),
    Declared("groove_outcomes", "counter", "Outcomes applied to learnings, by kind."),
    Declared("groove_resident_memory_bytes", "gauge", "The coordinator process' resident memory."),
    Declared(
        "groove_memory_bytes",
        "gauge",
        "The coordinator process' memory by part (stats.memory_mb: RocksDB estimated, the rest read or counted).",
    ),
)
_HELP = {m.name: m.help for m in METRICS}


def _ok(stats: StatsReply, op: str) -> int:
    return stats.op_outcomes.get(op, {}).get("ok", 0)


def _buckets(h: HistogramOut, scale: float) -> list[tuple[str, float]]:
    """Prometheus' cumulative buckets, the bounds scaled (milliseconds to seconds), ending with +Inf."""
    out, total = [], 0
    for bound, count in zip(h.bounds, h.counts, strict=False):
        total += count
        out.append((repr(bound * scale), float(total)))
    out.append(("+Inf", float(sum(h.counts))))
    return out


def _histogram(name: str, h: HistogramOut, scale: float = 1.0, labels: dict[str, str] | None = None) -> Metric:
    family = HistogramMetricFamily(name, _HELP[name], labels=list(labels or {}))
    family.add_metric(list((labels or {}).values()), _buckets(h, scale), h.sum * scale)
    return family


def _gauge(name: str, value: float) -> Metric:
    return GaugeMetricFamily(name, _HELP[name], value=value)


def _counter(name: str, value: float) -> Metric:
    return CounterMetricFamily(name, _HELP[name], value=value)


class CoordinatorCollector(Collector):
    """Reads `stats` (and the memories' task counts) at each scrape."""

    def __init__(self, source: Source, sampled: Callable[[], dict[str, int] | None]) -> None:
        self._source = source
        self._sampled = sampled  # tasks by status as last sampled, or None

    def _tasks(self) -> dict[str, int]:
        sampled = self._sampled()
        if sampled is not None:
            return sampled
        return tasks_by_status(self._source.call(lambda c: c.memories()))

    def collect(self) -> Iterator[Metric]:
        try:
            stats = self._source.call(lambda c: c.stats())
            by_status = self._tasks()
        except UiError:
            yield _gauge("groove_up", 0)
            return
        yield _gauge("groove_up", 1)
        yield _gauge("groove_uptime_seconds", stats.uptime_s)
        requests = CounterMetricFamily("groove_requests", _HELP["groove_requests"], labels=["op", "outcome"])
        for op, answered in stats.op_outcomes.items():
            for outcome, n in answered.items():
                requests.add_metric([op, outcome], n)
        yield requests
        durations = HistogramMetricFamily(
            "groove_request_duration_seconds", _HELP["groove_request_duration_seconds"], labels=["op"]
        )
        for op, h in stats.op_histograms.items():
            durations.add_metric([op], _buckets(h, 0.001), h.sum * 0.001)
        yield durations
        yield _histogram("groove_batch_size", stats.histograms["batch_size"])
        yield _histogram("groove_commit_duration_seconds", stats.histograms["commit_ms"], 0.001)
        yield _counter("groove_writes_committed", stats.writes_committed)
        yield _counter("groove_writes_rejected", stats.writes_rejected)
        yield _counter("groove_writes_checked_in_front", stats.requests_checked_in_front)
        yield _gauge("groove_write_queue_depth", stats.write_queue_depth)
        yield _gauge("groove_write_queue_capacity", stats.write_queue_capacity)
        yield _gauge("groove_embedding_queue_depth", stats.embedding_queue_depth)
        yield _gauge("groove_embedding_lag_p99_seconds", stats.visibility_lag_ms.p99 / 1000)
        yield _gauge("groove_embedding_oldest_seconds", stats.embedding_oldest_ms / 1000)
        yield _gauge("groove_query_embedding_p99_seconds", stats.query_embedding_ms.p99 / 1000)
        yield _gauge("groove_embeddings_per_second", stats.embeddings_per_s)
        yield _gauge("groove_vector_work_seconds", stats.vector_work_ms / 1000)
        yield _gauge("groove_embedding_duty", stats.embedding_duty)
        up = GaugeMetricFamily("groove_process_up", _HELP["groove_process_up"], labels=["process"])
        restarts = CounterMetricFamily("groove_process_restarts", _HELP["groove_process_restarts"], labels=["process"])
        for process in stats.processes:
            up.add_metric([process.name], 1 if process.alive else 0)
            restarts.add_metric([process.name], process.restarts)
        yield up
        yield restarts
        learnings = GaugeMetricFamily("groove_learnings", _HELP["groove_learnings"], labels=["tier"])
        for tier in stats.tiers:
            learnings.add_metric([tier.tier], tier.learnings)
        yield learnings
        agents = GaugeMetricFamily("groove_agents", _HELP["groove_agents"], labels=["state"])
        agents.add_metric(["alive"], stats.agents_alive)
        agents.add_metric(["gone"], stats.agents_known - stats.agents_alive)
        yield agents
        tasks = GaugeMetricFamily("groove_tasks", _HELP["groove_tasks"], labels=["status"])
        for status in C.TASK_STATUSES:
            tasks.add_metric([status], by_status.get(status, 0))
        yield tasks
        events = stats.events
        yield _counter("groove_lease_expiries", events.get("leases_expired", 0) + events.get("leases_released", 0))
        yield _counter("groove_nudges_sent", _ok(stats, C.OP_NUDGE_SEND))
        yield _counter("groove_nudges_acked", events.get("nudges_acked", 0))
        yield _counter("groove_injections", _ok(stats, C.OP_INJECT_PREPARE))
        outcomes = CounterMetricFamily("groove_outcomes", _HELP["groove_outcomes"], labels=["kind"])
        for kind in (C.OUTCOME_HELPFUL, C.OUTCOME_IGNORED, C.OUTCOME_CONTRADICTED):
            outcomes.add_metric([kind], events.get(f"outcomes_{kind}", 0))
        yield outcomes
        yield _gauge("groove_resident_memory_bytes", stats.rss_mb * 1e6)
        memory = GaugeMetricFamily("groove_memory_bytes", _HELP["groove_memory_bytes"], labels=["part"])
        for part, mb in stats.memory_mb.items():
            memory.add_metric([part], mb * 1e6)
        yield memory
