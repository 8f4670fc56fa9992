"""Three coordinators partitioning the tiers (a cluster map), against GrooveCluster, the CLI and a stale map."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from groove.client import Conflict, GrooveClient, NotFound, WrongCoordinator
from groove.client.cluster import GrooveCluster
from groove.integrations.mcp_server import Bridge, build
from groove.protocol.cluster import ClusterMap
from groove.protocol.ids import uuid7
from groove.swarm.coding import groove_argv
from tests.helpers import RunningCoordinator, learning, run_groove

NAMES = ("a", "b", "c")
SHOP, API = "/srv/shop", "/srv/api"  # by prefix: b and c


def map_text(sockets: Path, shop_owner: str = "b") -> str:
    coordinators = "\n".join(f'{n} = "ipc://{sockets}/{n}.sock"' for n in NAMES)
    return (
        f'home = "a"\nspread = ["b", "c"]\n\n[coordinators]\n{coordinators}\n\n'
        f'[projects]\n"{SHOP}" = "{shop_owner}"\n"{API}" = "c"\n'
    )


@pytest.fixture
def sockets() -> Iterator[Path]:
    # ipc paths are limited to ~100 bytes: a short directory, not pytest's tmp_path
    path = Path(tempfile.mkdtemp(prefix="groove-cl-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def cluster_map(
    coordinator_factory: Callable[..., RunningCoordinator], sockets: Path, tmp_path: Path
) -> tuple[Path, dict[str, RunningCoordinator]]:
    path = tmp_path / "cluster.toml"
    path.write_text(map_text(sockets))
    started = {
        name: coordinator_factory(
            "--bind", f"ipc://{sockets}/{name}.sock", "--cluster", str(path), "--cluster-name", name
        )
        for name in NAMES
    }
    return path, started


def test_writes_land_on_their_owners_and_a_search_across_two_equals_one_coordinators(
    cluster_map: tuple[Path, dict[str, RunningCoordinator]],
    coordinator: RunningCoordinator,
    client_factory: Callable[..., GrooveClient],
) -> None:
    path, started = cluster_map
    cluster = ClusterMap.load(path)
    batch = [learning("global", i, description=f"retry flaky step {i}") for i in range(6)]
    batch += [learning(f"project:{SHOP}", i, description=f"retry shop checkout {i}") for i in range(6)]
    batch += [learning(f"project:{API}/v2", i, description=f"retry api call {i}") for i in range(4)]
    batch += [learning(f"project:/repos/r{i}", i, description=f"retry hashed repo {i}") for i in range(8)]
    with GrooveCluster(path, timeout=20) as clients:
        reply = clients.put_learnings(batch)  # one request per owner, all at once
        assert all(reply.created)
        assert len(set(reply.ids)) == len(batch)
        for item, lid in zip(batch, reply.ids, strict=True):
            tier = "user" if item["scope"] == "global" else "project:" + str(item["scope"]).removeprefix("project:")
            owner = cluster.owner(tier)
            assert clients.clients[owner].get(lid).tier == tier  # acked, and read back from its owner
            for other in set(NAMES) - {owner}:
                with pytest.raises(NotFound):
                    clients.clients[other].get(lid)
        assert {cluster.owner(f"project:/repos/r{i}") for i in range(8)} == {"b", "c"}

        # the same learnings, with the same ids, on one coordinator holding every tier
        single = client_factory(coordinator.endpoint)
        single.put_learnings([item | {"id": lid} for item, lid in zip(batch, reply.ids, strict=True)])
        merged = clients.search("retry shop checkout flaky", project=SHOP, mode="keyword", limit=8)
        alone = single.search("retry shop checkout flaky", project=SHOP, mode="keyword", limit=8)
        assert {h.tier for h in merged} == {"user", f"project:{SHOP}"}  # from coordinators a and b
        assert [(h.learning.id, round(h.score, 9)) for h in merged] == [
            (h.learning.id, round(h.score, 9)) for h in alone
        ]

        listed = [x.id for x in _pages(clients)]
        assert listed == sorted(reply.ids)
        assert [s.name for s in clients.status() if s.error is None] == list(NAMES)
    for running in started.values():
        assert running.stop() == 0


def _pages(clients: GrooveCluster) -> Iterator[Any]:
    cursor = None
    while True:
        page = clients.list_learnings(limit=5, cursor=cursor)
        yield from page.learnings
        if page.cursor is None:
            return
        cursor = page.cursor


def test_a_stale_map_is_refused_and_changes_nothing(
    cluster_map: tuple[Path, dict[str, RunningCoordinator]], sockets: Path, tmp_path: Path
) -> None:
    _, started = cluster_map
    stale = tmp_path / "stale.toml"
    stale.write_text(map_text(sockets, shop_owner="c"))  # says c owns the shop; the coordinators say b
    with GrooveCluster(stale, timeout=20) as clients:
        with pytest.raises(WrongCoordinator) as refused:
            clients.put_learnings([learning(f"project:{SHOP}", 1)])
        assert refused.value.owner == "b"
        assert clients.clients["c"].list_learnings(tier=f"project:{SHOP}").learnings == []
        assert clients.clients["b"].list_learnings(tier=f"project:{SHOP}").learnings == []
        # a write whose learnings span owners is split: the part the stale map sends right still lands
        with pytest.raises(WrongCoordinator):
            clients.put_learnings([learning("global", 2), learning(f"project:{SHOP}", 3)])
        assert len(clients.clients["a"].list_learnings(tier="user").learnings) == 1
    cli = run_groove("--cluster", str(stale), "learn", "x", "--scope", f"project:{SHOP}")
    assert (cli.returncode, cli.stdout) == (1, "")
    assert cli.stderr.startswith(
        "groove: error: wrong_coordinator: tier 'project:/srv/shop' is written by coordinator 'b'"
    )
    assert len(cli.stderr.splitlines()) == 1
    refusal = "tier 'project:/srv/api/x' is written by coordinator 'c'"
    with GrooveClient(started["a"].endpoint, timeout=20) as home, pytest.raises(WrongCoordinator, match=refusal):
        home.learn("project:/srv/api/x", "solution", "d", "i")  # one coordinator, straight: refused too


def test_the_cli_routes_by_tier_and_shows_the_cluster(
    cluster_map: tuple[Path, dict[str, RunningCoordinator]], coordinator: RunningCoordinator, tmp_path: Path
) -> None:
    path, started = cluster_map
    env = {"GROOVE_CLUSTER": str(path)}
    stored = run_groove("learn", "retry the shop's flaky checkout", "--scope", f"project:{SHOP}", "--json", env=env)
    assert stored.returncode == 0, stored.stderr
    lid = json.loads(stored.stdout)["id"]
    shown = run_groove("get", lid, "--json", env=env)
    assert json.loads(shown.stdout)["tier"] == f"project:{SHOP}"
    found = run_groove("search", "flaky checkout", "--project", SHOP, "--json", env=env)
    assert [h["learning"]["id"] for h in json.loads(found.stdout)] == [lid]
    status = run_groove("cluster", "status", env=env)
    assert status.returncode == 0, status.stderr
    rows = {line.split()[0]: line for line in status.stdout.splitlines()[2:]}
    assert set(rows) == set(NAMES)
    assert "user, enterprise:*" in rows["a"]
    assert f"project:{SHOP}" in rows["b"]
    assert all(row.rstrip().endswith("up") for row in rows.values())
    # a coordinator of the map that was started without it would not refuse other tiers' writes: said, status 1
    unaware = tmp_path / "unaware.toml"
    unaware.write_text(path.read_text().replace("[projects]", f'd = "{coordinator.endpoint}"\n\n[projects]'))
    flagged = run_groove("--cluster", str(unaware), "cluster", "status")
    assert flagged.returncode == 1
    said = f"groove: error: coordinator d at {coordinator.endpoint}: started without --cluster: it refuses no"
    assert flagged.stderr.startswith(said)
    assert len(flagged.stderr.splitlines()) == 1
    started["c"].kill()
    down = run_groove("--timeout", "1", "cluster", "status", "--json", env=env)
    assert down.returncode == 3
    assert [s["name"] for s in json.loads(down.stdout) if s["error"] is not None] == ["c"]
    assert down.stderr.startswith("groove: error: coordinator c at ipc://")


def test_a_coordinator_deletes_and_maintains_its_tiers_beside_its_own_copy_of_the_user_tier(
    cluster_map: tuple[Path, dict[str, RunningCoordinator]],
) -> None:
    path, _ = cluster_map
    with GrooveCluster(path, timeout=20) as clients:
        lid = clients.put_learnings([learning(f"project:{SHOP}", 1)]).ids[0]
        b = clients.clients["b"]
        assert "user" in b.stats().disk_tiers  # opened at start, though a owns the user tier
        # a delete also drops relations in every tier held, and a maintenance run covers every tier: neither is
        # refused for b's copy of the user tier, which b leaves alone
        assert b.delete(lid) is True
        with pytest.raises(NotFound):
            clients.get(lid)
        assert [t.tier for t in b.maintain().tiers] == [f"project:{SHOP}"]
        with pytest.raises(WrongCoordinator):
            b.learn("global", "solution", "d", "i")  # writing b's copy of the user tier is still refused


def _chosen(reply: Any) -> list[tuple[str, float, str]]:
    return [(x.learning.id, round(x.score, 9), x.reasoning) for x in reply.learnings]


def _state(client: Any, ids: list[str]) -> dict[str, tuple[float, dict[str, Any]]]:
    """Each learning's confidence and usage (last_used left out: the two sides ran at different times)."""
    got = {lid: client.get(lid) for lid in ids}
    return {lid: (round(x.confidence, 9), x.usage.model_dump(exclude={"last_used"})) for lid, x in got.items()}


