"""The board's verbs against a real coordinator: a plan file in, the memory, its tasks and the live view out."""

from __future__ import annotations

import json
from pathlib import Path

from groove.client import GrooveClient
from tests.helpers import RunningCoordinator, run_groove

PLAN = """\
# the plan of a small feature: YAML, a map with `tasks`
tasks:
  - {id: schema, title: add the refunds table, priority: 2}
  - {id: api, title: POST /refunds, depends_on: [schema], role: backend}
  - id: docs
    title: document refunds
    depends_on: [api]
    needs_review: true
"""


def test_a_plan_from_a_file_through_the_verbs(
    coordinator: RunningCoordinator, client: GrooveClient, tmp_path: Path
) -> None:
    ep = ("--endpoint", coordinator.endpoint)
    made = run_groove(*ep, "memory", "create", "--project", "/srv/shop", "--name", "refunds", "--goal", "refunds",
                      "--constraint", "keep the API")  # fmt: skip
    assert made.returncode == 0, made.stderr
    memory = made.stdout.strip()
    (tmp_path / "plan.yaml").write_text(PLAN)
    added = run_groove(*ep, "tasks", "add", memory, str(tmp_path / "plan.yaml"))
    assert added.stdout.strip() == "added 3 tasks"
    (tmp_path / "more.json").write_text(json.dumps([{"id": "ops", "title": "alerting", "depends_on": ["api"]}]))
    assert run_groove(*ep, "tasks", "add", memory, str(tmp_path / "more.json")).returncode == 0
    client.claim_task(memory, "agent-7", 60_000)
    listed = run_groove(*ep, "tasks", "list", memory, "--json")
    assert [(t["id"], t["status"]) for t in json.loads(listed.stdout)] == [
        ("schema", "assigned"), ("api", "pending"), ("docs", "pending"), ("ops", "pending"),
    ]  # fmt: skip
    shown = run_groove(*ep, "tasks", "show", "api")
    assert "depends on: schema" in shown.stdout
    view = run_groove(*ep, "board", memory, "--once")
    assert view.returncode == 0
    assert "1 assigned, 3 pending" in view.stdout
    assert "agent-7" in view.stdout
    memories = run_groove(*ep, "memory", "list", "--project", "/srv/shop")
    assert memory in memories.stdout
    sent = run_groove(*ep, "nudge", memory, "agent-7", "rebase first", "--priority", "high")
    assert sent.returncode == 0, sent.stderr
    assert [n.message for n in client.poll_nudges("agent-7")] == ["rebase first"]
    client.record_decision(memory, "which queue?", "SQS", "managed", "agent-7")
    listed_decisions = run_groove(*ep, "decisions", memory, "--standing")
    assert "SQS" in listed_decisions.stdout
    assert run_groove(*ep, "tasks", "cancel", "ops").stdout.strip() == "cancelled"
    client.complete_task("schema", "agent-7", "tables made")
    client.claim_task(memory, "agent-7", 60_000, role="backend")
    client.complete_task("api", "agent-7", "done")
    client.claim_task(memory, "agent-7", 60_000)
    client.complete_task("docs", "agent-7", "written")  # needs a review
    reviewed = run_groove(*ep, "tasks", "review", "docs", "approved", "--reviewer", "lead")
    assert reviewed.stdout.strip() == "completed", reviewed.stderr
    noted = run_groove(*ep, "memory", "note", memory, "refunds land in the ledger table", "--kind", "discovery",
                       "--task", "api", "--by", "agent-7")  # fmt: skip
    assert noted.returncode == 0, noted.stderr
    notes = json.loads(run_groove(*ep, "memory", "notes", memory, "--json").stdout)
    assert [(n["id"], n["kind"], n["task_id"]) for n in notes] == [(noted.stdout.strip(), "discovery", "api")]
    assert "ledger" in run_groove(*ep, "memory", "notes", memory, "--search", "ledger").stdout
    client.record_artifact(memory, "api", "code", "refunds.py", "abc", "agent-7")
    assert "refunds.py" in run_groove(*ep, "memory", "artifacts", memory).stdout
    client.record_checkpoint(memory, "agent-7", "feature/refunds", "deadbeef", "/w")
    assert "deadbeef" in run_groove(*ep, "memory", "checkpoints", memory, "--agent", "agent-7").stdout
    nudges = run_groove(*ep, "memory", "nudges", memory)
    assert "rebase first" in nudges.stdout
    assert "rebase first" in run_groove(*ep, "board", memory, "--once").stdout  # recent nudges in the view
    decision = client.decisions(memory)[0].id
    assert run_groove(*ep, "reverse-decision", decision, "--by", "lead").stdout.strip() == "reversed"
    assert client.decisions(memory, standing=True) == []
    assert run_groove(*ep, "memory", "status", memory, "paused").stdout.strip() == "paused"
    assert "refunds (paused)" in run_groove(*ep, "memory", "show", memory).stdout
