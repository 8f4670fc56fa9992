"""The board's verbs: `groove memory create|list|show|status`, `groove tasks add|list|show|review|cancel|prioritize`,
`groove nudge`, `groove decisions`, `groove board` (cli/records.py adds what agents leave beside the tasks)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click
import yaml

from groove.cli.commands import when, with_client
from groove.cli.options import json_option, project_root
from groove.cli.output import emit_json, fail, table
from groove.client import GrooveClient
from groove.protocol import constants as C
from groove.protocol.board import Task, WorkingMemory
from groove.protocol.boardrecords import ListedNudge

_REFRESH_S = 1.0
_RECENT_NUDGES = 5


@click.group(name="memory")
def memory_group() -> None:
    """Working memories: a goal for a project, and the tasks that reach it."""


@memory_group.command(name="create")
@click.option("--project", required=True, callback=project_root, help="The repository root (`.` for here).")
@click.option("--name", required=True, help="A short name.")
@click.option("--goal", required=True, help="What the swarm is to achieve.")
@click.option("--constraint", "constraints", multiple=True, help="A rule every task must keep (repeatable).")
@click.option("--owner", help="Who asked for it.")
@click.option(
    "--max-attempts",
    type=click.IntRange(1, 100),
    default=C.DEFAULT_MAX_ATTEMPTS,
    show_default=True,
    help="Failures and lapsed leases before a task fails for good.",
)
@with_client
def memory_create(client: GrooveClient, project: str, name: str, goal: str, **more: Any) -> None:
    """Start a working memory; prints its id."""
    click.echo(
        client.create_memory(project, name, goal, list(more["constraints"]), more["owner"], more["max_attempts"])
    )


@memory_group.command(name="list")
@click.option("--project", callback=project_root, help="Only this repository's (`.` for here).")
@click.option("--status", type=click.Choice(C.MEMORY_STATUSES), help="Only those in this status.")
@json_option
@with_client
def memory_list(client: GrooveClient, project: str | None, status: str | None, as_json: bool) -> None:
    """List working memories, newest first, with their tasks counted by status."""
    found = client.memories(project, status)
    if as_json:
        emit_json([m.model_dump() for m in found])
        return
    if not found:
        click.echo("no working memories")
        return
    rows = [(m.id, m.status, m.project, m.name, _counts(m)) for m in found]
    click.echo(table(("id", "status", "project", "name", "tasks"), rows))


@memory_group.command(name="show")
@click.argument("memory_id")
@json_option
@with_client
def memory_show(client: GrooveClient, memory_id: str, as_json: bool) -> None:
    """Show a working memory."""
    memory = client.memory(memory_id)
    if as_json:
        emit_json(memory.model_dump())
        return
    click.echo(f"{memory.name} ({memory.status}) in {memory.project}, since {when(memory.created_at)}")
    click.echo(f"goal: {memory.goal}")
    for constraint in memory.constraints:
        click.echo(f"  constraint: {constraint}")
    click.echo(f"tasks: {_counts(memory) or 'none'}")


@memory_group.command(name="status")
@click.argument("memory_id")
@click.argument("status", type=click.Choice(C.MEMORY_STATUSES))
@with_client
def memory_status(client: GrooveClient, memory_id: str, status: str) -> None:
    """Pause, resume (`active`), complete, cancel or archive a working memory."""
    click.echo(client.set_memory_status(memory_id, status))


def _counts(memory: WorkingMemory) -> str:
    return ", ".join(f"{n} {status}" for status, n in sorted(memory.tasks.items()))


@click.group(name="tasks")
def tasks_group() -> None:
    """A working memory's tasks."""


def read_plan(path: Path) -> list[dict[str, Any]]:
    """The tasks of a plan file: YAML or JSON, a list of tasks or a map with `tasks`."""
    return load_plan(path)[1]


