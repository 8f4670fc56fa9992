"""Tiers on disk: layout, migrations, lazy opening, locating learnings in unopened tiers."""

from __future__ import annotations

from pathlib import Path

import pytest
from pycozo.client import Client

from groove.coordinator.errors import ConfigError
from groove.coordinator.net.config import Settings, build
from groove.coordinator.store.relations import APPLIED
from groove.coordinator.store.schema import CURRENT_VERSION, MIGRATIONS, applied_version
from groove.coordinator.store.tiers import tier_dir
from groove.coordinator.store.tierset import TierSet
from groove.protocol.ids import uuid7
from tests.coordinator.harness import tier_at_version


def test_layout_is_stable_and_distinct(tmp_path: Path) -> None:
    assert tier_dir(tmp_path, "user") == tmp_path / "user"
    a = tier_dir(tmp_path, "project:/home/alex/repo")
    assert a.parent == tmp_path / "projects"
    assert a.name.startswith("repo-")
    assert tier_dir(tmp_path, "project:/srv/repo") != a
    assert tier_dir(tmp_path, "enterprise:acme") == tmp_path / "enterprises" / "acme"


def test_migrations_run_once(tmp_path: Path) -> None:
    tiers = TierSet(tmp_path)
    user = tiers.open_user()
    assert user.migrated == [m.version for m in MIGRATIONS]
    assert applied_version(user.db) == CURRENT_VERSION
    tiers.close()
    again = TierSet(tmp_path)
    assert again.open_user().migrated == []
    again.close()


def test_a_tier_is_snapshotted_before_it_is_migrated_and_keeps_its_rows(tmp_path: Path) -> None:
    tiers = TierSet(tmp_path)
    user = tiers.open_user()
    assert not list(user.path.glob("pre-migration-*"))  # a new tier has nothing to lose
    # take the tier back to schema v5: applied_requests without the body digest, holding one applied request
    v5 = "request_id: String => op: String, reply_json: String, applied_at: Int"
    row = "[['r1', 'learning.put', '{}', 1]]"
    user.run(f"?[request_id, op, reply_json, applied_at] <- {row} :replace {APPLIED.name} {{{v5}}}")
    later = [m.version for m in MIGRATIONS[5:]]
    user.run("?[version] <- $v :rm schema_version {version}", {"v": [[v] for v in later]})
    tiers.close()

    reopened = TierSet(tmp_path)
    tier = reopened.open_user()
    assert tier.migrated == later == list(range(6, CURRENT_VERSION + 1))
    assert tier.replies(["r1"]) == {"r1": ("learning.put", "", {})}  # kept, with no digest to compare
    (snapshot,) = tier.path.glob("pre-migration-v5-*.cozo")
    reopened.close()
    old = Client("sqlite", str(snapshot), dataframe=False)
    assert old.run("?[max(v)] := *schema_version{version: v}")["rows"] == [[5]]
    assert "digest" not in {row[0] for row in old.run(f"::columns {APPLIED.name}")["rows"]}
    old.close()


def test_project_tiers_open_lazily_and_are_found_after_restart(tmp_path: Path) -> None:
    tiers = TierSet(tmp_path)
    tiers.open_user()
    project = tiers.get("project:/srv/api", create=True)
    assert project is not None
    lid = uuid7()
    project.run(
        "?[id, scope, category, description, pattern_json, insight, confidence, created_at, updated_at, "
        "source_type, source_json] <- [[$id, 'project:/srv/api', 'solution', 'd', 'null', 'i', 0.5, 1, 1, "
        "'user_created', '{}']] :put learning {id => scope, category, description, pattern_json, insight, "
        "confidence, created_at, updated_at, source_type, source_json}",
        {"id": lid},
    )
    tiers.close()
    restarted = TierSet(tmp_path)
    restarted.open_user()
    assert [t.name for t in restarted.opened()] == ["user"]
    assert restarted.on_disk() == ["user", "project:/srv/api"]
    assert restarted.get("project:/elsewhere", create=False) is None
    found = restarted.locate([lid])
    assert found[lid].name == "project:/srv/api"
    assert found[lid].learnings == 1
    restarted.close()


def test_settings_reject_unknown_keys_and_bad_values(tmp_path: Path) -> None:
    config = tmp_path / "groove.toml"
    config.write_text('bind = "tcp://127.0.0.1:7000"\nmax_batch = 8\n')
    settings = build({"max_batch": 16, "bind": None}, config)
    assert (settings.bind, settings.max_batch) == ("tcp://127.0.0.1:7000", 16)
    config.write_text("max_bacth = 8\n")
    with pytest.raises(ConfigError, match="unknown key"):
        build({}, config)
    with pytest.raises(ConfigError, match="max_batch"):
        build({"max_batch": 0}, None)
    assert Settings().bind == "tcp://127.0.0.1:5555"


def test_an_interrupted_migration_completes_on_the_next_open(tmp_path: Path) -> None:
    from pycozo.client import Client

    from groove.coordinator.store.schema import ensure_schema

    db = Client("rocksdb", str(tmp_path / "db"), dataframe=False)
    first = MIGRATIONS[0]
    for step in first.steps[:3]:  # a crash after three steps, before the version was recorded
        db.run(step.script)
    assert applied_version(db) == 0
    assert ensure_schema(db, now=5) == [m.version for m in MIGRATIONS]
    assert applied_version(db) == CURRENT_VERSION
    relations = {row[0] for row in db.run("::relations")["rows"]}
    assert {s.name for s in first.steps if ":" not in s.name} <= relations
    assert db.run("?[v, at] := *schema_version{version: v, applied_at: at}")["rows"] == [
        [m.version, 5] for m in MIGRATIONS
    ]
    assert ensure_schema(db) == []
    db.close()


def test_the_content_hash_migration_backfills_stored_learnings(tmp_path: Path) -> None:
    from groove.coordinator.store.records import content_hash
    from groove.coordinator.store.schema import ensure_schema

    db = tier_at_version(tmp_path / "db", 2)
    db.run(
        "?[id, scope, category, description, pattern_json, insight, confidence, created_at, updated_at, source_type, "
        "source_json] <- [['a', 'global', 'solution', 'Use Result types', '{}', 'errors are values', 0.5, 1, 1, "
        "'user_created', '{}']] :put learning {id => scope, category, description, pattern_json, insight, confidence, "
        "created_at, updated_at, source_type, source_json}"
    )
    assert ensure_schema(db, now=5) == [m.version for m in MIGRATIONS[2:]]
    rows = db.run("?[id, scope, hash] := *learning_hashes{learning_id: id, scope, hash}")["rows"]
    assert rows == [["a", "global", content_hash("use result  TYPES", "Errors are values")]]
    db.close()
