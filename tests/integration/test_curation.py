"""Promotion up the tiers and curation: promote, propose (with its risk pre-filter), list and decide reviews."""

from __future__ import annotations

import time

import pytest

from groove.client import BadRequest, Conflict, GrooveClient, NotFound
from groove.protocol import constants as C
from tests.helpers import learning

DAY = C.DAY_MS


def put(client: GrooveClient, text: str, scope: str = "project:/srv/api", confidence: float = 0.5) -> str:
    item = learning(scope, description=text, insight=f"Because {text}.", confidence=confidence)
    return client.put_learnings([item]).ids[0]


def test_promote_copies_a_project_learning_into_the_user_tier(client: GrooveClient) -> None:
    original = put(client, "run migrations before the tests", confidence=0.8)
    promoted = client.promote(original)
    assert promoted.created
    copy = client.get(promoted.id)
    assert copy.tier == "user"
    assert copy.scope == "global"
    assert copy.description == "run migrations before the tests"
    assert copy.confidence == pytest.approx(0.8)
    assert copy.source["type"] == "promoted"
    assert (copy.source["from_tier"], copy.source["from_id"]) == ("project:/srv/api", original)
    (relation,) = client.relations(promoted.id)
    assert (relation.relation_type, relation.to_id) == ("derived_from", original)
    again = client.promote(original)
    assert again.id == promoted.id  # the same content in the user tier: reinforced, not copied twice
    assert not again.created
    with pytest.raises(Conflict, match="only project-tier"):
        client.promote(promoted.id)
    with pytest.raises(NotFound):
        client.promote("01a20000-0000-7000-8000-000000000000")


def test_an_archived_learning_cannot_be_promoted_or_proposed(client: GrooveClient) -> None:
    lid = put(client, "an idea nobody used")
    client.maintain(now=int(time.time() * 1000) + 100 * DAY)
    with pytest.raises(Conflict, match="archived"):
        client.promote(lid)
    with pytest.raises(Conflict, match="archived"):
        client.propose(lid, "acme")
    assert client.reviews("acme") == []


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("deploy with AKIAIOSFODNN7EXAMPLE as the key", "secret"),
        ("use ghp_abcdefghijklmnopqrstuvwxyz0123456789 for the api", "secret"),
        ("set api_key=sk_live_abcdefghijklmnop1234 in the env", "secret"),
        ("-----BEGIN RSA PRIVATE KEY----- goes in the vault", "private_key"),
        ("the db password: hunter2!! works locally", "password"),
        ("connect to postgres://app:s3cret@db.internal/app", "password"),
        ("the cache lives in /home/alex/.cache/build", "absolute_path"),
        ("logs are in C:\\Users\\alex\\AppData\\Local", "absolute_path"),
        ("ask alex.doe@example.com about the release", "email"),
    ],
)
def test_proposals_are_flagged_for_each_risk(client: GrooveClient, text: str, kind: str) -> None:
    lid = put(client, text)
    flags = client.propose(lid, "acme").flags
    assert kind in {f.kind for f in flags}
    for flag in flags:
        if flag.kind in ("secret", "password"):
            assert "*" in flag.excerpt  # the middle of a secret is never echoed


def test_a_clean_proposal_has_no_flags(client: GrooveClient) -> None:
    assert client.propose(put(client, "pin the toolchain in rust-toolchain.toml"), "acme").flags == []


def test_review_queue_approve_and_reject(client: GrooveClient) -> None:
    good = put(client, "prefer structured logging")
    bad = put(client, "skip code review on fridays", scope="global")
    first = client.propose(good, "acme", note="we do this everywhere")
    second = client.propose(bad, "acme")
    pending = client.reviews("acme")
    assert [r.review_id for r in pending] == [first.review_id, second.review_id]
    assert pending[0].learning["description"] == "prefer structured logging"
    assert pending[0].note == "we do this everywhere"
    assert (pending[1].from_tier, pending[1].from_id) == ("user", bad)
    approved = client.decide("acme", first.review_id, "approve", curator="dana")
    assert approved.status == "approved"
    assert approved.learning_id is not None
    made = client.get(approved.learning_id)
    assert made.tier == "enterprise:acme"
    assert made.source["type"] == "enterprise_curated"
    assert made.source["curator"] == "dana"
    hits = client.search("structured logging", enterprise="acme")
    assert approved.learning_id in [h.learning.id for h in hits]
    assert approved.learning_id not in [h.learning.id for h in client.search("structured logging")]
    with pytest.raises(BadRequest, match="reason"):
        client.decide("acme", second.review_id, "reject", curator="dana")
    rejected = client.decide("acme", second.review_id, "reject", curator="dana", reason="against policy")
    assert rejected.status == "rejected"
    assert rejected.learning_id is None
    with pytest.raises(Conflict, match="already decided"):
        client.decide("acme", first.review_id, "approve", curator="dana")
    assert client.reviews("acme") == []
    done = {r.review_id: r for r in client.reviews("acme", status=None)}
    assert done[second.review_id].reason == "against policy"
    assert done[second.review_id].curator == "dana"
    assert done[first.review_id].learning_id == approved.learning_id
    with pytest.raises(NotFound):
        client.decide("acme", "01a20000-0000-7000-8000-000000000000", "approve", curator="dana")
    with pytest.raises(NotFound):
        client.decide("globex", first.review_id, "approve", curator="dana")
    with pytest.raises(BadRequest):
        client.call(C.OP_REVIEW_DECIDE, {"org": "a/b", "review_id": first.review_id, "decision": "approve"})
    assert client.reviews("nobody") == []
