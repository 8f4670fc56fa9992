"""A batch on its way through the writer: the checks each request passes before it commits, which built puts join
their tier's transaction as built (`joinable`), and what the commits leave for the acker (`Landed`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from groove.coordinator.errors import Rejected, WrongCoordinator
from groove.coordinator.search.changes import DerivedChanges
from groove.coordinator.store.records import content_hash
from groove.coordinator.store.tiers import Tier
from groove.coordinator.store.tierset import TierSet
from groove.coordinator.write.built import Built
from groove.coordinator.write.ops import WriteItem, unbuild
from groove.coordinator.write.parts import BoardPart, DecidePart, ImportPart, Part, PromotePart, PutPart, tidying
from groove.protocol import constants as C
from groove.protocol.cluster import ClusterMap
from groove.protocol.errors import ErrorCode
from groove.protocol.models import LearningIn
from groove.protocol.portability import ExportedLearning


@dataclass(slots=True)
class Landed:
    """A committed batch, on its way to its acks."""

    items: list[WriteItem]
    started: float  # perf_counter when its commit began
    changes: list[tuple[str, DerivedChanges]] = field(default_factory=list)  # per tier, in commit order
    # tiers whose log is synced before its acks (--durability fsync): those it committed to, and those a recalled
    # reply came from (its first commit's sync may have failed: a resend must not be acked unsynced)
    dirty: dict[str, Tier] = field(default_factory=dict)
    located: dict[str, str] = field(default_factory=dict)  # learnings stored, by id: the tier they went to
    removed: list[str] = field(default_factory=list)  # learnings deleted


def check_curation(item: WriteItem) -> None:
    """A write its op marks `curated` may change only enterprise tiers its sender curates."""
    if item.curates is None or not item.op.curated:
        return
    for tier in item.parts:
        if tier.startswith(C.TIER_ENTERPRISE_PREFIX) and tier[len(C.TIER_ENTERPRISE_PREFIX) :] not in item.curates:
            raise Rejected(ErrorCode.UNAUTHORIZED, f"{item.op.name} would change {tier!r}, not curated by this key")


def check_owner(item: WriteItem, owners: tuple[str, ClusterMap] | None) -> None:
    """In a cluster, a client's write may change only the tiers this coordinator owns; a part that only tidies
    a tier it does not own is left out (the coordinator's own writes touch only tiers it holds)."""
    if owners is None or item.internal:
        return
    me, cluster = owners
    for tier in list(item.parts):
        owner = cluster.owner(tier)
        if owner == me:
            continue
        if not tidying(item.parts[tier]):
            raise WrongCoordinator(tier, owner, me)
        del item.parts[tier]


def joinable(
    tiers: TierSet, items: list[WriteItem], planned: list[WriteItem], now: int, owners: tuple[str, ClusterMap] | None
) -> dict[str, list[WriteItem]]:
    """The batch's built puts whose rows join their tier's transaction as built, by tier, in queue order. The
    others are unbuilt (planned, `ops.unbuild`): those whose content the tier may hold already (its hash filter
    says maybe: the planned way reinforces the learning holding it), those whose content another write of the
    batch stores too (planned together, the later reinforces the earlier), and every one in a cluster (its
    tier's owner is checked on the planned way). `planned`: the batch's other writes, planned already."""
    stored = Counter(key for item in planned for tier, part in item.parts.items() for key in _stores(tier, part))
    stored.update(key for item in items if item.built is not None for key in _built_keys(item.built))
    maybe: set[tuple[str, str]] = set()  # (tier, content hash) the tier may hold already, asked once per tier
    refused: dict[str, Rejected] = {}  # tiers that cannot be opened (tier_unavailable), answered as planned would
    for name in {item.built.tier for item in items if item.built is not None}:
        try:
            tier = tiers.get(name, create=True)
        except Rejected as exc:
            refused[name] = exc
            continue
        assert tier is not None
        maybe.update((name, h) for h in tier.content_hashes.maybe(k[2] for k in stored if k[0] == name))
    joined: dict[str, list[WriteItem]] = {}
    for item in items:
        put = item.built
        if put is None:
            continue
        if put.tier in refused:
            item.error = refused[put.tier]
            continue
        keys = _built_keys(put)
        if owners is not None or any(stored[key] > 1 or (key[0], key[2]) in maybe for key in keys):
            unbuild(tiers, item, now)
            try:
                check_owner(item, owners)
            except Rejected as exc:
                item.parts = {}
                item.error = exc
            continue
        joined.setdefault(put.tier, []).append(item)
    return joined


def _built_keys(put: Built) -> list[tuple[str, str, str]]:
    """(tier, scope, content hash) of each learning a built put stores (distinct: `built.build` sees to it)."""
    return [(put.tier, scope, digest) for _, scope, digest in put.hashes]


def _stores(tier: str, part: Part) -> Iterator[tuple[str, str, str]]:
    """(tier, scope, content hash) of each learning a planned part stores."""
    learnings: Sequence[LearningIn | ExportedLearning]
    match part:
        case PutPart():
            learnings = [item for _, _, item in part.entries]
        case BoardPart(put=PutPart() as put):
            learnings = [item for _, _, item in put.entries]
        case PromotePart(item=item) | DecidePart(item=LearningIn() as item):
            learnings = [item]
        case ImportPart():
            learnings = part.learnings
        case _:
            return
    yield from ((tier, i.scope, content_hash(i.description, i.insight)) for i in learnings)
