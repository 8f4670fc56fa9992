"""A real `groove serve` process, real sockets, real RocksDB: every operation end to end."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from groove.client import BadRequest, GrooveClient, NotFound
from tests.helpers import RunningCoordinator, agent_report, learning, spawn_agent


def test_every_operation_round_trips(client: GrooveClient) -> None:
    ping = client.ping()
    assert ping.protocol == 1
    assert ping.uptime_s >= 0
    client.hello("tester", role="test")
    user_id = client.learn(
        "global", "error_recovery", "retry on EAGAIN", "retry with backoff", pattern={"errno": 11}, confidence=0.7
    )
    project_id = client.learn("project:/srv/api", "code_pattern", "flaky under load", "mark it slow")
    got = client.get(project_id)
    assert (got.tier, got.scope, got.insight) == ("project:/srv/api", "project:/srv/api", "mark it slow")
    assert client.get(user_id).pattern == {"errno": 11}
    assert client.record_outcome([(user_id, "helpful"), (project_id, "contradicted")], session_id="s1") == 2
    assert client.get(user_id).usage.times_helpful == 1
    client.relate(project_id, "specializes", user_id, weight=0.5)
    (rel,) = client.relations(user_id, direction="in")
    assert (rel.from_id, rel.relation_type, rel.weight, rel.tier) == (
        project_id,
        "specializes",
        0.5,
        "project:/srv/api",
    )
    assert client.relations(user_id, direction="out") == []
    assert [x.id for x in client.list_learnings(tier="project:/srv/api").learnings] == [project_id]
    assert [x.id for x in client.list_learnings(category="error_recovery").learnings] == [user_id]
    assert [x.id for x in client.list_learnings(scope_prefix="project:").learnings] == [project_id]
    stats = client.stats()
    assert {t.tier: t.learnings for t in stats.tiers} == {"user": 1, "project:/srv/api": 1}
    assert stats.agents_known == 1
    assert stats.writes_committed >= 4
    assert client.delete(project_id) is True
    with pytest.raises(NotFound):
        client.get(project_id)
    assert client.relations(user_id) == []


def test_list_pages_through_everything_in_order(client: GrooveClient) -> None:
    ids = client.put_learnings([learning(n=i) for i in range(25)]).ids
    ids += client.put_learnings([learning("project:/p", n=i) for i in range(10)]).ids
    page = client.list_learnings(limit=10)
    assert len(page.learnings) == 10
    assert page.cursor is not None
    assert [x.id for x in client.iter_learnings(page=7)] == sorted(ids)


def test_learning_in_an_unopened_project_tier_is_found_after_restart(
    coordinator: RunningCoordinator, client_factory: Callable[..., GrooveClient]
) -> None:
    client = client_factory(coordinator.endpoint)
    lid = client.learn("project:/srv/web", "solution", "d", "i")
    assert coordinator.stop() == 0
    coordinator.restart()
    client = client_factory(coordinator.endpoint)
    assert [t.tier for t in client.stats().tiers] == ["user"]
    assert client.get(lid).tier == "project:/srv/web"
    assert client.record_outcome([(lid, "helpful")]) == 1
    assert "opened tier project:/srv/web" in coordinator.log()


def test_eight_agent_processes_write_concurrently_and_read_everything_back(
    coordinator: RunningCoordinator, client_factory: Callable[..., GrooveClient], tmp_path: Path
) -> None:
    procs = [
        spawn_agent(
            coordinator.endpoint,
            "--agent-id",
            f"a{i}",
            "--count",
            "150",
            "--seed",
            str(i),
            "--acked-file",
            str(tmp_path / f"acked-{i}.json"),
        )
        for i in range(8)
    ]
    reports = [agent_report(proc, timeout=240) for proc in procs]
    assert all(r["errors"] == 0 and r["mismatches"] == 0 for r in reports), reports
    acked = [json.loads((tmp_path / f"acked-{i}.json").read_text()) for i in range(8)]
    assert all(r["verified"] == len(a["learned"]) > 0 for r, a in zip(reports, acked, strict=True))
    assert all(set(r["ops"]) == {"learn", "outcome", "search", "inject"} for r in reports), reports
    client = client_factory(coordinator.endpoint)
    stored = list(client.iter_learnings())
    learned = {lid for a in acked for lid in a["learned"]}
    # repeats of a corpus entry in the same scope were reinforced, not stored twice
    assert len(stored) == len({x.id for x in stored}) == len(learned) == sum(r["created"] for r in reports)
    assert sum(x.usage.times_injected for x in stored) == sum(sum(a["injected"].values()) for a in acked)
    assert {x.tier for x in stored} >= {"user", "project:/srv/groove-demo/payments-api"}
    assert client.stats().agents_known == 8


def test_bad_values_are_rejected_and_change_nothing(client: GrooveClient) -> None:
    lid = client.learn("global", "solution", "d", "i")
    before = client.get(lid)
    for bad in (
        {"scope": "proj:/x"},
        {"scope": "user:"},
        {"scope": ""},
        {"scope": "project:/" + "x" * 10_000},
        {"confidence": float("nan")},
        {"confidence": 7},
    ):
        with pytest.raises(BadRequest):
            client.put_learnings([learning(n=1) | bad])
    with pytest.raises(NotFound):
        client.record_outcome([(lid, "helpful"), ("01a20000-0000-7000-8000-000000000000", "helpful")])
    assert client.get(lid) == before
    assert [x.id for x in client.iter_learnings()] == [lid]
