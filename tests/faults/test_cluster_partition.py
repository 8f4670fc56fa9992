"""A coordinator of a cluster cut off (SIGSTOP) while a client injects and records outcomes across it.

Cut off before the call, it fails the injection and the outcome cleanly: the owners' offers and lookups are
read first, so nothing is written anywhere. Cut off after the home wrote its part, the home's reply comes
back and the cut-off owner's part is owed; once it answers again the part is sent under the same request id
and applied once, though the owner also finds the first send waiting when it wakes."""

from __future__ import annotations

import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from groove.client import GrooveClient, GrooveTimeout
from groove.client.cluster import GrooveCluster
from groove.protocol.loop import InjectPrepareReply
from tests.helpers import RunningCoordinator, learning

SHOP = "/srv/shop"


@pytest.fixture
def sockets() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="groove-cp-"))  # ipc paths are limited to ~100 bytes
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_cut_off_coordinator_fails_cross_calls_cleanly_and_its_owed_part_is_applied_once(
    coordinator_factory: Callable[..., RunningCoordinator],
    client_factory: Callable[..., GrooveClient],
    sockets: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "cluster.toml"
    path.write_text(
        f'home = "a"\n\n[coordinators]\na = "ipc://{sockets}/a.sock"\nb = "ipc://{sockets}/b.sock"\n\n'
        f'[projects]\n"{SHOP}" = "b"\n'
    )
    started = {
        name: coordinator_factory(
            "--bind", f"ipc://{sockets}/{name}.sock", "--cluster", str(path), "--cluster-name", name
        )
        for name in ("a", "b")
    }
    b = started["b"]
    home = client_factory(started["a"].endpoint)
    owner = client_factory(b.endpoint)
    with GrooveCluster(path, timeout=2) as cluster:
        batch = [learning("global", i, description=f"flaky socket test {i}") for i in range(3)]
        batch += [learning(f"project:{SHOP}", i, description=f"flaky socket in the shop {i}") for i in range(3)]
        ids = cluster.put_learnings(batch).ids
        injections: list[InjectPrepareReply] = []

        def inject(session: str) -> InjectPrepareReply:
            """An injection that gave learnings of both tiers (the draw decides: a few seeds find one)."""
            for seed in range(10):
                reply = cluster.inject(f"{session}-{seed}", task="flaky socket", project=SHOP, seed=seed)
                injections.append(reply)
                if {x.learning.tier for x in reply.learnings} == {"user", f"project:{SHOP}"}:
                    return reply
            raise AssertionError("no draw gave learnings of both tiers")

        first = inject("s0")
        written = _state(home, owner, ids)

        b.proc.send_signal(signal.SIGSTOP)
        try:
            with pytest.raises(GrooveTimeout, match=r"b\.sock"):
                cluster.inject("s1", task="flaky socket", project=SHOP, seed=3)
            rated = [(x.learning.id, "helpful") for x in first.learnings]
            with pytest.raises(GrooveTimeout, match=r"b\.sock"):
                cluster.close_session(rated, injection_id=first.injection_id, success=True)
            # nothing written on either side: no injection recorded, none closed, no count moved
            assert len(home.injections(limit=100).injections) == len(injections)
            assert home.get_injection(first.injection_id).closed_at is None
            assert _state(home, None, ids[:3]) == {k: v for k, v in written.items() if k in ids[:3]}
        finally:
            b.proc.send_signal(signal.SIGCONT)

        # healed: the same calls go through
        inject("s1")
        closed = cluster.close_session(rated, injection_id=first.injection_id, success=True)
        assert closed.applied == len(rated)

        # cut off after the home recorded an injection: the owner's count is owed, then applied once
        original = cluster.clients["a"].inject

        def inject_then_cut(*args: Any, **kwargs: Any) -> InjectPrepareReply:
            reply = original(*args, **kwargs)
            if f"project:{SHOP}" in {x.learning.tier for x in reply.learnings}:  # b has a part to write
                b.proc.send_signal(signal.SIGSTOP)
            return reply

        monkeypatch.setattr(cluster.clients["a"], "inject", inject_then_cut)
        try:
            inject("s2")
        finally:
            b.proc.send_signal(signal.SIGCONT)
        assert [(o.coordinator, o.what) for o in cluster.owed] == [("b", "count an injection")]
        assert cluster.settle() == []
        assert cluster.owed == []
    injected = {lid: sum(lid in {x.learning.id for x in r.learnings} for r in injections) for lid in ids}
    assert {lid: s["times_injected"] for lid, s in _state(home, owner, ids).items()} == injected
    helpful = {x.learning.id for x in first.learnings}
    assert {lid: s["times_helpful"] for lid, s in _state(home, owner, ids).items()} == {
        lid: int(lid in helpful) for lid in ids
    }


def _state(home: GrooveClient, owner: GrooveClient | None, ids: list[str]) -> dict[str, dict[str, int]]:
    """Each learning's usage counts, read from the coordinator that holds it."""
    state = {}
    for lid in ids:
        found = home.get(lid) if owner is None or lid in _held(home, ids) else owner.get(lid)
        state[lid] = {"times_injected": found.usage.times_injected, "times_helpful": found.usage.times_helpful}
    return state


def _held(client: GrooveClient, ids: list[str]) -> set[str]:
    return {x.id for x in client.iter_learnings() if x.id in ids}
