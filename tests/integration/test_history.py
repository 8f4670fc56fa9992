"""`injection.list` and `learning.history`: what sessions were given and how each learning's outcomes moved its
confidence, read back from what was stored (the dashboard's Sessions and learning pages)."""

from __future__ import annotations

import pytest

from groove.client import BadRequest, GrooveClient, NotFound
from groove.protocol import constants as C
from tests.helpers import RunningCoordinator, learning, run_groove

_NO_SUCH = "01a20000-0000-7000-8000-000000000000"


def test_a_learnings_history_lists_its_outcomes_confidence_and_sessions_and_survives_a_restart(
    coordinator: RunningCoordinator, client: GrooveClient
) -> None:
    fact, other = client.put_learnings(
        [learning(description=f"fact {i}", insight=f"because {i}", confidence=0.6) for i in range(2)]
    ).ids
    first = client.inject("s1", budget=2, seed=1)
    second = client.inject("s2", budget=2, seed=2)
    assert {item.learning.id for item in first.learnings} == {fact, other}
    client.close_session([(fact, "helpful")], injection_id=first.injection_id, success=True)
    client.record_outcome([(fact, "contradicted")])  # an outcome outside any injection
    coordinator.stop()
    coordinator.restart()
    history = client.history(fact)
    assert [(o.outcome, o.injection_id) for o in history.outcomes] == [
        ("helpful", first.injection_id),
        ("contradicted", None),
    ]
    assert history.outcomes[0].confidence > 0.6 > history.outcomes[1].confidence
    assert history.outcomes[-1].confidence == pytest.approx(client.get(fact).confidence)
    assert [g.injection_id for g in history.given_to] == [second.injection_id, first.injection_id]
    assert history.given_to[1].closed_at is not None
    assert history.given_to[0].closed_at is None
    # the newest injections first, each with how its learnings turned out (left unsaid: ignored)
    listed = client.injections()
    assert [i.injection_id for i in listed.injections] == [second.injection_id, first.injection_id]
    assert listed.injections[1].outcomes == {fact: "helpful", other: "ignored"}
    assert listed.injections[0].outcomes == {}
    assert listed.injections[0].closed_at is None
    assert listed.injections[1].params == first.params
    assert listed.before is None
    page = client.injections(limit=1)
    assert [i.injection_id for i in page.injections] == [second.injection_id]
    assert page.before is not None
    rest = client.injections(limit=1, before=page.before)
    assert [i.injection_id for i in rest.injections] == [first.injection_id]
    # the same through the CLI, as a person reads it
    ep = ("--endpoint", coordinator.endpoint)
    shown = run_groove(*ep, "history", fact)
    assert shown.returncode == 0, shown.stderr
    assert "helpful" in shown.stdout
    assert "contradicted" in shown.stdout
    assert "s2" in shown.stdout
    listed_cli = run_groove(*ep, "sessions", "--limit", "1")
    assert listed_cli.returncode == 0, listed_cli.stderr
    assert second.injection_id in listed_cli.stdout
    assert f"more: --before {second.injection_id}" in listed_cli.stdout


def test_bad_history_and_injection_list_requests_are_refused(client: GrooveClient) -> None:
    with pytest.raises(NotFound):
        client.history(_NO_SUCH)
    for body in (
        {},
        {"id": "not-an-id"},
        {"id": _NO_SUCH, "limit": 0},
        {"id": _NO_SUCH, "limit": C.MAX_HISTORY_LIMIT + 1},
    ):
        with pytest.raises(BadRequest):
            client.call(C.OP_LEARNING_HISTORY, body)
    wrong: list[dict[str, object]] = [{"limit": 0}, {"before": 12}, {"before": "yesterday"}, {"extra": 1}]
    for request in wrong:
        with pytest.raises(BadRequest):
            client.call(C.OP_INJECTION_LIST, request)
    assert client.injections().injections == []