def load_plan(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A plan file's map (`name`, `goal`, `constraints`: empty for a bare list of tasks) and its tasks."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise click.BadParameter(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        plan = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except ValueError as exc:
        raise click.BadParameter(f"{path} is not valid JSON: {exc}") from None
    except yaml.YAMLError as exc:
        raise click.BadParameter(f"{path} is not valid YAML: {_yaml_problem(exc)}") from None
    tasks = plan.get("tasks") if isinstance(plan, dict) else plan
    if not isinstance(tasks, list) or not all(isinstance(t, dict) for t in tasks):
        raise click.BadParameter(f"{path} holds no list of tasks (a list, or a map with `tasks`)")
    return (plan if isinstance(plan, dict) else {}), tasks


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """What PyYAML found wrong, and where, on one line (its own message takes several)."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        return f"{exc.problem} at line {exc.problem_mark.line + 1}, column {exc.problem_mark.column + 1}"
    return " ".join(str(exc).split())


@tasks_group.command(name="add")
@click.argument("memory_id")
@click.argument("plan", type=click.Path(path_type=Path, dir_okay=False))
@with_client
def tasks_add(client: GrooveClient, memory_id: str, plan: Path) -> None:
    """Add the tasks of a plan file (YAML or JSON: id, title, description, depends_on, priority, role,
    needs_review): all or none up to 5,000 tasks; a bigger plan goes 5,000 at a time, dependencies first."""
    tasks = read_plan(plan)
    try:
        ids = client.add_plan(memory_id, tasks)
    except ValueError as exc:  # a cycle, found before anything was sent
        fail(f"{plan}: {exc}", 2)
    click.echo(f"added {len(ids)} tasks")


@tasks_group.command(name="list")
@click.argument("memory_id")
@click.option("--status", type=click.Choice(C.TASK_STATUSES), help="Only tasks in this status.")
@click.option("--agent", help="Only tasks held by (or last held by) this agent.")
@json_option
@with_client
def tasks_list(client: GrooveClient, memory_id: str, status: str | None, agent: str | None, as_json: bool) -> None:
    """List a working memory's tasks, highest priority first."""
    found = client.tasks(memory_id, status, agent)
    if as_json:
        emit_json([t.model_dump() for t in found])
        return
    if not found:
        click.echo("no tasks")
        return
    click.echo(table(("id", "status", "priority", "assigned to", "attempts", "title"), [_row(t) for t in found]))


def _row(task: Task) -> tuple[Any, ...]:
    return (task.id, task.status, task.priority, task.assigned_to or "-", task.attempts, task.title)


@tasks_group.command(name="show")
@click.argument("task_id")
@json_option
@with_client
def tasks_show(client: GrooveClient, task_id: str, as_json: bool) -> None:
    """Show one task."""
    task = client.task(task_id)
    if as_json:
        emit_json(task.model_dump())
        return
    click.echo(f"{task.id}: {task.title} ({task.status}, priority {task.priority}, attempts {task.attempts})")
    if task.depends_on:
        click.echo(f"depends on: {', '.join(task.depends_on)}")
    if task.assigned_to is not None:
        click.echo(f"assigned to {task.assigned_to} at {when(task.assigned_at)}, lease until {when(task.lease_until)}")
    if task.last_error is not None:
        click.echo(f"last error: {task.last_error}")
    if task.result is not None:
        click.echo(f"result: {task.result.get('summary', '')}")


@tasks_group.command(name="review")
@click.argument("task_id")
@click.argument("verdict", type=click.Choice(C.TASK_REVIEWS))
@click.option("--reviewer", default="cli", show_default=True, help="Who reviews it.")
@click.option("--comments", help="What the reviewer says.")
@with_client
def tasks_review(client: GrooveClient, task_id: str, verdict: str, reviewer: str, comments: str | None) -> None:
    """Give a task in review its verdict; prints its status now."""
    click.echo(client.review_task(task_id, reviewer, verdict, comments))


@tasks_group.command(name="cancel")
@click.argument("task_id")
@with_client
def tasks_cancel(client: GrooveClient, task_id: str) -> None:
    """Cancel a task not yet finished (the tasks waiting on it are blocked)."""
    client.cancel_task(task_id)
    click.echo("cancelled")


@tasks_group.command(name="prioritize")
@click.argument("task_id")
@click.argument("priority", type=click.IntRange(-1_000_000, 1_000_000))
@with_client
def tasks_prioritize(client: GrooveClient, task_id: str, priority: int) -> None:
    """Give a task not yet finished a new priority (higher is claimed first)."""
    client.prioritize_task(task_id, priority)
    click.echo(f"priority {priority}")


@click.command(name="nudge")
@click.argument("memory_id")
@click.argument("target")
@click.argument("message")
@click.option("--priority", type=click.Choice(C.NUDGE_PRIORITIES), default="normal", show_default=True,
              help="Polls deliver higher priorities first.")  # fmt: skip
@click.option("--delivery", type=click.Choice(C.NUDGE_DELIVERIES), default="next_turn", show_default=True,
              help="immediate: pushed to connected agents at once; next_turn: with their next poll; "
              "when_idle: once they say they are idle.")  # fmt: skip
@click.option("--from", "created_by", default="cli", show_default=True, help="Who sends it.")
@with_client
def nudge(client: GrooveClient, memory_id: str, target: str, message: str, **more: str) -> None:
    """Nudge an agent (TARGET its id), a role (role:NAME) or all agents (all) working a memory."""
    click.echo(client.send_nudge(target, memory_id, message, more["created_by"], more["priority"], more["delivery"]))


@click.command(name="decisions")
@click.argument("memory_id")
@click.option("--task", "task_id", help="Only those recorded for this task.")
@click.option("--standing", is_flag=True, help="Only those not reversed.")
@json_option
@with_client
def decisions(client: GrooveClient, memory_id: str, task_id: str | None, standing: bool, as_json: bool) -> None:
    """List a memory's decisions, newest first."""
    found = client.decisions(memory_id, task_id, standing)
    if as_json:
        emit_json([d.model_dump() for d in found])
        return
    if not found:
        click.echo("no decisions")
        return
    rows = [(d.id, d.question, d.choice, d.made_by, "reversed" if d.reversed_by else "standing") for d in found]
    click.echo(table(("id", "question", "choice", "by", "state"), rows))


@click.command(name="board")
@click.argument("memory_id")
@click.option("--once", is_flag=True, help="Print one view and stop.")
@with_client
def board(client: GrooveClient, memory_id: str, once: bool) -> None:
    """A live view of a working memory: tasks by status, who holds what and recent nudges, once a second (Ctrl-C
    stops)."""
    try:
        while True:
            view = _view(client, memory_id)
            if once:
                click.echo(view)
                return
            click.clear()
            click.echo(view)
            time.sleep(_REFRESH_S)
    except KeyboardInterrupt:  # the way to leave a live view, not an error
        return


def _view(client: GrooveClient, memory_id: str) -> str:
    memory = client.memory(memory_id)
    held = client.tasks(memory_id, "in_progress") + client.tasks(memory_id, "assigned")
    lines = [f"{memory.name} ({memory.status}): {_counts(memory) or 'no tasks'}"]
    if held:
        rows = [(t.assigned_to, t.id, t.status, when(t.lease_until), t.title) for t in held]
        lines.append(table(("agent", "task", "status", "lease until", "title"), rows))
    nudges = client.nudges(memory_id, limit=_RECENT_NUDGES)
    if nudges:
        lines += ["recent nudges:", nudge_table(nudges)]
    return "\n".join(lines)


def nudge_table(nudges: list[ListedNudge]) -> str:
    """Nudges as a table, with who acknowledged each (`groove board`, `groove memory nudges`)."""
    rows = [
        (when(n.created_at), n.target, n.priority, n.delivery, n.message, ", ".join(n.acked_by) or "-") for n in nudges
    ]
    return table(("at", "to", "priority", "delivery", "message", "acknowledged by"), rows)
