"""A batch on its way through the writer: the checks each request passes before it commits, and what the commits
leave for the acker (`Landed`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from groove.coordinator.errors import Rejected, WrongCoordinator
from groove.coordinator.search.derived import DerivedChanges
from groove.coordinator.store.tiers import Tier
from groove.coordinator.write.ops import WriteItem
from groove.coordinator.write.parts import tidying
from groove.protocol import constants as C
from groove.protocol.cluster import ClusterMap
from groove.protocol.errors import ErrorCode


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