def test_an_injection_and_its_outcome_across_two_coordinators_equal_one_coordinators(
    cluster_map: tuple[Path, dict[str, RunningCoordinator]],
    coordinator: RunningCoordinator,
    client_factory: Callable[..., GrooveClient],
) -> None:
    path, _ = cluster_map
    words = ["retry", "flaky", "checkout", "cache", "timeout", "lock"]
    batch = [learning("global", i, description=f"{words[i]} {words[(i + 1) % 6]} in general") for i in range(6)]
    batch += [
        learning(f"project:{SHOP}", i, description=f"{words[i]} {words[(i + 2) % 6]} in the shop") for i in range(6)
    ]
    single = client_factory(coordinator.endpoint)
    with GrooveCluster(path, timeout=20) as clients:
        ids = clients.put_learnings(batch).ids
        single.put_learnings([item | {"id": lid} for item, lid in zip(batch, ids, strict=True)])
        user_ids, shop_ids = ids[:6], ids[6:]
        # a contradiction inside each tier: the chooser hears of the shop's from coordinator b's offer
        for side in (single, clients.clients["a"]):
            side.relate(user_ids[0], "contradicts", user_ids[1])
        for side in (single, clients.clients["b"]):
            side.relate(shop_ids[0], "contradicts", shop_ids[1])
        sessions = [("cache timeout", 2), (None, 3), ("lock retry cache", 4), ("retry the flaky checkout", 1)]
        tiers = set()
        for n, (task, seed) in enumerate(sessions):
            across = clients.inject(f"s{n}", task=task, project=SHOP, seed=seed)
            alone = single.inject(f"s{n}", task=task, project=SHOP, seed=seed)
            assert _chosen(across) == _chosen(alone)
            assert across.params == alone.params
            tiers |= {x.learning.tier for x in across.learnings}
            assert across.markdown == alone.markdown.replace(alone.injection_id, across.injection_id)
        assert tiers == {"user", f"project:{SHOP}"}  # chosen from a's learnings and from b's
        # each owner counted the injections of its learnings, as the one coordinator did
        assert _state(clients, ids) == _state(single, ids)

        given = [x.learning.id for x in across.learnings]
        helpful = next(lid for lid in given if lid in user_ids)
        wrong = next(lid for lid in given if lid in shop_ids)
        extra = next(lid for lid in shop_ids if lid not in given)  # used, though not injected
        rated = [(helpful, "helpful"), (wrong, "contradicted"), (extra, "helpful")]
        closed = clients.close_session(rated, injection_id=across.injection_id, success=False)
        assert closed == single.close_session(rated, injection_id=alone.injection_id, success=False)
        assert closed.ignored == len(given) - 2
        assert _state(clients, ids) == _state(single, ids)
        moved = [
            [p.model_dump(exclude={"updated_at"}) for p in side.params()] for side in (clients.clients["a"], single)
        ]
        assert moved[0] == moved[1]  # the home's parameters moved as the one coordinator's did
        shown = clients.get_injection(across.injection_id)
        assert [g.learning is not None for g in shown.learnings] == [True] * len(given)  # b's read from b
        assert shown.closed_at is not None

        # closing it again is refused by the home before anything reaches b
        before = _state(clients, ids)
        with pytest.raises(Conflict):
            clients.close_session([(wrong, "helpful")], injection_id=across.injection_id)
        with pytest.raises(NotFound):
            clients.close_session([(wrong, "helpful"), (str(uuid7()), "helpful")])
        assert _state(clients, ids) == before


