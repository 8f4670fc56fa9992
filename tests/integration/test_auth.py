"""CurveZMQ authentication and the roles: what each key may do, what an unknown key gets, and binding rules."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from groove.client import GrooveClient, GrooveTimeout
from groove.client.errors import Unauthorized, UnknownOp
from groove.protocol.keys import CurveClient, generate_key_pair
from groove.swarm.orchestrator import Orchestrator
from tests.helpers import RunningCoordinator, learning, run_groove

Clients = Callable[..., GrooveClient]


class Keyring:
    """Client keys made in a temp dir: the authorized ones' public files copied into `authorized`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.authorized = root / "authorized"
        self.authorized.mkdir(parents=True)

    def make(self, name: str, authorize: bool = True, **metadata: str) -> Path:
        public, secret = generate_key_pair(self.root / "keys", name, metadata)
        if authorize:
            (self.authorized / public.name).write_bytes(public.read_bytes())
        return secret


@pytest.fixture
def keyring(tmp_path: Path) -> Keyring:
    ring = Keyring(tmp_path / "ring")
    ring.make("alice", role="agent")
    ring.make("cora", role="curator", orgs="acme")
    ring.make("ivan", role="curator", orgs="initech")
    ring.make("root", role="admin")
    ring.make("mallory", authorize=False, role="admin")
    return ring


@pytest.fixture
def secured(coordinator_factory: Callable[..., RunningCoordinator], keyring: Keyring) -> RunningCoordinator:
    return coordinator_factory("--curve", "--authorized-keys", str(keyring.authorized))


def connect(clients: Clients, secured: RunningCoordinator, keyring: Keyring, name: str, **kw: float) -> GrooveClient:
    server_key = str(secured.data_dir / "server.key")  # made at first start, beside its secret file
    curve = CurveClient.load(server_key, keyring.root / "keys" / f"{name}.key_secret")
    return clients(secured.endpoint, curve=curve, **kw)


@pytest.mark.parametrize("checks", [("--no-front-checks",), ()], ids=["checked-here", "checked-in-front"])
def test_each_role_may_do_its_own_operations_and_no_others(
    coordinator_factory: Callable[..., RunningCoordinator],
    keyring: Keyring,
    client_factory: Clients,
    checks: tuple[str],
) -> None:
    # with the front checking (the default) the writes reach the socket loop validated, the plain puts built; the
    # roles are still checked there
    secured = coordinator_factory("--curve", "--authorized-keys", str(keyring.authorized), *checks)
    alice = connect(client_factory, secured, keyring, "alice")
    cora = connect(client_factory, secured, keyring, "cora")
    root = connect(client_factory, secured, keyring, "root")

    # agent: global, its own user scope and project scopes; outcomes, search, inject, propose
    mine = alice.put_learnings([learning("global", 1), learning("user:alice", 2), learning("project:/srv/api", 3)]).ids
    alice.record_outcome([(mine[0], "helpful")])
    alice.search("learning", mode="keyword")
    alice.inject("s-1", project="/srv/api")
    review = alice.propose(mine[0], "acme")
    refused: dict[str, Callable[[], object]] = {
        "someone else's user scope": lambda: alice.put_learnings([learning("user:bob", 4)]),
        "an enterprise tier": lambda: alice.put_learnings([learning("global", 5)], tier="enterprise:acme"),
        "review.list": lambda: alice.reviews("acme"),
        "maintain": alice.maintain,
        "learning.delete": lambda: alice.delete(mine[0]),
        "index.rebuild": lambda: alice.call("index.rebuild", {}),
    }
    for attempt in refused.values():  # the keys say what each attempt tries
        with pytest.raises(Unauthorized):
            attempt()
    with pytest.raises(UnknownOp):  # not a question of rights
        alice.call("learning.frobnicate", {})

    # curator of acme: reviews and the acme tier, not another org's, not admin work
    assert [r.review_id for r in cora.reviews("acme")] == [review.review_id]
    approved = cora.decide("acme", review.review_id, "approve", curator="cora")
    assert approved.learning_id is not None
    cora.put_learnings([learning("global", 6)], tier="enterprise:acme")
    with pytest.raises(Unauthorized, match="curates acme"):
        cora.reviews("initech")
    with pytest.raises(Unauthorized, match="enterprise:initech"):
        cora.put_learnings([learning("global", 7)], tier="enterprise:initech")
    with pytest.raises(Unauthorized, match="admin"):
        cora.delete(mine[0])

    # relations that would change curated knowledge are the curators' (an agent's supersedes would demote it)
    curated = cora.put_learnings([learning("global", 10)], tier="enterprise:acme").ids[0]
    with pytest.raises(Unauthorized, match="enterprise:acme"):
        alice.relate(curated, "related_to", approved.learning_id)
    with pytest.raises(Unauthorized, match="enterprise:acme"):
        alice.relate(mine[0], "supersedes", curated)  # the older learning, demoted, is in the enterprise tier
    alice.relate(mine[0], "related_to", mine[1])
    cora.relate(curated, "supersedes", approved.learning_id)
    # archiving curated knowledge is its own organisation's curators' (and an admin's), not any curator's
    ivan = connect(client_factory, secured, keyring, "ivan")
    with pytest.raises(Unauthorized, match="enterprise:acme"):
        ivan.archive(curated)
    with pytest.raises(Unauthorized, match="curator"):
        alice.archive(mine[1])
    assert not root.get(curated).archived
    cora.archive(approved.learning_id)
    root.restore(approved.learning_id)

    # admin: everything
    root.maintain()
    assert root.delete(mine[2])
    assert root.put_learnings([learning("user:bob", 8)]).created == [True]

    # refused requests changed nothing: 3 + 1 approved + 2 curated + 1 admin's - 1 deleted
    stored = root.list_learnings(limit=100)
    assert len(stored.learnings) == 6
    assert [r.relation_type for r in root.relations(curated)] == ["supersedes"]
    assert {item.description for item in stored.learnings}.isdisjoint(
        {learning("user:bob", 4)["description"], learning("global", 5)["description"]}
    )
    stats = root.stats()
    assert stats.auth == "curve"
    assert stats.requests_unauthorized == len(refused) + 7  # the 5 by a curator or agent above, 2 archives
    assert (stats.requests_checked_in_front > 20) == (not checks)


