"""The limits benchmark's own parts: the raw storage figure stores what it claims, and the ratios."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import limits, storage


def test_the_storage_limit_commits_every_row_a_learning_write_stores_both_ways() -> None:
    # commit_rate raises unless every learning row and its by_hash index entry were stored
    (result,) = storage.measure(writes=512, batches=(16,))
    assert result["batch"] == 16
    assert result["script_per_s"] > 0
    assert result["import_per_s"] > 0


def test_the_rows_prepared_are_those_the_writer_commits(tmp_path: Path) -> None:
    prepared = storage.prepare(tmp_path, batch=4, writes=8)
    assert len(prepared) == 2
    text, params = prepared[0]
    assert set(params) == {"hashes", "learning", "usage", "applied"}
    assert ":insert applied_requests" in text  # a request id seen before fails the transaction
    assert len(params["applied"]) == 4


def test_ratios_divide_groove_by_every_other_figure() -> None:
    found = limits.ratios({"groove": 5000.0, "storage": 20000.0, "echo": 10000.0, "sqlite": 0.0})
    assert found == {"groove/storage": 0.25, "groove/echo": 0.5}
    with pytest.raises(KeyError):
        limits.ratios({"storage": 1.0})
