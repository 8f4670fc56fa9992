"""A `learning.put` built whole outside the writer: the rows it stores, its keyword text and its reply, made in
the front process from the request the front decoded and validated, so that the writer only joins rows and
commits (PROTOCOL.md, "Where a write's work runs").

`build` takes the same validated body the coordinator's own path takes (`protocol.codec.validate_body`) and
makes each row with the same functions the writer's `TierWrite` uses (`learning_row`, `UsageRow.prior`,
`content_hash`, `embedding_text`, `lexical.index_text`): what a built put stores is what the planned put would
have stored. Only the plain case is built: new learnings whose ids the coordinator chooses, all for one tier,
no two with the same content. Anything else (a client-chosen id, learnings for several tiers, content repeated
in the request) is not built and goes the planned way. The writer sends a built put the planned way too when its
content may be stored already (the tier's hash filter says maybe), or when its transaction fails (a resend after
a crash, a disk at fault): `Built.raw` is the request as it came, for that.

A built put travels the link as one flat list (`Built.wire`), msgpack's plain values only.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any

from groove.coordinator.search.embedder import embedding_text, normalise
from groove.coordinator.search.lexical import index_text
from groove.coordinator.store.records import UsageRow, content_hash, learning_row, vector_blob
from groove.coordinator.wire.codec import encode_ok
from groove.protocol import constants as C
from groove.protocol.ids import uuid7
from groove.protocol.models import LearningPutRequest, compact_json
from groove.protocol.scopes import tier_for_scope


@dataclass(slots=True)
class Built:
    """One `learning.put`, its rows ready to commit into one tier."""

    request_id: str
    digest: str
    tier: str
    raw: bytes  # the request's payload as the client sent it: the planned way, when the built one cannot go
    hashes: list[list[Any]]  # `learning_hashes` rows: [id, scope, hash]
    learnings: list[list[Any]]  # `learning` rows
    usage: list[list[Any]]  # `usage_stats` rows
    applied: list[Any]  # the `applied_requests` row: [request id, op, this tier's reply, applied at, digest]
    texts: list[list[str]]  # [id, the text embedded, the text keyword-indexed] for each learning
    vectors: list[list[Any]]  # [id, vector blob] for the learnings that came with their embedding
    reply: bytes  # the ack, encoded

    def wire(self) -> list[Any]:
        """As the front sends it over the link."""
        return list(_values(self))

    @classmethod
    def from_wire(cls, values: list[Any]) -> Built:
        """As the coordinator takes it from the link."""
        return cls(*values)

    @property
    def ids(self) -> list[str]:
        """The learnings it stores."""
        return [row[0] for row in self.learnings]


_values = attrgetter(*(f.name for f in fields(Built)))  # every field at once (`astuple` deep-copies: 70 µs a put)


def build(request_id: str, body: LearningPutRequest, digest: str, raw: bytes, now: int) -> Built | None:
    """The put's rows, reply and texts, or None when it is not the plain case (module docstring)."""
    tiers = {body.tier or tier_for_scope(item.scope) for item in body.learnings}
    if len(tiers) != 1 or any(item.id is not None for item in body.learnings):
        return None
    keys = [(item.scope, content_hash(item.description, item.insight)) for item in body.learnings]
    if len(set(keys)) != len(keys):  # a repeat reinforces the first: the planned way counts that
        return None
    ids = [uuid7() for _ in body.learnings]
    texts: list[list[str]] = []
    vectors: list[list[Any]] = []
    for lid, item in zip(ids, body.learnings, strict=True):
        text = embedding_text(item.description, item.insight)
        texts.append([lid, text, index_text(text)])
        if item.embedding is not None:
            vectors.append([lid, vector_blob(normalise(item.embedding)[0])])
    n = len(ids)
    share = {"idx": list(range(n)), "ids": ids, "created": [True] * n}  # this tier's share, as TierWrite._put's
    return Built(
        request_id=request_id,
        digest=digest,
        tier=tiers.pop(),
        raw=raw,
        hashes=[[lid, *key] for lid, key in zip(ids, keys, strict=True)],
        learnings=[
            learning_row(item, lid, item.confidence, now, now) for lid, item in zip(ids, body.learnings, strict=True)
        ],
        usage=[UsageRow.prior(item.confidence).row(lid) for lid, item in zip(ids, body.learnings, strict=True)],
        applied=[request_id, C.OP_LEARNING_PUT, compact_json(share), now, digest],
        texts=texts,
        vectors=vectors,
        reply=encode_ok(request_id, {"ids": ids, "created": [True] * n}),
    )
