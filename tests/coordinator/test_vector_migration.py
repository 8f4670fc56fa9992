"""Migration 13: vectors stored by CozoDB's vector type become bytes, every one of them, however it was stopped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pycozo.client import Client

from groove.coordinator.store.records import blob_vectors, vector_blob
from groove.coordinator.store.relations import EMBEDDINGS, NOTE_EMBEDDINGS
from groove.coordinator.store.schema import CURRENT_VERSION, applied_version, ensure_schema
from groove.coordinator.store.tierset import TierSet
from groove.protocol import constants as C
from tests.coordinator.harness import tier_at_version

VECTORS = 7  # more than one page of the copy
OLD = "<F32;384>"


@pytest.fixture
def v12(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A tier as a coordinator of schema version 12 left it: vectors of learnings and notes in the old type."""
    monkeypatch.setattr("groove.coordinator.store.schema._REBUILD_PAGE", 3)
    db = tier_at_version(tmp_path / "db", 12)
    vectors = np.random.default_rng(1).normal(size=(VECTORS, C.EMBEDDING_DIM)).astype(np.float32)
    rows = [[f"l{i}", v.tolist()] for i, v in enumerate(vectors)]
    db.run(f"?[learning_id, embedding] <- $rows :put {EMBEDDINGS.name} {{learning_id => embedding}}", {"rows": rows})
    db.run(f"?[note_id, embedding] <- $rows :put {NOTE_EMBEDDINGS.name} {{note_id => embedding}}", {"rows": rows[:1]})
    yield db, vectors
    db.close()


def column_type(db: Client, relation: str) -> str:
    return str(next(row[3] for row in db.run(f"::columns {relation}")["rows"] if row[0] == "embedding"))


def stored(db: Client, relation: str) -> dict[str, bytes]:
    key = "learning_id" if relation == EMBEDDINGS.name else "note_id"
    return dict(db.run(f"?[k, v] := *{relation}{{{key}: k, embedding: v}}")["rows"])


def assert_migrated(db: Client, vectors: np.ndarray) -> None:
    assert applied_version(db) == CURRENT_VERSION
    assert column_type(db, EMBEDDINGS.name) == column_type(db, NOTE_EMBEDDINGS.name) == "Bytes"
    learnings = stored(db, EMBEDDINGS.name)
    assert sorted(learnings) == [f"l{i}" for i in range(VECTORS)]
    assert np.array_equal(blob_vectors([learnings[f"l{i}"] for i in range(VECTORS)]), vectors)  # bit for bit
    assert stored(db, NOTE_EMBEDDINGS.name) == {"l0": vector_blob(vectors[0])}
    assert not {row[0] for row in db.run("::relations")["rows"]} & {f"{EMBEDDINGS.name}_as_bytes"}


def test_a_tier_of_version_12_gets_its_vectors_as_bytes(v12: Any) -> None:
    db, vectors = v12
    assert column_type(db, EMBEDDINGS.name) == OLD
    assert ensure_schema(db, now=5) == list(range(13, CURRENT_VERSION + 1))
    assert_migrated(db, vectors)
    assert ensure_schema(db) == []


def test_a_copy_stopped_half_way_is_made_again(v12: Any) -> None:
    db, vectors = v12
    copy = f"{EMBEDDINGS.name}_as_bytes"
    db.run(f":create {copy} {{{EMBEDDINGS.columns}}}")
    db.run(f"?[learning_id, embedding] <- [['l0', $b]] :put {copy} {{learning_id => embedding}}", {"b": b"torn"})
    assert ensure_schema(db, now=5) == list(range(13, CURRENT_VERSION + 1))
    assert_migrated(db, vectors)


def test_a_copy_made_but_not_yet_in_place_is_put_in_place(v12: Any) -> None:
    db, vectors = v12
    copy = f"{EMBEDDINGS.name}_as_bytes"
    db.run(f":create {copy} {{{EMBEDDINGS.columns}}}")
    rows = [[f"l{i}", vector_blob(v)] for i, v in enumerate(vectors)]
    db.run(f"?[learning_id, embedding] <- $rows :put {copy} {{learning_id => embedding}}", {"rows": rows})
    db.run(f"::remove {EMBEDDINGS.name}")  # stopped between the old one's removal and the rename
    assert ensure_schema(db, now=5) == list(range(13, CURRENT_VERSION + 1))
    assert_migrated(db, vectors)


def test_a_new_tier_stores_bytes_and_loads_them_as_the_vectors_they_were(tmp_path: Path) -> None:
    tiers = TierSet(tmp_path)
    user = tiers.open_user()
    assert column_type(user.db, EMBEDDINGS.name) == "Bytes"
    vector = np.linspace(-1, 1, C.EMBEDDING_DIM, dtype=np.float32)
    user.run(EMBEDDINGS.put("v"), {"v": [["x", vector_blob(vector)]]})
    ((blob,),) = user.run("?[e] := *learning_embeddings{learning_id: 'x', embedding: e}")
    assert len(blob) == 4 * C.EMBEDDING_DIM
    assert np.array_equal(blob_vectors([blob])[0], vector)
    tiers.close()
