"""The dashboard's actions, one entry each: the form fields they take and the coordinator call they make.

Each returns the line the page shows once it is done. A missing field is refused here; what the coordinator
refuses (a task not in review, a decision already reversed, a key without the curator role) comes back as its
own message. Nothing is changed by a refused action.
"""

from __future__ import annotations

from collections.abc import Callable

from groove.client import GrooveClient
from groove.ui.source import Refused

Fields = dict[str, str]
Action = Callable[[GrooveClient, Fields, str], str]


def _need(fields: Fields, *names: str) -> list[str]:
    missing = [name for name in names if not fields.get(name, "").strip()]
    if missing:
        raise Refused(f"missing {', '.join(missing)}")
    return [fields[name].strip() for name in names]


def _review(client: GrooveClient, fields: Fields, actor: str) -> str:
    task_id, verdict = _need(fields, "task_id", "status")
    status = client.review_task(task_id, actor, verdict, fields.get("comments") or None)
    return f"{task_id} reviewed ({verdict}): now {status}"


def _cancel(client: GrooveClient, fields: Fields, _: str) -> str:
    (task_id,) = _need(fields, "task_id")
    client.cancel_task(task_id)
    return f"{task_id} cancelled"


def _prioritize(client: GrooveClient, fields: Fields, _: str) -> str:
    task_id, raw = _need(fields, "task_id", "priority")
    try:
        priority = int(raw)
    except ValueError:
        raise Refused(f"priority: {raw!r} is not a whole number") from None
    client.prioritize_task(task_id, priority)
    return f"{task_id} now has priority {priority}"


def _archive(client: GrooveClient, fields: Fields, actor: str) -> str:
    (learning_id,) = _need(fields, "learning_id")
    client.archive(learning_id, fields.get("reason") or f"archived by {actor} from the dashboard")
    return f"learning {learning_id} archived"


def _nudge(client: GrooveClient, fields: Fields, actor: str) -> str:
    memory_id, target, message = _need(fields, "memory_id", "target", "message")
    priority, delivery = fields.get("priority") or "normal", fields.get("delivery") or "next_turn"
    nudge_id = client.send_nudge(target, memory_id, message, actor, priority=priority, delivery=delivery)
    return f"nudge {nudge_id} sent to {target}"


def _reverse(client: GrooveClient, fields: Fields, actor: str) -> str:
    (decision_id,) = _need(fields, "decision_id")
    client.reverse_decision(decision_id, actor)
    return f"decision {decision_id} reversed"


def _decide(client: GrooveClient, fields: Fields, actor: str) -> str:
    org, review_id, decision = _need(fields, "org", "review_id", "decision")
    reply = client.decide(org, review_id, decision, actor, fields.get("reason") or None)
    return f"review {review_id}: {reply.status}"


ACTIONS: dict[str, Action] = {
    "task-review": _review,
    "task-cancel": _cancel,
    "task-prioritize": _prioritize,
    "learning-archive": _archive,
    "nudge": _nudge,
    "decision-reverse": _reverse,
    "review-decide": _decide,
}
