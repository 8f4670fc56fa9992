"""Relations declared once: the schema the migrations make is the declarations', and rows round-trip to the wire."""

from __future__ import annotations

from pathlib import Path

from pycozo.client import Client

from groove.coordinator.store.records import UsageRow, learning_row, learning_wire
from groove.coordinator.store.relations import ALL, ARCHIVED, JOINED_COLS, LEARNING, RELATIONS, REVIEWS, USAGE
from groove.coordinator.store.schema import ensure_schema
from groove.protocol.models import LearningIn, Usage


def test_the_migrations_make_every_declared_relation_with_its_columns_and_indexes(tmp_path: Path) -> None:
    db = Client("rocksdb", str(tmp_path / "db"), dataframe=False)
    try:
        ensure_schema(db, now=1)
        for relation in ALL:
            columns = db.run(f"::columns {relation.name}")["rows"]
            assert [(c[0], c[1]) for c in columns] == [(name, name in relation.keys) for name in relation.cols]
            indexes = {row[0] for row in db.run(f"::indices {relation.name}")["rows"]}
            assert indexes == set(relation.indexes)
    finally:
        db.close()


def test_scripts_are_derived_from_the_columns() -> None:
    assert RELATIONS.keys == ("from_id", "relation_type", "to_id")
    assert RELATIONS.values == ("weight", "created_at")
    assert RELATIONS.put("r") == (
        "{?[from_id, relation_type, to_id, weight, created_at] <- $r "
        ":put learning_relations {from_id, relation_type, to_id => weight, created_at}}"
    )
    assert (
        RELATIONS.rm("g")
        == "{?[from_id, relation_type, to_id] <- $g :rm learning_relations {from_id, relation_type, to_id}}"
    )
    assert (
        USAGE.update("u", ("last_used",))
        == "{?[learning_id, last_used] <- $u :update usage_stats {learning_id => last_used}}"
    )
    # a key lookup binds the key before the pattern, so CozoDB seeks instead of walking the relation
    assert ARCHIVED.by_key("id") == (
        "?[learning_id, archived_at, reason] := learning_id = $id, *archived{learning_id, archived_at, reason}"
    )


def test_a_learning_round_trips_between_its_row_and_the_wire() -> None:
    item = LearningIn(
        scope="project:/srv/api",
        category="tool_usage",
        description="pytest hangs",
        insight="run with --timeout 30",
        pattern={"cmd": ["pytest", "--timeout", "30"]},
        confidence=0.7,
        source={"type": "transcript", "session": "s-1"},
    )
    row = learning_row(item, "01a20106-4f19-721d-8316-0a1ad6eb12ba", 0.7, 10, 20)
    assert row[LEARNING.at["source_type"]] == "transcript"
    joined = row + UsageRow.prior(0.7).row("x")[1:]
    assert len(joined) == len(JOINED_COLS)
    wire = learning_wire(joined, "project:/srv/api")
    assert wire["pattern"] == {"cmd": ["pytest", "--timeout", "30"]}
    assert wire["source"] == {"type": "transcript", "session": "s-1"}
    assert "source_type" not in wire
    assert "pattern_json" not in wire
    assert (wire["tier"], wire["created_at"], wire["updated_at"]) == ("project:/srv/api", 10, 20)
    assert wire["usage"]["confidence_alpha"] == 2 * 0.7
    assert LEARNING.row(wire) == row


def test_json_columns_take_their_wire_names() -> None:
    review = {c: None for c in REVIEWS.cols if not c.endswith("_json")} | {"learning": {"id": "x"}, "flags": []}
    row = REVIEWS.row(review)
    assert REVIEWS.wire(row) == review


def test_usage_on_the_wire_is_the_stored_usage() -> None:
    # protocol/ knows nothing of storage, so the wire model restates the columns; they must stay the same
    assert tuple(Usage.model_fields) == USAGE.values