def test_the_cli_injects_and_closes_sessions_across_the_cluster(
    cluster_map: tuple[Path, dict[str, RunningCoordinator]],
) -> None:
    path, _ = cluster_map
    env = {"GROOVE_CLUSTER": str(path)}
    with GrooveCluster(path, timeout=20) as clients:
        shop = clients.put_learnings([learning(f"project:{SHOP}", 1, description="retry the flaky checkout")]).ids[0]
        mine = clients.put_learnings([learning("global", 2, description="retry flaky checkout steps")]).ids[0]
    task = ("--task", "retry flaky checkout", "--seed", "1")  # a draw that takes two learnings
    injected = run_groove("inject", "--project", SHOP, *task, "--json", env=env)
    assert injected.returncode == 0, injected.stderr
    reply = json.loads(injected.stdout)
    assert {x["learning"]["id"] for x in reply["learnings"]} == {shop, mine}
    shown = run_groove("session", reply["injection_id"], "--json", env=env)
    assert [g["learning"]["usage"]["times_injected"] for g in json.loads(shown.stdout)["learnings"]] == [1, 1]
    ended = run_groove("session-end", reply["injection_id"], "--helpful", shop, "--success", "--json", env=env)
    assert ended.returncode == 0, ended.stderr
    assert json.loads(ended.stdout) == {"applied": 2, "ignored": 1, "rated_before": 0}
    rated = run_groove("outcome", shop, "contradicted", "--json", env=env)
    assert rated.returncode == 0, rated.stderr
    usage = json.loads(rated.stdout)["usage"]
    assert (usage["times_helpful"], usage["times_contradicted"], usage["times_injected"]) == (1, 1, 2)
    again = run_groove("session-end", reply["injection_id"], env=env)
    assert again.returncode == 1
    assert again.stderr.startswith("groove: error: conflict: ")
    assert len(again.stderr.splitlines()) == 1


