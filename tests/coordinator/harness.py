"""A writer without sockets, for tests of the write path: real tiers on a temp dir and a Batcher whose replies
are collected instead of sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pycozo.client import Client
from pydantic import BaseModel

from groove.coordinator.errors import Rejected
from groove.coordinator.metrics import Metrics
from groove.coordinator.net.handlers import HANDLERS, Write
from groove.coordinator.search.derived import Derived
from groove.coordinator.store.reads import get_learning
from groove.coordinator.store.schema import MIGRATIONS
from groove.coordinator.store.tierset import TierSet
from groove.coordinator.write.batcher import Batcher, Outcome
from groove.coordinator.write.ops import WriteItem, WriteOp
from groove.protocol.ids import uuid7
from groove.protocol.models import LearningGetRequest
from groove.protocol.ops import OPS

NOW = 1_800_000_000_000


class Harness:
    """A TierSet and Batcher on a temp dir, collecting replies instead of sending them."""

    def __init__(self, data_dir: Path, commit_threads: int = 1, derived: Derived | None = None) -> None:
        """`derived`: the derived data the writes reach, as a coordinator's do (none by default)."""
        self.tiers = TierSet(data_dir, on_open=derived.load_tier if derived is not None else None)
        self.tiers.open_user()
        self.replies: dict[str, dict[str, Any] | Rejected] = {}
        self.batcher = Batcher(
            self.tiers,
            Metrics(),
            self._done,
            max_batch=64,
            max_wait_ms=0,
            capacity=100,
            commit_threads=commit_threads,
            committed=derived.after_batch if derived is not None else None,
            settle=derived.settle if derived is not None else None,
        )

    def _done(self, outcomes: list[Outcome]) -> None:
        for item, result in outcomes:
            self.replies[item.request_id] = result

    def item(self, op: str, body: dict[str, Any], request_id: str | None = None) -> WriteItem:
        """A write of a wire operation, by name, with its body as a map."""
        handler = HANDLERS[op]
        assert isinstance(handler, Write)
        return WriteItem(request_id or uuid7(), handler.op, OPS[op].request.model_validate(body))

    def run(self, *items: WriteItem, now: int = NOW) -> list[dict[str, Any] | Rejected]:
        """Commit these writes as one batch; their replies in order."""
        self.batcher.process(list(items), now)
        return [self.replies[i.request_id] for i in items]

    def ok(self, op: str, body: dict[str, Any]) -> dict[str, Any]:
        """One wire write that must succeed; its reply."""
        (reply,) = self.run(self.item(op, body))
        assert isinstance(reply, dict), reply
        return reply

    def write(self, op: WriteOp[Any], body: BaseModel) -> dict[str, Any]:
        """One write of any op (the internal ones too) that must succeed; its reply."""
        (reply,) = self.run(WriteItem(uuid7(), op, body))
        assert not isinstance(reply, Rejected), reply.message
        return reply

    def get(self, lid: str) -> dict[str, Any]:
        """A learning as `learning.get` returns it."""
        learning_map: dict[str, Any] = get_learning(self.tiers, lambda _tier, _ids: set(), LearningGetRequest(id=lid))[
            "learning"
        ]
        return learning_map


def tier_at_version(db_dir: Path, version: int) -> Client:
    """A tier database as a coordinator of that schema version left it: its migrations' steps, and their records."""
    db = Client("rocksdb", str(db_dir), dataframe=False)
    db.run(":create schema_version { version: Int => applied_at: Int, description: String }")
    for migration in MIGRATIONS[:version]:
        for step in migration.steps:
            db.run(step.script)
        db.run(
            "?[version, applied_at, description] <- [[$v, 1, 'old']] "
            ":put schema_version {version => applied_at, description}",
            {"v": migration.version},
        )
    return db
