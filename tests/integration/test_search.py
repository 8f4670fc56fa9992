"""`search` end to end, with vectors the client supplies (no model): ranking, keyword fallback, tier
isolation, filters, superseded exclusion, expansion over relations, and bad input.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from groove.client import BadRequest, GrooveClient, NotFound
from groove.protocol import constants as C
from groove.protocol.ids import now_ms
from tests.helpers import RunningCoordinator, learning, wait_for


def axis(i: int, tilt: int | None = None) -> list[float]:
    """A unit vector along axis i, optionally tilted a little toward axis `tilt`."""
    v = [0.0] * C.EMBEDDING_DIM
    v[i] = 1.0
    if tilt is not None:
        v[tilt] = 0.3
    return v


def put(client: GrooveClient, text: str, vector: list[float] | None, scope: str = "global", **extra: Any) -> str:
    item = learning(scope, description=text, insight=text, **extra)
    if vector is not None:
        item["embedding"] = vector
    return client.put_learnings([item]).ids[0]


def ids(hits: list[Any]) -> list[str]:
    return [h.learning.id for h in hits]


def test_semantic_ranking_uses_the_vectors(client: GrooveClient) -> None:
    a = put(client, "alpha", axis(0))
    b = put(client, "beta", axis(0, tilt=1))
    c = put(client, "gamma", axis(2))
    hits = client.search(vector=axis(0), mode="semantic")
    assert ids(hits)[:2] == [a, b]
    assert c not in ids(hits)  # orthogonal: no semantic match at all
    assert hits[0].reasoning.startswith("semantic 1.00")
    assert hits[0].tier == "user"
    assert hits[0].score > hits[1].score


def test_keywords_find_a_learning_that_has_no_vector(client: GrooveClient) -> None:
    lid = put(client, "the socket test is flaky under load", None)
    hits = client.search("flaky socket")  # hybrid: no model here, so keywords stand in
    assert ids(hits) == [lid]
    assert "words +0.60 ('flaky', 'socket')" in hits[0].reasoning
    assert ids(client.search("flaky", mode="keyword")) == [lid]
    assert client.search("kubernetes") == []


def test_confidence_weighs_in(client: GrooveClient) -> None:
    low = put(client, "retry with backoff", None, confidence=0.1)
    high = put(client, "retry with backoff and jitter", None, confidence=0.9)
    assert ids(client.search("retry backoff"))[0] == high
    assert low in ids(client.search("retry backoff"))


def test_tiers_are_isolated_by_context(client: GrooveClient) -> None:
    mine = put(client, "flaky api test", axis(3), scope="project:/srv/api")
    theirs = put(client, "flaky web test", axis(3), scope="project:/srv/web")
    org = client.put_learnings(
        [learning(description="flaky org test", insight="x", embedding=axis(3))], tier="enterprise:acme"
    ).ids[0]
    personal = put(client, "flaky personal test", axis(3))
    assert set(ids(client.search("flaky", vector=axis(3)))) == {personal}
    assert set(ids(client.search("flaky", vector=axis(3), project="/srv/api"))) == {personal, mine}
    both = client.search("flaky", vector=axis(3), project="/srv/api", enterprise="acme")
    assert set(ids(both)) == {personal, mine, org}
    assert theirs not in ids(both)
    assert {h.tier for h in both} == {"user", "project:/srv/api", "enterprise:acme"}
    assert client.search("flaky", project="/srv/unknown") != []  # an unknown project reads the user tier


def test_filters(client: GrooveClient) -> None:
    old = put(client, "cache invalidation", axis(4), category="solution", confidence=0.2)
    cut = client.get(old).created_at + 1
    wait_for(lambda: now_ms() > cut, "the clock moved past the cut")
    new = put(client, "cache warming", axis(4, tilt=5), scope="user:alex", category="preference", confidence=0.8)
    assert ids(client.search(vector=axis(4), since=cut)) == [new]
    assert ids(client.search(vector=axis(4), until=cut)) == [old]
    assert ids(client.search(vector=axis(4), category="solution")) == [old]
    assert ids(client.search(vector=axis(4), scope_prefix="user:")) == [new]
    assert ids(client.search(vector=axis(4), min_confidence=0.5)) == [new]
    assert len(client.search(vector=axis(4), limit=1)) == 1


def test_superseded_learnings_are_left_out_unless_asked_for(client: GrooveClient) -> None:
    old = put(client, "use callbacks for async code", axis(6))
    new = put(client, "use async/await for async code", axis(6, tilt=7))
    client.relate(new, "supersedes", old)
    assert ids(client.search(vector=axis(6))) == [new]
    assert set(ids(client.search(vector=axis(6), include_superseded=True))) == {old, new}


def test_depth_expands_over_relations(client: GrooveClient) -> None:
    hit = put(client, "validate inputs at boundaries", axis(8))
    near = put(client, "use strong parameters in rails", axis(9))
    far = put(client, "reject unknown json fields", axis(10))
    client.relate(near, "specializes", hit)
    client.relate(near, "related_to", far)
    assert ids(client.search(vector=axis(8), mode="semantic", limit=1)) == [hit]
    one = client.search(vector=axis(8), mode="semantic", limit=1, depth=1, min_confidence=0.0)
    assert ids(one) == [hit]  # the limit still holds
    expanded = client.search(vector=axis(8), mode="semantic", limit=3, depth=2)
    by_id = {h.learning.id: h for h in expanded}
    assert set(by_id) == {hit, near, far}
    assert f"via specializes from {hit}" in by_id[near].reasoning
    assert f"via related_to from {near}" in by_id[far].reasoning
    assert by_id[far].score < by_id[near].score < by_id[hit].score


def test_deleted_learnings_leave_the_indexes(client: GrooveClient) -> None:
    lid = put(client, "obsolete advice about tabs", axis(11))
    assert ids(client.search("tabs", vector=axis(11))) == [lid]
    client.delete(lid)
    assert client.search("tabs", vector=axis(11)) == []


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"vector": [0.1] * 10},
        {"vector": [float("nan")] * C.EMBEDDING_DIM},
        {"vector": [0.0] * C.EMBEDDING_DIM},
        {"text": "x", "limit": 0},
        {"text": "x", "since": 5, "until": 1},
        {"text": "x", "mode": "fuzzy"},
        {"vector": [0.1] * C.EMBEDDING_DIM, "mode": "keyword"},
        {"text": "x", "depth": 9},
        {"text": "x", "context": {"project": ""}},
        {"text": "x", "context": {"enterprise": "a/b"}},
        {"text": "x", "min_confidence": 2},
        {"text": "x", "sort": "new"},
    ],
)
def test_bad_searches_are_rejected(client: GrooveClient, body: dict[str, Any]) -> None:
    with pytest.raises(BadRequest):
        client.call(C.OP_SEARCH, body)


def test_bad_embeddings_on_put_are_rejected(client: GrooveClient) -> None:
    for bad in ([0.1] * 383, [float("inf")] * C.EMBEDDING_DIM, [0.0] * C.EMBEDDING_DIM):
        with pytest.raises(BadRequest):
            client.put_learnings([learning(embedding=bad)])
    with pytest.raises(BadRequest):
        client.put_learnings([learning(embedding=axis(0), embedding_model="text-embedding-3-large")])
    assert list(client.iter_learnings()) == []


def test_reindex_rebuilds_from_stored_vectors(client: GrooveClient) -> None:
    lid = put(client, "stored vector", axis(12), scope="project:/srv/api")
    reply = client.reindex()
    assert reply.tiers == ["user", "project:/srv/api"]
    assert reply.count == 1
    assert ids(client.search(vector=axis(12), project="/srv/api")) == [lid]
    with pytest.raises(NotFound):
        client.reindex(["project:/nowhere"])
    with pytest.raises(BadRequest):
        client.reembed()  # this coordinator has no embedder


def test_search_reflects_every_acked_change(client: GrooveClient) -> None:
    """Search rows come from an in-memory cache: each acked write must show in the very next search."""
    lid = put(client, "pin the toolchain version", axis(13), confidence=0.5)
    first = client.search(vector=axis(13))[0].learning
    assert first.usage.times_helpful == 0
    for _ in range(3):
        client.record_outcome([(lid, "helpful")])
        hit = client.search(vector=axis(13))[0].learning
        assert hit.usage.times_helpful == first.usage.times_helpful + 1
        assert hit.confidence > first.confidence
        first = hit
    client.put_learnings([learning(id=lid, description="pin the compiler version", embedding=axis(13))])
    assert client.search(vector=axis(13))[0].learning.description == "pin the compiler version"


def test_supersedes_across_tiers_and_its_removal(coordinator: RunningCoordinator, client: GrooveClient) -> None:
    old = put(client, "format with black", axis(14))
    new = put(client, "format with ruff", axis(14, tilt=15), scope="project:/srv/web")
    client.relate(new, "supersedes", old)
    # the relation lives in the project tier: only a context that reads it hides the old learning
    assert ids(client.search(vector=axis(14), project="/srv/web")) == [new]
    assert ids(client.search(vector=axis(14))) == [old]
    coordinator.stop()
    coordinator.restart()  # supersessions are derived: rebuilt from the stored relations
    assert ids(client.search(vector=axis(14), project="/srv/web")) == [new]
    client.delete(new)  # its relations go with it
    assert ids(client.search(vector=axis(14), project="/srv/web")) == [old]


def test_stats_report_search_service_time(client: GrooveClient) -> None:
    put(client, "measure before optimising", axis(16))
    for _ in range(5):
        client.search(vector=axis(16))
    stats = client.stats()
    assert stats.op_ms[C.OP_SEARCH].samples == 5
    assert 0 < stats.op_ms[C.OP_SEARCH].p50 <= stats.op_ms[C.OP_SEARCH].p99
    assert stats.op_ms[C.OP_LEARNING_PUT].samples == 1
    assert stats.vector_index == {"user": "exact"}
    assert stats.row_cache.rows >= 1
    assert stats.row_cache.hits >= 4


def test_near_duplicates_by_meaning_get_related(client: GrooveClient) -> None:
    older = put(client, "cache the dependency downloads", axis(17))
    newer = put(client, "keep a cache of downloaded dependencies", axis(17, tilt=18))  # cosine 0.96
    other = put(client, "unrelated advice", axis(19))
    deadline = time.monotonic() + 10
    while not client.relations(newer) and time.monotonic() < deadline:
        time.sleep(0.05)
    (relation,) = client.relations(newer)
    assert (relation.from_id, relation.relation_type, relation.to_id) == (newer, "related_to", older)
    assert relation.weight == pytest.approx(1 / 1.09**0.5, abs=1e-3)
    assert client.relations(other) == []
