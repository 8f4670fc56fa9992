"""What each page shows, gathered from the coordinator: plain dicts for the templates, nothing rendered here.

Each function takes the `Source` and the page's parameters, and makes the few reads that page needs. The board
draws at most `MAX_DRAWN` tasks, the ones nearest the work (held, then waiting, then finished ones):
a 20,000-task plan is counted by status, not drawn box by box.
"""

from __future__ import annotations

import time
from typing import Any

from groove.client import GrooveClient, NotFound
from groove.protocol import constants as C
from groove.protocol.board import Task
from groove.protocol.models import LearningOut
from groove.ui import charts
from groove.ui.source import Refused, Source

MAX_DRAWN = 300
_DRAWN_RELATIONS = 24  # of a learning, in its graph and table (each other end is read for its name)
_LISTED = 50  # rows of each table (nudges, decisions, artifacts, checkpoints, notes, sessions)
_HELD = ("assigned", "in_progress")
# drawn in this order until MAX_DRAWN: the work now, what waits on it, then what is done
_DRAW_ORDER = ("in_progress", "assigned", "review", "pending", "blocked", "failed", "completed", "cancelled")
SEARCH_MODES = ("hybrid", "semantic", "keyword")


def overview(source: Source) -> dict[str, Any]:
    """Coordinator health, tiers and agents."""

    def read(client: GrooveClient) -> dict[str, Any]:
        return {"stats": client.stats(), "agents": client.agents(), "ping": client.ping()}

    data = source.call(read)
    now = time.time()
    data["agents"] = sorted(data["agents"], key=lambda a: (a.state != "alive", a.agent_id))
    data["seen_ago"] = {a.agent_id: now - a.last_seen for a in data["agents"]}
    return data


def learnings(source: Source, query: dict[str, str]) -> dict[str, Any]:
    """Search results (the `search` op) when there is text, else a page of learnings in the order they were made
    (of one tier with `tier`), and an organisation's proposals with `org`."""
    text = query.get("q", "").strip()
    mode = query.get("mode") or "hybrid"
    if mode not in SEARCH_MODES:
        mode = "hybrid"
    filters = {
        key: query[key].strip()
        for key in ("project", "enterprise", "scope_prefix", "category")
        if query.get(key, "").strip()
    }
    next_cursor = None
    if text:
        hits = source.call(
            lambda c: c.search(
                text,
                mode=mode,
                limit=_LISTED,
                project=filters.get("project"),
                enterprise=filters.get("enterprise"),
                scope_prefix=filters.get("scope_prefix"),
                category=filters.get("category"),
            )
        )
        rows: list[tuple[LearningOut, float | None, str]] = [(h.learning, h.score, h.reasoning) for h in hits]
    else:
        tier, cursor = query.get("tier", "").strip() or None, query.get("cursor") or None
        listed = source.call(
            lambda c: c.list_learnings(
                filters.get("scope_prefix"), filters.get("category"), tier=tier, limit=_LISTED, cursor=cursor
            )
        )
        rows = [(item, None, "") for item in listed.learnings]
        next_cursor = listed.cursor
    data = {"rows": rows, "q": text, "mode": mode, "modes": SEARCH_MODES, "query": query, "cursor": next_cursor}
    return data | proposals(source, query.get("org", "").strip())


def proposals(source: Source, org: str) -> dict[str, Any]:
    """An organisation's proposals waiting for a curator (`?org=`); a key that may not list them is told so
    in their place, not instead of the page."""
    if not org:
        return {"org": "", "proposals": None, "proposals_refused": None}
    try:
        return {"org": org, "proposals": source.call(lambda c: c.reviews(org)), "proposals_refused": None}
    except Refused as exc:
        return {"org": org, "proposals": None, "proposals_refused": str(exc)}


