"""Client verbs: each opens a GrooveClient, makes one call, prints a table (or JSON with --json)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar

import click

from groove.cli.options import cluster_of, connection_options, curve_of, json_option, scope_option, tier_option
from groove.cli.output import emit_json, fail, memory_line, pairs, table
from groove.client import GrooveClient, GrooveError, GrooveTimeout
from groove.client.cluster import GrooveCluster
from groove.protocol import constants as C
from groove.protocol.models import LearningOut

F = TypeVar("F", bound=Callable[..., Any])

# connecting refused this long, never connected: a verb says nothing is listening. Not less: a coordinator started
# a moment before (`groove serve &` and then a verb, as the README's first commands do) must have bound by then, on
# a loaded machine too. It binds 1.4 s after its start on 2 idle cores, 2.1 s at a load of 3.5, and took over 2.5 s
# (the bound this was before) beside the test suite's three workers.
_ABSENT_AFTER_S = 5.0


@contextmanager
def connect(ctx: click.Context, routed: bool = False) -> Iterator[Any]:
    """A client for the connection options' endpoint; turns every client error into one line on stderr.
    With --cluster: a GrooveCluster for a `routed` verb, else a client of the home coordinator."""
    endpoint, timeout = ctx.obj["endpoint"], ctx.obj["timeout"]
    client: GrooveClient | GrooveCluster
    try:
        cluster, curve = cluster_of(ctx.obj), curve_of(ctx.obj)
        if cluster is not None and routed:
            client = GrooveCluster(cluster, timeout=timeout, curve=curve)
        else:
            endpoint = endpoint if cluster is None else cluster.coordinators[cluster.home]
            absent = min(_ABSENT_AFTER_S, timeout)  # nothing listening: say so within seconds, not at the timeout
            client = GrooveClient(
                endpoint, timeout=timeout, attempt_timeout=min(1.0, timeout), curve=curve, absent_after=absent
            )
    except GrooveError as exc:
        fail(str(exc), 2)
    try:
        yield client
    except GrooveTimeout as exc:
        fail(str(exc), 3)
    except GrooveError as exc:
        fail(str(exc))
    finally:
        client.close()


def when(ms: int | None) -> str:
    """A wire timestamp as local-free ISO time."""
    if ms is None:
        return "never"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


_ARCHIVED_HINT = " (left out of search and injection; `groove restore ID`)"


def state(item: LearningOut) -> str:
    """Whether a learning is served (`active`) or left out of search and injection (`archived`)."""
    return "archived" if item.archived else "active"


def learning_pairs(item: LearningOut) -> str:
    """One learning as aligned key/value lines."""
    u = item.usage
    return pairs(
        [
            ("id", item.id),
            ("tier", item.tier),
            ("scope", item.scope),
            ("category", item.category),
            (
                "state",
                state(item) + (" (left out of search and injection; `groove restore ID`)" if item.archived else ""),
            ),
            ("description", item.description),
            ("insight", item.insight),
            ("confidence", f"{item.confidence:.3f}"),
            ("source", item.source),
            ("pattern", item.pattern),
            ("created", when(item.created_at)),
            ("updated", when(item.updated_at)),
            (
                "usage",
                f"injected {u.times_injected}, helpful {u.times_helpful}, ignored {u.times_ignored}, "
                f"contradicted {u.times_contradicted}, last used {when(u.last_used)}",
            ),
            ("beta", f"alpha {u.confidence_alpha:.2f}, beta {u.confidence_beta:.2f}"),
        ]
    )


def with_client(func: F) -> F:
    """Pass a connected client as the first argument; the verb takes the connection options too."""
    return _connected(func, routed=False)


def with_routed_client(func: F) -> F:
    """As `with_client`, but with --cluster the verb gets a GrooveCluster: it routes by tier (the verb calls
    only what both have)."""
    return _connected(func, routed=True)


def _connected(func: F, routed: bool) -> F:
    @click.pass_context
    @functools.wraps(func)
    def wrapper(ctx: click.Context, *args: Any, **kwargs: Any) -> Any:
        with connect(ctx, routed) as client:
            return func(client, *args, **kwargs)

    return connection_options(wrapper)  # type: ignore[return-value]


@click.command()
@json_option
@with_client
def ping(client: GrooveClient, as_json: bool) -> None:
    """Check that the coordinator answers."""
    reply = client.ping()
    if as_json:
        emit_json(reply.model_dump())
    else:
        click.echo(f"groove coordinator {reply.version} (protocol v{reply.protocol}), up {reply.uptime_s:.1f} s")
        for tier, fault in sorted(reply.storage_faults.items()):  # degraded: say which tiers refuse writes
            since = datetime.fromtimestamp(fault.since_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            click.echo(f"degraded: tier {tier} refuses writes since {since} ({fault.code}: {fault.message})")
        for tier, reason in sorted(reply.tiers_unavailable.items()):
            click.echo(f"degraded: tier {tier} is unavailable: {reason}")


@click.command()
@click.argument("text")
@click.option("--insight", help="The actionable advice to inject (defaults to TEXT).")
@click.option(
    "--scope",
    default=C.SCOPE_GLOBAL,
    show_default=True,
    callback=scope_option,
    help="global, user:<id> or project:<root> (project:. is the directory you are in).",
)
@click.option(
    "--category", type=click.Choice(C.CATEGORIES), default="solution", show_default=True, help="What kind of learning."
)
@click.option("--confidence", type=click.FloatRange(0.0, 1.0), help="Starting confidence (default 0.5).")
@click.option("--tier", callback=tier_option, help="Store in this tier instead of the one the scope implies.")
@json_option
@with_routed_client
def learn(
    client: GrooveClient | GrooveCluster,
    text: str,
    insight: str | None,
    scope: str,
    category: str,
    confidence: float | None,
    tier: str | None,
    as_json: bool,
) -> None:
    """Store a learning described by TEXT."""
    body: dict[str, Any] = {"scope": scope, "category": category, "description": text, "insight": insight or text}
    if confidence is not None:
        body["confidence"] = confidence
    reply = client.put_learnings([body], tier)
    if as_json:
        emit_json({"id": reply.ids[0], "created": reply.created[0]})
    else:
        click.echo(f"{'stored' if reply.created[0] else 'updated'} {reply.ids[0]}")


@click.command()
@click.argument("learning_id")
@json_option
@with_routed_client
def get(client: GrooveClient | GrooveCluster, learning_id: str, as_json: bool) -> None:
    """Show one learning."""
    item = client.get(learning_id)
    click.echo(item.model_dump_json(indent=2) if as_json else learning_pairs(item))


@click.command(name="list")
@click.option("--scope-prefix", help="Only scopes starting with this, e.g. project:/home/alex/repo.")
@click.option("--category", type=click.Choice(C.CATEGORIES), help="Only this category.")
@click.option("--tier", callback=tier_option, help="Only this tier (user, project:<root>, enterprise:<org>).")
@click.option(
    "--limit", type=click.IntRange(1, C.MAX_LIST_LIMIT), default=20, show_default=True, help="Learnings per page."
)
@click.option("--cursor", help="Continue after this id (printed at the end of the previous page).")
@json_option
@with_routed_client
def list_(
    client: GrooveClient | GrooveCluster,
    scope_prefix: str | None,
    category: str | None,
    tier: str | None,
    limit: int,
    cursor: str | None,
    as_json: bool,
) -> None:
    """List learnings, oldest first, one page at a time."""
    reply = client.list_learnings(scope_prefix, category, tier, limit, cursor)
    if as_json:
        emit_json(reply.model_dump())
        return
    rows = [
        (
            i.id,
            i.tier,
            i.category,
            state(i),
            f"{i.confidence:.2f}",
            i.usage.times_injected,
            i.description,
        )
        for i in reply.learnings
    ]
    click.echo(table(("id", "tier", "category", "state", "conf", "used", "description"), rows))
    if reply.cursor:
        click.echo(f"more: groove list --cursor {reply.cursor}")


@click.command()
@click.argument("learning_id")
@click.argument("result", type=click.Choice(C.OUTCOMES))
@click.option(
    "--session-id",
    default=C.CLI_SESSION_ID,
    show_default=True,
    help="The session the outcome belongs to. A learning its newest open injection gave it (`groove inject` "
    "records this session unless told another) is rated for that session, once; any other is a use of its own.",
)
@json_option
@with_routed_client
def outcome(
    client: GrooveClient | GrooveCluster, learning_id: str, result: str, session_id: str, as_json: bool
) -> None:
    """Record how a learning turned out: helpful, ignored or contradicted."""
    reply = client.close_session([(learning_id, result)], session_id=session_id)
    item = client.get(learning_id)
    if as_json:
        emit_json(reply.model_dump() | {"confidence": item.confidence, "usage": item.usage.model_dump()})
    elif reply.rated_before:
        click.echo(f"session {session_id} rated {learning_id} already; not counted again")
    else:
        click.echo(f"recorded {result} for {learning_id}; confidence now {item.confidence:.3f}")


@click.command()
@click.argument("learning_id")
@json_option
@with_routed_client
def delete(client: GrooveClient | GrooveCluster, learning_id: str, as_json: bool) -> None:
    """Delete a learning with its usage statistics and relations."""
    if not client.delete(learning_id):
        fail(f"no learning {learning_id}; nothing deleted")
    if as_json:
        emit_json({"deleted": True})
    else:
        click.echo(f"deleted {learning_id}")


@click.command()
@json_option
@with_client
def stats(client: GrooveClient, as_json: bool) -> None:
    """Show tiers, write queue, batching and resource figures."""
    s = client.stats()
    if as_json:
        emit_json(s.model_dump())
        return
    click.echo(table(("tier", "learnings", "path"), [(t.tier, t.learnings, t.path) for t in s.tiers]))
    click.echo()
    click.echo(
        pairs(
            [
                ("tiers on disk", len(s.disk_tiers)),
                ("write queue", f"{s.write_queue_depth} / {s.write_queue_capacity}"),
                (
                    "batches",
                    f"{s.batches_committed} committed, size mean {s.batch_size.mean:.1f} p99 {s.batch_size.p99:.0f}",
                ),
                ("commit", f"mean {s.commit_ms.mean:.2f} ms, p99 {s.commit_ms.p99:.2f} ms"),
                ("writes", f"{s.writes_committed} committed, {s.writes_rejected} rejected"),
                ("agents", f"{s.agents_alive} alive of {s.agents_known} known"),
                ("requests", f"{s.requests_served} served, {s.replies_dropped} replies dropped"),
                ("process", f"RSS {s.rss_mb:.0f} MB, CPU {s.cpu_percent:.0f} %, up {s.uptime_s:.0f} s"),
                ("memory", memory_line(s.memory_mb, s.memory_budget_mb, s.tiers)),
                ("embedder", s.embedder),
                (
                    "embedding",
                    f"{s.embedding_queue_depth} queued (oldest {s.embedding_oldest_ms / 1000:.1f} s), "
                    f"{s.embeddings_per_s:.0f}/s, visibility lag "
                    f"p50 {s.visibility_lag_ms.p50:.0f} ms p99 {s.visibility_lag_ms.p99:.0f} ms",
                ),
                *[
                    (
                        p.name,
                        (f"pid {p.pid}, up {p.up_s:.0f} s" if p.alive else "down")
                        + (f", on {p.device}, {p.embedded} embedded" if p.device else "")
                        + (f", restarted {p.restarts} times (last exit {p.last_exit})" if p.restarts else ""),
                    )
                    for p in s.processes
                ],
                ("commit threads", s.commit_threads),
                ("writers", s.writers),
                ("writes checked in the front", s.requests_checked_in_front),
                (
                    "indexes",
                    f"{s.keyword_entries} keyword entries, {s.vectors} vectors "
                    f"({', '.join(f'{t} {state}' for t, state in s.vector_index.items()) or 'no tier'}), "
                    f"{s.near_duplicate_backlog} awaiting a near-duplicate check",
                ),
                ("row cache", f"{s.row_cache.rows} rows, {s.row_cache.hits} hits, {s.row_cache.misses} misses"),
                ("durability", f"{s.durability}, {s.wal_syncs} WAL syncs"),
                ("last stop", s.last_stop + (f", recovered in {s.recovery_ms:.0f} ms" if s.recovery_ms else "")),
                (
                    "auth",
                    f"{s.auth}, {s.handshakes_refused} handshakes refused, {s.requests_unauthorized} requests refused",
                ),
                *[("unavailable", f"{u.tier}: {u.reason}") for u in s.tiers_unavailable],
                *[
                    ("degraded", f"{t}: {f.code}: {f.message}, {f.refused} writes refused")
                    for t, f in s.storage_faults.items()
                ],
            ]
        )
    )
    if s.op_ms:
        click.echo()
        click.echo(
            table(
                ("op", "recent", "mean ms", "p50 ms", "p99 ms"),
                [(op, m.samples, f"{m.mean:.2f}", f"{m.p50:.2f}", f"{m.p99:.2f}") for op, m in s.op_ms.items()],
            )
        )


@click.command()
@click.argument("from_id")
@click.argument("relation_type", type=click.Choice(C.RELATION_TYPES))
@click.argument("to_id")
@click.option("--weight", type=click.FloatRange(0.0, 1.0), help="Strength of the relation (default 1.0).")
@json_option
@with_routed_client
def relate(
    client: GrooveClient | GrooveCluster,
    from_id: str,
    relation_type: str,
    to_id: str,
    weight: float | None,
    as_json: bool,
) -> None:
    """Record FROM_ID --RELATION_TYPE--> TO_ID (e.g. B supersedes A)."""
    client.relate(from_id, relation_type, to_id, weight)
    if as_json:
        emit_json({"from_id": from_id, "relation_type": relation_type, "to_id": to_id})
    else:
        click.echo(f"{from_id} {relation_type} {to_id}")


@click.command()
@click.argument("learning_id")
@click.option("--type", "relation_type", type=click.Choice(C.RELATION_TYPES), help="Only this relation type.")
@click.option(
    "--direction",
    type=click.Choice(C.RELATION_DIRECTIONS),
    default="both",
    show_default=True,
    help="Relations from the learning (out), to it (in), or both.",
)
@json_option
@with_routed_client
def relations(
    client: GrooveClient | GrooveCluster, learning_id: str, relation_type: str | None, direction: str, as_json: bool
) -> None:
    """List the relations from and to a learning."""
    found = client.relations(learning_id, relation_type, direction)
    if as_json:
        emit_json([r.model_dump() for r in found])
        return
    rows = [(r.from_id, r.relation_type, r.to_id, f"{r.weight:.2f}", r.tier, when(r.created_at)) for r in found]
    click.echo(table(("from", "type", "to", "weight", "tier", "created"), rows))


@click.command()
@click.option("--state", type=click.Choice(C.AGENT_STATES), help="Only agents in this state.")
@json_option
@with_client
def agents(client: GrooveClient, state: str | None, as_json: bool) -> None:
    """List the agents that said hello: id, role, pid, host, last seen, requests, state."""
    found = client.agents(state)
    if as_json:
        emit_json([a.model_dump() for a in found])
        return
    if not found:
        click.echo("no agents")
        return
    now = time.time()
    rows = [
        (a.agent_id, a.role, a.pid, a.host, f"{now - a.last_seen:.1f} s ago", a.requests, a.state, a.status,
         a.task_id or "-", f"{a.tasks_completed}/{a.tasks_failed}")
        for a in found
    ]  # fmt: skip
    head = ("agent", "role", "pid", "host", "last seen", "requests", "state", "status", "task", "done/failed")
    click.echo(table(head, rows))