def test_the_mcp_server_routes_its_learning_tools_over_the_cluster(
    cluster_map: tuple[Path, dict[str, RunningCoordinator]],
) -> None:
    path, _ = cluster_map
    bridge = Bridge("tcp://127.0.0.1:1", cluster=ClusterMap.load(path))  # the map's home, not this endpoint
    server = build(bridge)

    async def session() -> None:
        async with Client(server) as mcp:
            made = (await mcp.call_tool("record_learning", {
                "description": "retry the flaky checkout", "insight": "the payment stub is slow to start",
                "category": "tool_usage", "project": SHOP,
            })).structured_content  # fmt: skip
            assert made is not None
            # every word of the task matches it: always chosen (the best, fresh candidate is spared)
            started = await mcp.call_tool("start_session", {"project": SHOP, "task": "retry flaky checkout"})
            assert started.structured_content is not None
            given = [x["id"] for x in started.structured_content["learnings"]]
            assert made["id"] in given
            ended = await mcp.call_tool("end_session", {
                "injection_id": started.structured_content["injection_id"], "success": True, "helpful": [made["id"]],
            })  # fmt: skip
            assert ended.structured_content is not None
            assert ended.structured_content["applied"] == len(given)

    anyio.run(session)
    bridge.close()
    with GrooveCluster(path, timeout=20) as clients:
        (stored,) = clients.clients["b"].list_learnings(tier=f"project:{SHOP}").learnings  # b owns the shop
        assert (stored.usage.times_injected, stored.usage.times_helpful) == (1, 1)


