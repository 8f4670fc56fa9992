"""Backup while serving, restore into an empty data dir, export and import: the same memory comes back."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import pytest
import zmq

from groove.client import BadRequest, Conflict, GrooveClient
from groove.protocol.ids import uuid7
from tests.helpers import RunningCoordinator, learning, run_groove

Clients = Callable[..., GrooveClient]
Coordinators = Callable[..., RunningCoordinator]


def fill(client: GrooveClient) -> None:
    """Learnings in four tiers, relations, outcomes and an archived learning."""
    users = client.put_learnings([learning("global", i) for i in range(5)]).ids
    api = client.put_learnings([learning("project:/srv/api", i) for i in range(5)]).ids
    web = client.put_learnings([learning("project:/srv/web", i, confidence=0.05) for i in range(2)]).ids
    client.put_learnings([learning("global", 9)], tier="enterprise:acme")
    client.relate(api[1], "supersedes", api[0])
    client.relate(users[2], "related_to", users[3], weight=0.7)
    client.record_outcome([(users[0], "helpful"), (api[2], "contradicted"), (users[1], "ignored")])
    client.maintain(tiers=["project:/srv/web"])  # confidence 0.05: archived
    assert web


def snapshot(client: GrooveClient) -> dict[str, Any]:
    """Everything a client can read: every learning (usage included) and every relation."""
    learnings = {item.id: item.model_dump() for item in client.iter_learnings()}
    relations = sorted(
        (r.from_id, r.relation_type, r.to_id, r.weight, r.created_at, r.tier)
        for lid in learnings
        for r in client.relations(lid, direction="out")
    )
    return {"learnings": learnings, "relations": relations}


def exported(client: GrooveClient, path: Path) -> list[dict[str, Any]]:
    client.export(str(path))
    tiers: list[dict[str, Any]] = json.loads(path.read_text())["tiers"]
    return sorted(tiers, key=lambda t: str(t["tier"]))


def test_backup_then_restore_gives_the_same_memory(
    tmp_path: Path, coordinator_factory: Coordinators, client_factory: Clients
) -> None:
    original = coordinator_factory()
    client = client_factory(original.endpoint)
    fill(client)
    before = snapshot(client)
    before_export = exported(client, tmp_path / "before.json")
    assert any(item["archived"] for tier in before_export for item in tier["learnings"])

    reply = client.backup(str(tmp_path / "backup"))
    assert {t.tier for t in reply.tiers} == {"user", "project:/srv/api", "project:/srv/web", "enterprise:acme"}
    with pytest.raises(Conflict, match="not empty"):
        client.backup(str(tmp_path / "backup"))
    with pytest.raises(BadRequest, match="relative"):
        client.backup("relative/dir")

    occupied = run_groove("restore", str(tmp_path / "backup"), "--data-dir", str(original.data_dir))
    assert occupied.returncode == 2
    assert "already holds tiers" in occupied.stderr
    restored_dir = tmp_path / "restored"
    out = run_groove("restore", str(tmp_path / "backup"), "--data-dir", str(restored_dir))
    assert out.returncode == 0, out.stderr
    assert "[4/4]" in out.stdout
    restored = client_factory(coordinator_factory(data_dir=restored_dir).endpoint)
    assert snapshot(restored) == before
    assert exported(restored, tmp_path / "after.json") == before_export


# with two writers, a third tier's puts go to the second one and commit beside the first's: the backup holds both
@pytest.mark.parametrize("writers", ["1", "2"])
def test_a_backup_taken_under_writes_is_one_consistent_moment(
    tmp_path: Path, coordinator_factory: Coordinators, client_factory: Clients, writers: str
) -> None:
    running = coordinator_factory("--writers", writers)
    client = client_factory(running.endpoint)
    writer, beside = client_factory(running.endpoint), client_factory(running.endpoint)
    acked: list[str] = []
    acked_beside: list[str] = []
    stop = threading.Event()

    def write() -> None:
        n = 0
        while not stop.is_set():
            # two tiers per request: a torn snapshot would hold one half without the other
            ids = writer.put_learnings([learning("global", n), learning("project:/srv/api", n)]).ids
            acked.extend(ids)
            n += 1

    def write_beside() -> None:
        n = 0
        while not stop.is_set():
            acked_beside.extend(beside.put_learnings([learning("project:/srv/web", n)]).ids)
            n += 1

    threads = [threading.Thread(target=write), threading.Thread(target=write_beside)]
    for thread in threads:
        thread.start()
    try:
        while len(acked) < 200 or len(acked_beside) < 100:
            stop.wait(0.05)
        acked_before, beside_before = list(acked), list(acked_beside)
        reply = client.backup(str(tmp_path / "backup"))
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    counts = {t.tier: t.learnings for t in reply.tiers}
    assert counts["user"] == counts["project:/srv/api"]  # both halves of every request, or neither
    assert counts["user"] >= len(acked_before) // 2
    restored_dir = tmp_path / "restored"
    assert run_groove("restore", str(tmp_path / "backup"), "--data-dir", str(restored_dir)).returncode == 0
    restored = client_factory(coordinator_factory(data_dir=restored_dir).endpoint)
    ids = {item.id for item in restored.iter_learnings()}
    assert set(acked_before) | set(beside_before) <= ids <= set(acked) | set(acked_beside)
    assert client.stats().writers == int(writers)


def test_export_then_import_into_an_empty_data_dir_gives_the_same_learnings_and_relations(
    tmp_path: Path, coordinator_factory: Coordinators, client_factory: Clients
) -> None:
    source = client_factory(coordinator_factory().endpoint)
    fill(source)
    reply = source.export(str(tmp_path / "memory.json"))
    assert (reply.tiers, reply.learnings, reply.relations) == (4, 13, 2)

    target = client_factory(coordinator_factory().endpoint)
    counts = target.import_file(str(tmp_path / "memory.json"))
    assert (counts.learnings_imported, counts.learnings_skipped) == (13, 0)
    assert (counts.relations_imported, counts.relations_skipped) == (2, 0)
    assert snapshot(target) == snapshot(source)
    assert exported(target, tmp_path / "again.json") == exported(source, tmp_path / "first.json")

    again = target.import_file(str(tmp_path / "memory.json"))
    assert (again.learnings_imported, again.learnings_skipped, again.relations_imported) == (0, 13, 0)

    broken = json.loads((tmp_path / "memory.json").read_text())
    broken["tiers"][0]["learnings"][0]["scope"] = "nowhere"
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    before = snapshot(target)
    with pytest.raises(BadRequest, match="not a groove export"):
        target.import_file(str(tmp_path / "broken.json"))
    assert snapshot(target) == before


def test_export_and_import_from_the_cli(tmp_path: Path, coordinator_factory: Coordinators) -> None:
    source, target = coordinator_factory(), coordinator_factory()
    assert run_groove("--endpoint", source.endpoint, "learn", "use Result types in parsers").returncode == 0
    out = run_groove("--endpoint", source.endpoint, "export", str(tmp_path / "m.json"))
    assert "exported 1 learnings and 0 relations of 1 tiers" in out.stdout, out.stderr
    out = run_groove("--endpoint", target.endpoint, "import", str(tmp_path / "m.json"))
    assert "imported 1 learnings (0 skipped: id exists)" in out.stdout, out.stderr
    out = run_groove("--endpoint", target.endpoint, "backup", str(tmp_path / "b"))
    assert "backed up 1 tiers" in out.stdout, out.stderr


def test_an_import_resent_with_its_request_id_is_answered_once_also_after_a_crash(
    tmp_path: Path, coordinator_factory: Coordinators, client_factory: Clients
) -> None:
    source = client_factory(coordinator_factory().endpoint)
    fill(source)
    source.export(str(tmp_path / "memory.json"))
    target = coordinator_factory()
    request = msgpack.packb(
        {"v": 1, "id": uuid7(), "op": "import", "body": {"path": str(tmp_path / "memory.json")}}, use_bin_type=True
    )

    def send() -> dict[str, Any]:
        with zmq.Context() as context, context.socket(zmq.DEALER) as sock:
            sock.connect(target.endpoint)
            sock.send_multipart([b"", request])
            assert sock.poll(60_000), "no reply"
            reply: dict[str, Any] = msgpack.unpackb(sock.recv_multipart()[1], raw=False)
        assert reply["ok"], reply
        return reply

    first = send()
    assert first["body"]["learnings_imported"] == 13
    assert send() == first  # answered from the first attempt, nothing imported again
    target.kill()
    target.restart()
    assert send() == first  # from the reply stored with the import, in the same transactions
    assert snapshot(client_factory(target.endpoint)) == snapshot(source)
