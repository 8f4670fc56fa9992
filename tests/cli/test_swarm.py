"""`groove swarm` (what `make run` runs): live view, report, and a clean stop on Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from groove.client import GrooveClient
from groove.swarm.coding import groove_argv
from tests.helpers import run_groove, wait_for


@pytest.mark.slow
def test_a_swarm_runs_every_kind_of_request_and_reports_what_was_acked(tmp_path: Path) -> None:
    run = run_groove(
        "swarm",
        "--agents",
        "3",
        "--duration",
        "5",
        "--embedder",
        "none",
        "--data-dir",
        str(tmp_path),
        "--json",
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert (report["agents"], report["agents_without_report"], report["restarts"]) == (3, 0, 0)
    board = report["board"]
    assert board["tasks"].get("completed", 0) > 0  # the board agents worked the bundled plan
    assert sum(board["tasks"].values()) == 300
    assert board["lease_expiries"] == 0
    # the rate is over the time the plan took (first claim to last completion), not the whole run
    assert 0 < board["plan_took_s"] <= report["elapsed_s"]
    assert board["completed_per_s"] >= board["tasks"]["completed"] / report["elapsed_s"]
    # delivered: nudges the board agents acknowledged, counted by the coordinator (it once read 0 beside 4 sent)
    # and the report's one count of nudges sent holds the lead's and the synthetic agents' (it read 3 beside 4)
    assert board["lead_nudges"] > 0
    assert report["nudges_sent"] >= board["lead_nudges"] + report["ops"].get("nudge", {}).get("acked", 0)
    assert report["nudges_delivered"] > 0  # to each agent that acknowledged: a nudge to all reaches several
    assert report["errors"] == report["mismatches"] == 0
    assert all(report["ops"][kind]["acked"] > 0 for kind in ("learn", "outcome", "search", "inject")), report["ops"]
    assert report["verified_after"] >= report["learnings_created"] > 0
    assert [a["agent_id"] for a in report["per_agent"]] == [
        "agent-0",
        "agent-1",
        "agent-2",
        "board-0",
        "board-1",
        "board-2",
    ]
    assert report["coordinator_exit"] == 0
    live = [line for line in run.stderr.splitlines() if "queue" in line and "RSS" in line]
    assert live, run.stderr
    assert "learn" in live[-1]
    assert "agents 6/6" in "".join(live)
    assert any("board: " in line and "completed" in line for line in run.stderr.splitlines()), run.stderr


@pytest.mark.slow
def test_ctrl_c_stops_the_agents_then_the_coordinator_and_still_reports(tmp_path: Path) -> None:
    # no --data-dir: the swarm makes a temporary one (under TMPDIR), and removes it after a run that went well
    argv = groove_argv("swarm", "--agents", "2", "--duration", "120", "--embedder", "none", "--json")
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "TMPDIR": str(tmp_path)}
    )
    endpoint = wait_for(lambda: next(tmp_path.glob("groove-swarm-*/endpoint"), None), "it started", 60)
    assert endpoint is not None
    with GrooveClient(endpoint.read_text().strip(), timeout=10) as client:
        # both running (a worker stopped while starting up has no report)
        wait_for(lambda: len(client.agents()) == 5, "every agent said hello", 60)

        # the learning agents themselves well under way: the board agents' writes alone would leave `learn` at 0
        def learning_agents_busy() -> bool:
            served = {a.agent_id: a.requests for a in client.agents() if a.agent_id.startswith("agent-")}
            return len(served) == 2 and min(served.values()) > 20

        wait_for(learning_agents_busy, "the learning agents sent requests")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()  # interrupted, and nothing went wrong
    report = json.loads(out)
    assert report["interrupted"] is True
    assert report["errors"] == report["mismatches"] == 0, report["error_samples"]
    assert report["agents_without_report"] == 0  # each agent finished its requests and reported
    assert report["coordinator_exit"] == 0  # stopped after the agents, flushing cleanly
    assert report["ops"]["learn"]["acked"] > 0
    # the report is of the run, not zeros: what was acked was read back, and the coordinator's figures are in
    assert report["verified_after"] >= report["learnings_created"] > 0
    assert report["batches"] > 0
    assert report["coordinator_rss_mb"] > 0
    assert "interrupted: the agents read back what was acked" in err.decode()
    assert list(tmp_path.glob("groove-swarm-*")) == []  # the temporary data dir is gone