def test_an_unknown_key_and_a_plain_client_get_no_service(
    secured: RunningCoordinator, keyring: Keyring, client_factory: Clients
) -> None:
    mallory = connect(client_factory, secured, keyring, "mallory", timeout=1.5, attempt_timeout=0.3)
    with pytest.raises(GrooveTimeout, match="authorized"):
        mallory.ping()
    plain = client_factory(secured.endpoint, timeout=1.5, attempt_timeout=0.3)
    with pytest.raises(GrooveTimeout, match="--curve"):
        plain.ping()
    root = connect(client_factory, secured, keyring, "root")
    assert root.stats().handshakes_refused >= 1
    assert "refused a CURVE handshake from unknown key" in secured.log()


def test_the_cli_speaks_curve_with_server_key_and_key(secured: RunningCoordinator, keyring: Keyring) -> None:
    env = {"GROOVE_SERVER_KEY": str(secured.data_dir / "server.key"), "GROOVE_KEY": ""}
    base = ["--endpoint", secured.endpoint]
    ok = run_groove(*base, "--key", str(keyring.root / "keys" / "alice.key_secret"), "ping", env=env)
    assert ok.returncode == 0, ok.stderr
    refused = run_groove(*base, "--key", str(keyring.root / "keys" / "alice.key_secret"), "maintain", env=env)
    assert refused.returncode == 1
    assert "unauthorized: maintain needs the admin role; key 'alice' is agent" in refused.stderr
    half = run_groove(*base, "ping", env={"GROOVE_SERVER_KEY": env["GROOVE_SERVER_KEY"]})
    assert half.returncode == 2
    assert "needs both --server-key and --key" in half.stderr


def test_a_non_loopback_bind_needs_curve_or_insecure(
    tmp_path: Path, coordinator_factory: Callable[..., RunningCoordinator], client_factory: Clients
) -> None:
    refused = run_groove("serve", "--data-dir", str(tmp_path / "d"), "--bind", "tcp://0.0.0.0:0")
    assert refused.returncode == 2
    assert "refusing to listen on tcp://0.0.0.0" in refused.stderr
    assert not (tmp_path / "d").exists()  # refused before anything was made
    insecure = coordinator_factory("--bind", "tcp://0.0.0.0:0", "--insecure")
    assert insecure.endpoint.startswith("tcp://0.0.0.0")
    client_factory(insecure.endpoint.replace("0.0.0.0", "127.0.0.1")).ping()


def test_bad_key_files_stop_the_start_with_the_file_named(tmp_path: Path, keyring: Keyring) -> None:
    (keyring.authorized / "odd.key").write_text('metadata\n    role = "overlord"\ncurve\n    public-key = "x"\n')
    out = run_groove(
        "serve", "--data-dir", str(tmp_path / "d"), "--curve", "--authorized-keys", str(keyring.authorized)
    )
    assert out.returncode == 2
    assert "odd.key" in out.stderr
    (keyring.authorized / "odd.key").unlink()
    generate_key_pair(keyring.root / "keys", "nobody", {})
    (keyring.authorized / "nobody.key").write_bytes((keyring.root / "keys" / "nobody.key").read_bytes())
    out = run_groove(
        "serve", "--data-dir", str(tmp_path / "d"), "--curve", "--authorized-keys", str(keyring.authorized)
    )
    assert out.returncode == 2
    assert "nobody.key: metadata role is ''" in out.stderr


def test_keys_generate_and_list(tmp_path: Path) -> None:
    made = run_groove("keys", "generate", "dana", "--dir", str(tmp_path), "--role", "curator", "--org", "acme")
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "dana.key_secret").stat().st_mode & 0o777 == 0o600
    again = run_groove("keys", "generate", "dana", "--dir", str(tmp_path), "--role", "agent")
    assert again.returncode == 2
    assert "exists already" in again.stderr
    listed = run_groove("keys", "list", str(tmp_path))
    assert "dana" in listed.stdout
    assert "curator" in listed.stdout
    assert "acme" in listed.stdout
    no_org = run_groove("keys", "generate", "eve", "--dir", str(tmp_path), "--role", "curator")
    assert no_org.returncode == 2
    assert "needs at least one --org" in no_org.stderr


def test_an_orchestrator_s_local_workers_talk_curve_with_its_keys(
    secured: RunningCoordinator, keyring: Keyring, tmp_path: Path
) -> None:
    curve = CurveClient.load(str(secured.data_dir / "server.key"), keyring.root / "keys" / "alice.key_secret")
    with Orchestrator(secured.endpoint, workdir=tmp_path / "workers", curve=curve) as orchestrator:
        fleet = orchestrator.spawn_workers(2, count=20, mix="learn=1")
        assert fleet.wait(timeout=120)
        reports = fleet.reports()
        stored = orchestrator.client.stats().writes_committed
    assert len(reports) == 2
    assert all(r["errors"] == 0 and r["ops"].get("learn", 0) == 20 for r in reports), reports
    assert stored >= 40  # admitted by the coordinator: their key is authorized
    (secret,) = (tmp_path / "workers").glob("fleet-*/worker.key_secret")
    assert secret.stat().st_mode & 0o777 == 0o600  # the keys handed down only to this user's workers