def learning(source: Source, learning_id: str) -> dict[str, Any]:
    """A learning, its relations, its outcome history and confidence curve, and the sessions given it."""

    def read(client: GrooveClient) -> dict[str, Any]:
        item = client.get(learning_id)
        relations = client.relations(learning_id)[:_DRAWN_RELATIONS]
        history = client.history(learning_id)
        others = {r.to_id if r.from_id == learning_id else r.from_id for r in relations}
        names = {}
        for other in sorted(others):
            try:
                names[other] = client.get(other).description
            except NotFound:  # deleted since the relation was made: drawn by its id
                names[other] = other
        return {"item": item, "relations": relations, "history": history, "names": names}

    data = source.call(read)
    item, history = data["item"], data["history"]
    around = [
        (
            data["names"].get(other, other),
            r.relation_type if r.from_id == learning_id else f"{r.relation_type} (to it)",
            f"/learnings/{other}",
        )
        for r in data["relations"]
        for other in [r.to_id if r.from_id == learning_id else r.from_id]
    ]
    data["graph"] = charts.star(item.description, around) if around else None
    points = [(float(o.at), o.confidence) for o in history.outcomes]
    data["curve"] = charts.series(points, label="confidence over time") if points else None
    data["posterior"] = charts.beta_density(item.usage.confidence_alpha, item.usage.confidence_beta, label="confidence")
    return data


def sessions(source: Source, before: str | None = None) -> dict[str, Any]:
    """Injections, newest first, and the adaptive parameters with their posteriors and how they moved."""

    def read(client: GrooveClient) -> dict[str, Any]:
        return {"page": client.injections(limit=_LISTED, before=before), "params": client.params()}

    data = source.call(read)
    injections = data["page"].injections
    data["posteriors"] = {p.name: charts.beta_density(p.alpha, p.beta, label=p.name) for p in data["params"]}
    # what each session drew, oldest left: how the parameters moved over these sessions
    # (a session draws each in the parameter's units: shown over its range, as the posterior is)
    ranges = {p.name: (p.low, (p.high - p.low) or 1.0) for p in data["params"]}
    moved: dict[str, list[tuple[float, float]]] = {}
    for injection in reversed(injections):
        for name, value in injection.params.items():
            low, span = ranges.get(name, (0.0, 1.0))
            moved.setdefault(name, []).append((float(injection.created_at), (value - low) / span))
    data["moved"] = {name: charts.series(points, width=240, height=60, label=name) for name, points in moved.items()}
    kinds = (C.OUTCOME_HELPFUL, C.OUTCOME_IGNORED, C.OUTCOME_CONTRADICTED)
    data["tallies"] = {i.injection_id: {k: list(i.outcomes.values()).count(k) for k in kinds} for i in injections}
    return data


def memories(source: Source) -> dict[str, Any]:
    """Every working memory with its tasks counted."""
    return {"memories": source.call(lambda c: c.memories())}


def board(source: Source, memory_id: str, notes_query: str = "") -> dict[str, Any]:
    """A working memory's board: its graph, leases, retries, reviews, nudges, records and notes."""

    def read(client: GrooveClient) -> dict[str, Any]:
        memory = client.memory(memory_id)
        tasks: list[Task] = []
        for status in _DRAW_ORDER:
            if memory.tasks.get(status) and len(tasks) < MAX_DRAWN:
                tasks += client.tasks(memory_id, status=status, limit=MAX_DRAWN - len(tasks))
        found = client.search_notes(memory_id, notes_query, limit=_LISTED) if notes_query else None
        return {
            "memory": memory,
            "tasks": tasks,
            "nudges": client.nudges(memory_id, limit=_LISTED),
            "decisions": client.decisions(memory_id)[:_LISTED],
            "artifacts": client.artifacts(memory_id)[:_LISTED],
            "checkpoints": client.checkpoints(memory_id)[:_LISTED],
            "notes": client.notes(memory_id, limit=_LISTED),
            "found_notes": found,
        }

    data = source.call(read)
    tasks: list[Task] = data["tasks"]
    now_ms = time.time() * 1000
    data["total"] = sum(data["memory"].tasks.values())
    data["graph"] = charts.dag(
        [charts.Node(t.id, t.title, t.status, tuple(t.depends_on), f"/board/{memory_id}#task-{t.id}") for t in tasks]
    )
    data["held"] = [(t, (now_ms - (t.assigned_at or now_ms)) / 1000, ((t.lease_until or 0) - now_ms) / 1000)
                    for t in tasks if t.status in _HELD]  # fmt: skip
    data["retried"] = [t for t in tasks if t.attempts > 0]
    data["in_review"] = [t for t in tasks if t.status == "review"]
    data["notes_query"] = notes_query
    data["colours"] = charts.STATUS_COLOURS
    return data
