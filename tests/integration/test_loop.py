"""The learning loop end to end: adaptive parameters, `inject.prepare`'s selection rules and block, and
outcomes that close an injection (without the model: task texts match by keywords here).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from groove.client import BadRequest, Conflict, GrooveClient, NotFound
from groove.protocol import constants as C
from tests.helpers import RunningCoordinator, learning


def put(client: GrooveClient, text: str, scope: str = "global", **extra: Any) -> str:
    return client.put_learnings([learning(scope, description=text, insight=f"Because {text}.", **extra)]).ids[0]


def chosen(reply: Any) -> list[str]:
    return [item.learning.id for item in reply.learnings]


def test_parameters_start_at_their_priors(client: GrooveClient) -> None:
    params = {p.name: p for p in client.params()}
    assert set(params) == {C.PARAM_INJECTION_BUDGET, C.PARAM_CONFIDENCE_THRESHOLD, C.PARAM_SIMILARITY_THRESHOLD}
    budget = params[C.PARAM_INJECTION_BUDGET]
    assert budget.observations == 0
    assert budget.updated_at is None
    assert budget.value == pytest.approx(budget.alpha / (budget.alpha + budget.beta))
    assert budget.mapped == pytest.approx(budget.low + budget.value * (budget.high - budget.low))
    assert (budget.low, budget.high) == (1, C.MAX_INJECTION_BUDGET)


def test_inject_picks_matching_learnings_records_them_and_renders_a_block(client: GrooveClient) -> None:
    flaky = put(client, "the socket test is flaky under load", confidence=0.9)
    put(client, "prefer tabs in makefiles", confidence=0.9)
    reply = client.inject("s1", task="why is the socket test flaky", seed=1)
    assert chosen(reply) == [flaky]
    assert "words +" in reply.learnings[0].reasoning
    assert set(reply.params) == {C.PARAM_INJECTION_BUDGET, C.PARAM_CONFIDENCE_THRESHOLD, C.PARAM_SIMILARITY_THRESHOLD}
    lines = reply.markdown.splitlines()
    assert lines[0] == C.INJECT_BEGIN
    assert lines[-1] == C.INJECT_END
    assert reply.injection_id in lines[1]
    assert "### Solution" in lines
    assert "- **the socket test is flaky under load** Because the socket test is flaky under load." in lines
    stored = client.get(flaky)
    assert stored.usage.times_injected == 1
    assert stored.usage.last_used is not None


def test_without_a_task_the_most_confident_are_chosen_within_the_budget(client: GrooveClient) -> None:
    ids = [put(client, f"learning number {i}", confidence=0.5 + i / 40) for i in range(12)]
    reply = client.inject("s2", budget=3, seed=2)
    assert chosen(reply) == ids[::-1][:3]
    assert reply.params[C.PARAM_INJECTION_BUDGET] <= 3
    assert all("most confident" in item.reasoning for item in reply.learnings)


def test_learnings_that_did_more_harm_than_good_are_never_injected(client: GrooveClient) -> None:
    harmful = put(client, "disable the linter to ship faster", confidence=0.95)
    good = put(client, "run the linter before pushing", confidence=0.9)
    client.record_outcome([(harmful, "helpful"), (harmful, "contradicted"), (harmful, "contradicted")])
    for seed in range(5):
        reply = client.inject(f"h{seed}", budget=20, seed=seed)
        assert harmful not in chosen(reply)
        assert good in chosen(reply) or reply.params[C.PARAM_CONFIDENCE_THRESHOLD] > 0.9


def test_of_a_supersedes_chain_only_the_newest_and_of_a_contradiction_the_project_one(client: GrooveClient) -> None:
    old = put(client, "use requests for http", confidence=0.95)
    new = put(client, "use httpx for http", confidence=0.95)
    client.relate(new, "supersedes", old)
    mine = put(client, "indent with two spaces", confidence=0.95)
    theirs = put(client, "indent with four spaces", scope="project:/srv/api", confidence=0.95)
    client.relate(theirs, "contradicts", mine)
    reply = client.inject("c1", task="http client and indent", project="/srv/api", budget=20, seed=3)
    assert new in chosen(reply)
    assert old not in chosen(reply)
    assert theirs in chosen(reply)
    assert mine not in chosen(reply)
    elsewhere = client.inject("c2", task="http client and indent", budget=20, seed=3)
    assert mine in chosen(elsewhere)  # without the project, its learning is not read at all


def test_an_outcome_closes_its_injection_and_updates_the_parameters(client: GrooveClient) -> None:
    ids = [put(client, f"fact {i}", confidence=0.9) for i in range(3)]
    reply = client.inject("s3", budget=3, seed=4)
    assert sorted(chosen(reply)) == sorted(ids)
    helpful = chosen(reply)[0]
    closed = client.close_session([(helpful, "helpful")], injection_id=reply.injection_id, success=True)
    assert closed.applied == 3
    assert closed.ignored == 2
    usage = {lid: client.get(lid).usage for lid in ids}
    assert usage[helpful].times_injected == 1  # counted once, by inject.prepare
    assert usage[helpful].times_helpful == 1
    assert sorted(u.times_ignored for u in usage.values()) == [0, 1, 1]
    params = {p.name: p for p in client.params()}
    assert params[C.PARAM_INJECTION_BUDGET].observations == 1
    assert params[C.PARAM_INJECTION_BUDGET].updated_at is not None
    assert params[C.PARAM_CONFIDENCE_THRESHOLD].observations == 1
    assert params[C.PARAM_SIMILARITY_THRESHOLD].observations == 0  # no task text was matched
    with pytest.raises(Conflict):
        client.close_session(injection_id=reply.injection_id, success=False)
    assert client.get(helpful).usage.times_helpful == 1  # the rejected outcome changed nothing


def test_a_session_rates_each_learning_it_was_given_once(client: GrooveClient) -> None:
    rated, unrated = (put(client, f"fact {i}", confidence=0.9) for i in range(2))
    outside = put(client, "a learning found by search, not given", confidence=0.1)
    events = client.stats().events
    reply = client.inject("s-once", budget=2, seed=4)
    assert sorted(chosen(reply)) == sorted([rated, unrated])
    # during the session: the first rating of what it was given counts, and not as one more injection
    first = client.close_session([(rated, "helpful")], session_id="s-once")
    assert (first.applied, first.rated_before) == (1, 0)
    again = client.close_session([(rated, "contradicted"), (outside, "helpful")], session_id="s-once")
    assert (again.applied, again.rated_before) == (1, 1)  # `outside` was not given: a use of its own
    assert client.get(outside).usage.times_injected == 1
    elsewhere = client.close_session([(unrated, "helpful")], session_id="another session")
    assert (elsewhere.applied, elsewhere.rated_before) == (1, 0)
    # the close names it again: not counted twice, and not left over as ignored either
    closed = client.close_session([(rated, "helpful")], injection_id=reply.injection_id, success=True)
    assert (closed.applied, closed.ignored, closed.rated_before) == (1, 1, 1)
    usage = client.get(rated).usage
    assert (usage.times_injected, usage.times_helpful, usage.times_contradicted) == (1, 1, 0)
    other = client.get(unrated).usage
    assert (other.times_injected, other.times_helpful, other.times_ignored) == (2, 1, 1)
    params = {p.name: p.observations for p in client.params()}
    assert params[C.PARAM_CONFIDENCE_THRESHOLD] == 1  # the rating during the session judged a learning
    # once closed, the session's outcomes are uses of their own
    after = client.close_session([(rated, "helpful")], session_id="s-once")
    assert (after.applied, after.rated_before) == (1, 0)
    assert client.get(rated).usage.times_injected == 2
    # the outcome counters count what was applied: not the ratings made already, but the close's implied ignored
    now = client.stats().events
    kinds = ("helpful", "contradicted", "ignored")
    assert [now.get(f"outcomes_{k}", 0) - events.get(f"outcomes_{k}", 0) for k in kinds] == [4, 0, 1]


def test_injection_get_shows_what_a_session_was_given_and_when_it_closed(client: GrooveClient) -> None:
    ids = [put(client, f"fact {i}", confidence=0.9) for i in range(2)]
    reply = client.inject("s5", budget=2, seed=4)
    given = client.get_injection(reply.injection_id)
    assert (given.session_id, given.closed_at, given.had_task) == ("s5", None, False)
    assert [g.id for g in given.learnings] == chosen(reply)
    assert given.params == reply.params
    client.delete(ids[0])
    helpful = ids[1]
    client.close_session([(helpful, "helpful")], injection_id=reply.injection_id)  # unknown outcome
    after = client.get_injection(reply.injection_id)
    assert after.closed_at is not None
    now = {g.id: g.learning for g in after.learnings}
    assert now[ids[0]] is None  # deleted since: still listed, as given
    rated = now[helpful]
    assert rated is not None
    assert rated.usage.times_helpful == 1
    params = {p.name: p.observations for p in client.params()}
    # the unknown-outcome rule: only the confidence threshold moves, as one learning was judged
    assert params == {
        C.PARAM_INJECTION_BUDGET: 0,
        C.PARAM_CONFIDENCE_THRESHOLD: 1,
        C.PARAM_SIMILARITY_THRESHOLD: 0,
    }


def test_bad_outcomes_and_injections_are_rejected(client: GrooveClient) -> None:
    with pytest.raises(NotFound):
        client.close_session(injection_id="01a20000-0000-7000-8000-000000000000", success=True)
    for body in (
        {"success": True, "attributions": []},
        {},
        {"injection_id": "not-an-id"},
    ):
        with pytest.raises(BadRequest):
            client.call(C.OP_OUTCOME_RECORD, body)
    for body in ({}, {"session_id": "s", "budget": 0}, {"session_id": "s", "budget": 21}, {"session_id": ""}):
        with pytest.raises(BadRequest):
            client.call(C.OP_INJECT_PREPARE, body)
    with pytest.raises(NotFound):
        client.get_injection("01a20000-0000-7000-8000-000000000000")
    for body in ({}, {"injection_id": "not-an-id"}, {"injection_id": "01a20000-0000-7000-8000-000000000000", "x": 1}):
        with pytest.raises(BadRequest):
            client.call(C.OP_INJECTION_GET, body)
    assert all(p.observations == 0 for p in client.params())


def test_the_same_content_again_reinforces_instead_of_duplicating(client: GrooveClient) -> None:
    first = client.put_learnings([learning(description="Use Result types", insight="Errors are values.")])
    again = client.put_learnings([learning(description="  use result   TYPES ", insight="errors are VALUES.")])
    assert first.created == [True]
    assert again.ids == first.ids
    assert again.created == [False]
    stored = client.get(first.ids[0])
    assert stored.confidence == pytest.approx(0.6)  # alpha 1 -> 1.5 at the uniform prior
    twice = client.put_learnings(
        [learning(description="retry", insight="x"), learning(description="RETRY", insight="x")]
    )
    assert twice.ids[0] == twice.ids[1]
    assert twice.created == [True, False]
    elsewhere = client.put_learnings(
        [learning(scope="project:/srv/api", description="Use Result types", insight="Errors are values.")]
    )
    assert elsewhere.created == [True]  # another tier and scope: a learning of its own
    assert len(list(client.iter_learnings())) == 3  # the reinforced one, 'retry', and the project's
    client.delete(first.ids[0])
    back = client.put_learnings([learning(description="Use Result types", insight="Errors are values.")])
    assert back.created == [True]  # the content was forgotten with the learning


def test_a_new_supersedes_relation_lowers_the_older_learnings_confidence_once(client: GrooveClient) -> None:
    old = put(client, "pin dependencies with requirements.txt")
    new = put(client, "pin dependencies with a lock file")
    far = put(client, "pin tools in the project tier", scope="project:/srv/api")
    client.relate(new, "supersedes", old)
    demoted = client.get(old)
    assert demoted.confidence == pytest.approx(1.0 / 3.5)  # beta 1 -> 2.5, as a contradiction weighs
    assert client.get(new).confidence == pytest.approx(0.5)
    client.relate(new, "supersedes", old, weight=0.5)  # the same relation again: no second demotion
    assert client.get(old).confidence == pytest.approx(demoted.confidence)
    client.relate(far, "supersedes", new)  # across tiers: the demotion happens in the older one's tier
    assert client.get(new).confidence == pytest.approx(1.0 / 3.5)


def test_lifecycle_decays_archives_restores_and_purges_as_time_moves(client: GrooveClient) -> None:
    start = int(time.time() * 1000)
    day = C.DAY_MS
    doubtful = put(client, "commit generated files", confidence=0.05)
    used = put(client, "rebase before merging", confidence=0.5)
    client.record_outcome([(used, "helpful")] * 3)  # alpha 4, beta 1: confidence 0.8
    cold = put(client, "an old habit")
    first = client.maintain(now=start + 20 * day)  # nothing idle yet; below 0.1 confidence is archived at once
    assert (first.decayed, first.archived, first.purged) == (0, 1, 0)
    assert [h.learning.id for h in client.search("commit generated files")] == []
    assert [h.learning.id for h in client.search("commit generated files", include_archived=True)] == [doubtful]
    second = client.maintain(now=start + 44 * day)  # idle for 14 days: evidence shrinks by 0.9 ** 2
    assert second.decayed == 2
    assert client.get(used).usage.confidence_alpha == pytest.approx(1 + 3 * 0.81, rel=1e-3)
    assert client.get(used).confidence == pytest.approx(3.43 / 4.43, rel=1e-3)
    assert client.maintain(now=start + 44 * day).decayed == 0  # a second run at the same time changes nothing
    third = client.maintain(now=start + 100 * day)  # unused for 90 days: archived
    assert third.archived == 2
    assert client.search("rebase before merging") == []
    assert used not in [item.learning.id for item in client.inject("lc", budget=20).learnings]
    client.restore(used)
    assert [h.learning.id for h in client.search("rebase before merging")] == [used]
    with pytest.raises(Conflict):
        client.restore(used)  # not archived any more
    with pytest.raises(NotFound):
        client.restore("01a20000-0000-7000-8000-000000000000")
    late = client.maintain(now=start + 100 * day + 366 * day)  # archived for over a year: purged
    assert late.purged == 2
    with pytest.raises(NotFound):
        client.get(cold)
    assert client.get(used).id == used  # restored, so only archived again now, not purged
    with pytest.raises(NotFound):
        client.maintain(tiers=["project:/nowhere"])
    with pytest.raises(BadRequest):
        client.call(C.OP_MAINTAIN, {"now": -1})


def test_maintenance_also_runs_periodically(
    coordinator_factory: Callable[..., RunningCoordinator], client_factory: Callable[..., GrooveClient]
) -> None:
    running = coordinator_factory("--maintain-every-s", "0.2")
    client = client_factory(running.endpoint)
    doubtful = put(client, "commit the build output", confidence=0.05)  # below 0.1: archived at the next run
    kept = put(client, "commit the lock file", confidence=0.9)
    deadline = time.monotonic() + 10
    while [h.learning.id for h in client.search("commit")] != [kept]:
        assert time.monotonic() < deadline, "no maintenance run archived the doubtful learning"
        time.sleep(0.1)
    assert [h.learning.id for h in client.search("commit", include_archived=True)] == [kept, doubtful]
    assert "lifecycle maintenance failed" not in running.log()


def test_the_sampled_thresholds_hold_for_every_chosen_learning(client: GrooveClient) -> None:
    confidences = {put(client, f"habit {i}", confidence=round(0.1 + i * 0.05, 2)): 0.1 + i * 0.05 for i in range(17)}
    for seed in range(8):
        reply = client.inject(f"t{seed}", budget=20, seed=seed)
        floor = reply.params[C.PARAM_CONFIDENCE_THRESHOLD]
        picked = set(chosen(reply))
        assert all(confidences[lid] >= floor - 1e-9 for lid in picked)
        eligible = sorted(
            (lid for lid, conf in confidences.items() if conf >= floor - 1e-9), key=confidences.__getitem__
        )
        expected = min(len(eligible), int(reply.params[C.PARAM_INJECTION_BUDGET]))
        assert len(picked) == expected
        assert picked == set(eligible[len(eligible) - expected :])  # the most confident of the eligible
    matched = client.inject("t-task", task="habit", budget=20, seed=1)
    for item in matched.learnings:
        relevance = float(item.reasoning.rsplit("relevance ", 1)[1])
        assert relevance >= matched.params[C.PARAM_SIMILARITY_THRESHOLD] - 0.005
