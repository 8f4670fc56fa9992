"""The agent worker: its workloads and mix, scripts, heartbeats that outlive a coordinator restart, and a
fleet that restarts crashed workers."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from groove.client import GrooveClient
from groove.protocol import constants as C
from groove.swarm.corpus import load
from groove.swarm.fleet import Fleet
from groove.swarm.worker import EXIT_MISMATCHES, WorkerSpec, run_worker
from groove.swarm.workloads import Report, parse_mix, parse_script
from tests.helpers import RunningCoordinator, agent_report, run_groove, spawn_agent, wait_for


def test_the_corpus_is_large_varied_and_covers_every_category() -> None:
    corpus = load()
    assert len(corpus.entries) >= 2000
    assert len({e.description for e in corpus.entries}) == len(corpus.entries)
    assert {e.category for e in corpus.entries} == set(C.CATEGORIES)
    assert len(corpus.projects) >= 5
    assert all(sum(1 for e in corpus.entries if e.project == p) > 200 for p in corpus.projects)


def test_mix_parsing_names_what_is_wrong() -> None:
    assert parse_mix("learn=60,outcome=30,search=10") == {"learn": 60.0, "outcome": 30.0, "search": 10.0}
    for bad, words in (
        ("learn=1,teleport=2", "KIND=WEIGHT"),
        ("learn", "KIND=WEIGHT"),
        ("learn=x", "not a number"),
        ("learn=-1", "negative"),
        ("learn=0", "no positive weight"),
    ):
        with pytest.raises(ValueError, match=words):
            parse_mix(bad)


def test_script_parsing_names_the_line_at_fault(tmp_path: Path) -> None:
    script = tmp_path / "s.jsonl"
    script.write_text('# a comment\n{"op": "ping"}\n\n{"sleep": 0.1}\n')
    assert parse_script(script) == [{"op": "ping"}, {"sleep": 0.1}]
    for line, words in (
        ("not json", "s.jsonl:1: not JSON"),
        ("[1]", "expected an object"),
        ('{"op": "ping", "colour": 1}', "unknown key"),
        ('{"sleep": -1}', "sleep step"),
        ('{"body": {}}', "expected"),
    ):
        script.write_text(line + "\n")
        with pytest.raises(ValueError, match=words):
            parse_script(script)


def test_a_scripted_worker_runs_each_request_and_checks_what_it_expected(
    coordinator: RunningCoordinator, tmp_path: Path, client_factory: Callable[..., GrooveClient]
) -> None:
    lid = "01a20000-0000-7000-8000-0000000000aa"
    steps = [
        {
            "op": "learning.put",
            "body": {
                "learnings": [
                    {
                        "id": lid,
                        "scope": "global",
                        "category": "solution",
                        "description": "scripted",
                        "insight": "works",
                    }
                ]
            },
        },
        {"op": "outcome.record", "body": {"attributions": [{"learning_id": lid, "outcome": "helpful"}]}},
        {"sleep": 0.1},
        {"op": "learning.get", "body": {"id": "01a20000-0000-7000-8000-0000000000ff"}, "expect": "not_found"},
        {"op": "learning.put", "body": {"learnings": [{"scope": "proj:/x"}]}, "expect": "ok"},
    ]
    script = tmp_path / "session.jsonl"
    script.write_text("\n".join(json.dumps(s) for s in steps) + "\n")
    # the report is printed, and the status says the run found something wrong
    report = agent_report(spawn_agent(coordinator.endpoint, "--workload", str(script)), status=EXIT_MISMATCHES)
    assert report["ops"] == {"learning.put": 1, "outcome.record": 1}
    assert report["errors"] == 1  # the bad scope, which the script wrongly expected to succeed
    assert report["mismatches"] == 1
    assert "expected ok, got bad_request" in report["error_samples"][-1]
    assert client_factory(coordinator.endpoint).get(lid).usage.times_helpful == 1
    steps = [{"op": "ping"}, {"op": "learning.get", "body": {"id": lid}}]
    script.write_text("\n".join(json.dumps(s) for s in steps) + "\n")
    assert agent_report(spawn_agent(coordinator.endpoint, "--workload", str(script)))["mismatches"] == 0


def test_bad_workload_options_are_refused_before_connecting(tmp_path: Path) -> None:
    missing = run_groove("--endpoint", "tcp://127.0.0.1:9", "agent", "--workload", str(tmp_path / "none.jsonl"))
    assert missing.returncode == 2
    assert "no file" in missing.stderr
    bad_mix = run_groove("agent", "--mix", "learn=1,fly=2", "--count", "1")
    assert bad_mix.returncode == 2
    assert "KIND=WEIGHT" in bad_mix.stderr
    assert "give --duration or --count" in run_groove("agent").stderr


def test_heartbeats_keep_an_idle_worker_alive_and_survive_a_coordinator_restart(
    coordinator_factory: Callable[..., RunningCoordinator],
    client_factory: Callable[..., GrooveClient],
    tmp_path: Path,
) -> None:
    running = coordinator_factory()
    script = tmp_path / "idle.jsonl"
    script.write_text('{"sleep": 4}\n')
    spec = WorkerSpec(running.endpoint, "idle-1", workload=str(script), heartbeat_s=0.2, timeout=10)
    result: dict[str, Report] = {}
    thread = threading.Thread(target=lambda: result.update(report=run_worker(spec)))
    thread.start()
    client = client_factory(running.endpoint)
    (seen,) = wait_for(client.agents, "the worker said hello")
    assert seen.agent_id == "idle-1"
    assert seen.requests == 0  # it is idle: only heartbeats keep it fresh
    wait_for(lambda: client.agents()[0].last_seen > seen.last_seen, "a heartbeat refreshed it", timeout=5)
    running.kill()
    running.restart()
    client = client_factory(running.endpoint)
    deadline = time.monotonic() + 10
    while not [a for a in client.agents() if a.agent_id == "idle-1"]:
        assert time.monotonic() < deadline, "the worker never said hello to the restarted coordinator"
        time.sleep(0.1)
    thread.join(30)
    assert result["report"].restarts >= 1


def test_a_fleet_restarts_a_worker_that_crashes_and_collects_every_report(
    coordinator: RunningCoordinator, tmp_path: Path
) -> None:
    fleet = Fleet(coordinator.endpoint, tmp_path / "fleet")
    fleet.spawn("steady", mix="learn=1", duration=4)
    # 10 s: under CI load the worker can take seconds to start writing, and one killed with under a second of
    # its run left is (rightly) not restarted
    crashing = fleet.spawn("crashing", mix="learn=1", acked_file=tmp_path / "crashing-{run}.json", duration=10)
    with GrooveClient(coordinator.endpoint) as client:  # killed once it is writing, not while it starts
        wait_for(
            lambda: any(a.agent_id == "crashing" and a.requests > 0 for a in client.agents()),
            "the crashing agent got going",
        )
    assert crashing.proc is not None
    crashing.proc.send_signal(signal.SIGKILL)
    crashing.proc.wait(10)
    events = fleet.check()
    assert len(events) == 1
    assert "agent crashing exited with status -9; restarting it" in events[0]
    assert fleet.wait(timeout=60)
    assert crashing.runs == 2
    assert not (tmp_path / "crashing-1.json").exists()  # the killed run left nothing; the restart its own file
    assert json.loads((tmp_path / "crashing-2.json").read_text())["learned"]
    assert [r["agent_id"] for r in fleet.reports()] == ["steady", "crashing"]
    assert all(r["errors"] == 0 and r["ops"]["learn"] > 0 for r in fleet.reports())


def test_a_board_worker_reads_back_every_completion_and_note_it_was_acked(
    coordinator: RunningCoordinator, client: GrooveClient
) -> None:
    def work(name: str, abort: threading.Event | None = None) -> Report:
        memory = client.create_memory(f"/srv/{name}", name, "work the plan, then check it")
        client.add_tasks(memory, [{"id": f"{name}-{i}", "title": f"task {i}"} for i in range(40)])
        spec = WorkerSpec(coordinator.endpoint, f"{name}-worker", memory=memory, fail_share=0.1, timeout=30)
        report = run_worker(spec, abort=abort)
        assert report.errors == 0, report.error_samples
        assert report.ops["complete"] == 40  # the whole plan, failed tasks retried
        assert report.ops["note"] > 0
        assert report.mismatches == 0
        return report

    checked = work("checked")
    assert checked.verified == checked.ops["complete"] + checked.ops["note"]  # each completion and note, once
    assert checked.verify_s > 0
    aborted = threading.Event()
    aborted.set()  # a second signal, as `groove agent` takes it: the read-back is skipped
    assert work("skipped", aborted).verified == 0
