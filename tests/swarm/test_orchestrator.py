"""The orchestrator: the CLAUDE.md block replaced in place, and the README's example run as written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from groove.client import GrooveClient
from groove.protocol import constants as C
from groove.swarm.orchestrator import Orchestrator, OrchestratorError, write_block
from tests.helpers import RunningCoordinator, run_readme_example


def block(text: str) -> str:
    return f"{C.INJECT_BEGIN}\n{text}\n{C.INJECT_END}\n"


def test_the_block_is_appended_once_then_replaced_in_place(tmp_path: Path) -> None:
    path = tmp_path / "CLAUDE.md"
    write_block(path, block("first"))
    assert path.read_text() == block("first")
    path.write_text("# Project notes\nkeep me\n\n" + block("first") + "\n## After\nme too\n")
    write_block(path, block("second"))
    assert path.read_text() == "# Project notes\nkeep me\n\n" + block("second") + "\n## After\nme too\n"
    plain = tmp_path / "plain.md"
    plain.write_text("no newline at the end")
    write_block(plain, block("x"))
    assert plain.read_text() == "no newline at the end\n\n" + block("x")
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("broken", [C.INJECT_BEGIN + "\nhalf", "half\n" + C.INJECT_END, C.INJECT_END + C.INJECT_BEGIN])
def test_a_broken_block_is_reported_and_the_file_left_alone(tmp_path: Path, broken: str) -> None:
    path = tmp_path / "CLAUDE.md"
    path.write_text(broken)
    with pytest.raises(OrchestratorError, match="broken groove block"):
        write_block(path, block("new"))
    assert path.read_text() == broken


@pytest.mark.slow
def test_the_readme_orchestrator_example_runs_and_closes_the_loop(
    coordinator: RunningCoordinator, client_factory: Callable[..., GrooveClient], tmp_path: Path
) -> None:
    run = run_readme_example("orchestrator", coordinator.endpoint, tmp_path)
    context = (tmp_path / "checkout" / "CLAUDE.md").read_text()
    assert context.startswith("# Checkout notes\n\nRun the tests")  # the file's own text is kept
    assert context.count(C.INJECT_BEGIN) == context.count(C.INJECT_END) == 1  # the second session replaced it
    given = [line.endswith("True") for line in run.stdout.splitlines() if "learning given" in line]
    assert len(given) == 2
    assert ("two tests shared one temp directory" in context) == given[1]
    client = client_factory(coordinator.endpoint)
    flaky = list(client.iter_learnings(tier="project:/srv/shop"))
    assert len(flaky) == 1
    # each session that was given it counted one injection, and the helpful ones one help
    assert flaky[0].usage.times_injected == sum(given)
    assert flaky[0].usage.times_helpful == sum(given)
    assert flaky[0].usage.times_ignored == 0
    # whether a session is given it is sampled (both sessions sit it out in ~0.5 % of runs); that it matches
    # the task is not. Among the project's learnings: the workers' corpus learnings (global scope) hold refunds
    # and flaky tests too, and one of them may rank first by its words when this one was never rated helpful.
    hits = client.search("fix the flaky refund test", project="/srv/shop", scope_prefix="project:/srv/shop")
    assert [h.learning.id for h in hits[:1]] == [flaky[0].id]
    assert "workers: 2 reports, 0 errors" in run.stdout
    assert {a.agent_id for a in client.agents()} >= {"worker-0-0", "worker-0-1"}


@pytest.mark.slow
def test_the_orchestrator_plans_runs_workers_on_the_plan_and_briefs_an_agent(
    coordinator: RunningCoordinator, client_factory: Callable[..., GrooveClient], tmp_path: Path
) -> None:
    with Orchestrator(coordinator.endpoint, workdir=tmp_path / "w") as orchestrator:
        tasks = [{"id": f"s{i}", "title": f"step {i}", "depends_on": [f"s{i - 1}"] if i else []} for i in range(12)]
        tasks.append({"id": "brief", "title": "write the release notes", "description": "in NEWS.md"})
        memory = orchestrator.plan("/srv/shop", "release", "ship 2.0", tasks, constraints=["no API breaks"])
        lead = orchestrator.client
        lead.record_decision(memory, "which changelog format?", "keep-a-changelog", "readers know it", "lead")
        lead.send_nudge("writer-1", memory, "mention the migration", "lead", priority="high")
        checkout = tmp_path / "checkout"
        checkout.mkdir()
        orchestrator.prepare(checkout, project="/srv/shop", memory_id=memory, task_id="brief", agent_id="writer-1")
        context = (checkout / "CLAUDE.md").read_text()
        assert context.index("Goal: ship 2.0") < context.index(C.INJECT_END)
        for expected in (
            "Constraint: no API breaks",
            "Your task: write the release notes",
            "in NEWS.md",
            "which changelog format? **keep-a-changelog**",
            "(high) mention the migration — lead",
        ):
            assert expected in context  # fmt: skip
        workers = orchestrator.run(memory, 3, duration=60)
        workers.wait(timeout=120)
        assert sum(r["ops"].get("complete", 0) for r in workers.reports()) == 13
    assert client_factory(coordinator.endpoint).memory(memory).tasks == {"completed": 13}