def test_offers_too_big_for_one_request_are_cut_to_their_better_half(
    cluster_map: tuple[Path, dict[str, RunningCoordinator]],
) -> None:
    path, _ = cluster_map
    pattern = {"code": "x" * 60_000}  # 50 candidates of this size make an offer of ~3 MB; a request is 1 MiB
    batch = [learning(f"project:{SHOP}", i, pattern=pattern, confidence=0.5 + i / 200) for i in range(50)]
    with GrooveCluster(path, timeout=30) as clients:
        ids = [lid for i in range(0, 50, 10) for lid in clients.put_learnings(batch[i : i + 10]).ids]
        assert len(clients.clients["b"].inject_candidates([f"project:{SHOP}"], project=SHOP).candidates) == 50
        reply = clients.inject("big", project=SHOP, seed=3)
        assert reply.learnings
        # the most confident survive the cuts: the best candidates lead an offer
        assert {x.learning.id for x in reply.learnings} <= set(ids[-12:])


def test_the_session_hooks_inject_and_close_over_the_cluster(
    cluster_map: tuple[Path, dict[str, RunningCoordinator]], tmp_path: Path
) -> None:
    path, _ = cluster_map
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    tier = f"project:{repo}"
    owner = ClusterMap.load(path).owner(tier)
    assert owner != "a"  # hashed over b and c: not the home

    def hook(name: str, payload: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "GROOVE_CLUSTER": str(path), "GROOVE_STATE_DIR": str(tmp_path / "state")}
        argv = groove_argv("hook", name, "--timeout", "10")
        given = json.dumps({"session_id": "s-1", "cwd": str(repo / "src"), "hook_event_name": name, **payload})
        return subprocess.run(argv, input=given, capture_output=True, text=True, timeout=60, env=env, check=False)

    with GrooveCluster(path, timeout=20) as clients:
        # the most confident, and never injected: always chosen (the best candidate is spared the threshold)
        lid = clients.put_learnings([learning(tier, 1, description="retry the flaky checkout", confidence=0.9)]).ids[0]
        started = hook("SessionStart", {"source": "startup"})
        assert started.returncode == 0, started.stderr
        assert lid in json.loads(started.stdout)["hookSpecificOutput"]["additionalContext"]
        assert clients.clients[owner].get(lid).usage.times_injected == 1  # counted by its owner
        ended = hook("SessionEnd", {"reason": "prompt_input_exit"})
        assert (ended.returncode, ended.stdout, ended.stderr) == (0, "", "")
        usage = clients.clients[owner].get(lid).usage
        assert (usage.times_injected, usage.times_ignored) == (1, 1)  # closed: unrated, so ignored


def test_relations_deletes_and_maintenance_go_to_the_owners(
    cluster_map: tuple[Path, dict[str, RunningCoordinator]],
) -> None:
    path, _ = cluster_map
    env = {"GROOVE_CLUSTER": str(path)}
    with GrooveCluster(path, timeout=20) as clients:
        old, new, mine = clients.put_learnings(
            [learning(f"project:{SHOP}", 1), learning(f"project:{SHOP}", 2), learning("global", 3)]
        ).ids
        related = run_groove("relate", new, "supersedes", old, env=env)  # stored on b, which holds both
        assert related.returncode == 0, related.stderr
        assert [(r.from_id, r.tier) for r in clients.clients["b"].relations(old)] == [(new, f"project:{SHOP}")]
        listed = run_groove("relations", old, "--json", env=env)
        assert [r["from_id"] for r in json.loads(listed.stdout)] == [new]
        with pytest.raises(NotFound):
            clients.relate(str(uuid7()), "related_to", mine)
        ran = run_groove("maintain", "--json", env=env)
        assert ran.returncode == 0, ran.stderr
        assert {t["tier"] for t in json.loads(ran.stdout)["tiers"]} == {"user", f"project:{SHOP}"}  # a's and b's
        deleted = run_groove("delete", old, env=env)
        assert deleted.returncode == 0, deleted.stderr
        assert clients.clients["b"].relations(new) == []  # its relation went with it
        gone = run_groove("delete", old, env=env)
        assert gone.returncode == 1
        assert gone.stderr == f"groove: error: no learning {old}; nothing deleted\n"
