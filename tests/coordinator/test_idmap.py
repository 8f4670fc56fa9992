"""The vector index's id map: a row and its id both ways, as a list and a dict would give them, across rebuilds of
its sorted part, free rows reused, the last row moved, and a save and load; other ids than uuids kept as text."""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from groove.coordinator.errors import DamagedIndex
from groove.coordinator.search.idmap import IdMap, uuid_bits
from groove.protocol.ids import uuid7


def test_only_canonical_uuids_are_kept_as_bits() -> None:
    lid = uuid7()
    others = [lid.upper(), lid.replace("-", ""), "v1", "", "0" * 8 + "-0000-0000-0000-" + "0" * 12, lid[:-2] + " a"]
    bits, canonical = uuid_bits([lid, *others, lid[:-1] + "g"])
    assert (int(bits[0, 0]) << 64 | int(bits[0, 1])) == uuid.UUID(lid).int
    assert canonical == [True] + [False] * (len(others) + 1)
    assert not bits[1:].any()
    digits_only = "01234567-0123-7123-8123-012345678901"
    odd = ["0x" + lid[2:], "+" + lid[1:], lid[:9] + "_" + lid[10:], " " + lid[1:]]
    ids = IdMap()
    ids.put_many(list(range(len(odd) + 3)), [lid, digits_only, *others[:1], *odd])
    assert uuid_bits([digits_only])[1] == [True]
    for row, held in enumerate([lid, digits_only, others[0], *odd]):  # one at a time and all at once agree
        assert ids.row(held) == row
        assert ids.id_at(row) == held
    assert ids.rows_of([lid, digits_only, others[0], *odd, uuid7()]) == [*range(len(odd) + 3), None]


def _check(ids: IdMap, rows: Sequence[str | None]) -> None:
    """`ids` holds what the reference list holds: each row's id, and each id's row."""
    assert ids.rows == len(rows)
    assert len(ids) == sum(1 for lid in rows if lid is not None)
    for row, lid in enumerate(rows):
        assert ids.id_at(row) == lid
        if lid is not None:
            assert ids.row(lid) == row
    assert ids.free_rows() == [row for row, lid in enumerate(rows) if lid is None]


def test_it_answers_as_a_list_and_a_dict_through_puts_frees_moves_and_rebuilds(tmp_path: Path) -> None:
    rng = random.Random(7)
    ids, rows = IdMap(), list[str | None]()  # the reference: row -> id
    gone: list[str] = []
    for step in range(12_000):  # past the rebuild threshold (4,096 new rows) twice
        held = [row for row, lid in enumerate(rows) if lid is not None]
        free = [row for row, lid in enumerate(rows) if lid is None]
        roll = rng.random()
        if roll < 0.7 or not held:
            lid = uuid7() if rng.random() < 0.95 else f"note {step}\n"
            row = rng.choice(free) if free and rng.random() < 0.5 else len(rows)
            ids.put(row, lid)
            if row == len(rows):
                rows.append(lid)
            else:
                rows[row] = lid
        elif roll < 0.85:  # a freed row, as the graph frees them
            row = rng.choice(held)
            freed = rows[row]
            assert freed is not None
            assert ids.free(row) == freed
            rows[row] = None
            gone.append(freed)
        else:  # the exact regime's removal: the last row fills the freed one (or is the one freed)
            row, last = rng.choice(held), len(rows) - 1
            assert ids.free(row) == rows[row]
            gone.append(rows[row] or "")
            if row != last:
                moved = ids.free(last)
                assert moved == rows[last]
                if moved is not None:
                    ids.put(row, moved)
                rows[row] = moved
            rows.pop()
            ids.pop()
        if step % 1500 == 0:
            _check(ids, rows)
    _check(ids, rows)
    assert all(ids.row(lid) is None for lid in gone if lid not in rows)
    assert ids.memory_bytes() < 60 * ids.rows + 170 * 4096 + 2 * 170 * sum(1 for r in rows if r and "note" in r)

    ids.save(tmp_path / "ids.npy", tmp_path / "other.txt")
    loaded = IdMap.load(tmp_path / "ids.npy", tmp_path / "other.txt")
    _check(loaded, rows)
    fresh = uuid7()
    loaded.put(loaded.rows, fresh)
    assert loaded.row(fresh) == len(rows)


def test_saved_ids_that_name_a_learning_twice_or_a_row_twice_are_refused(tmp_path: Path) -> None:
    ids = IdMap()
    lid = uuid7()
    ids.put(0, lid)
    ids.put(1, "note")
    ids.save(tmp_path / "ids.npy", tmp_path / "other.txt")
    bits = np.load(tmp_path / "ids.npy")
    np.save(tmp_path / "twice.npy", np.vstack([bits, bits[:1]]))
    with pytest.raises(DamagedIndex):
        IdMap.load(tmp_path / "twice.npy", tmp_path / "other.txt")
    # a row that holds a uuid; a row twice; not pairs; not JSON
    for other in ('[[0, "note"]]', '[[1, "note"], [1, "again"]]', "[[1]]", '{"1": "note"}', "1 note"):
        (tmp_path / "other.txt").write_text(other)
        with pytest.raises(DamagedIndex):
            IdMap.load(tmp_path / "ids.npy", tmp_path / "other.txt")
