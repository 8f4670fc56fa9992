"""The memory benchmarks run as users run them, at small sizes: many projects against the busy few, and the soak."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import benchmark, drawn_as_committed


@pytest.mark.slow
def test_the_projects_benchmark_compares_many_touched_projects_with_the_busy_few() -> None:
    _, result = benchmark("projects", "--projects", "8", "--busy", "2", "--learnings", "5", "--busy-s", "7")
    assert result["ratio"] > 0
    many, few = result["many"], result["few"]
    assert many["projects"] == 8
    assert few["projects"] == 2
    assert many["released_tiers"] >= 1  # over the budget's share for tiers: the least recently used went
    assert many["search_after_release_ms"] > 0
    assert many["search_again_ms"] > 0
    assert set(many["memory_mb"]) >= {"interpreter", "rocksdb", "unaccounted"}


def test_the_soak_memory_chart_is_drawn_from_its_data_and_cannot_drift(tmp_path: Path) -> None:
    data = Path("docs/data/soak-2cpu-2026-11-28.json")
    (drawn,) = drawn_as_committed(data, tmp_path, 1)
    line = json.loads(data.read_text())
    assert len(line["samples"]) >= 100  # an hour, a sample every 30 s
    assert "RocksDB (estimated)" in drawn.read_text()


def test_the_scale_benchmark_fills_to_each_mark_and_finds_every_probe_after_each_restart_and_crash() -> None:
    _, result = benchmark("scale", "--marks", "300,600", "--threads", "2", "--crash-burst", "100")
    assert [m["learnings"] for m in result["marks"]] == [300, 600]
    for mark in result["marks"]:
        assert mark["rss_mb"] > 0
        assert mark["disk_mb"] > 0
        assert mark["memory_mb"]["vectors"] > 0
        assert 0 < mark["words_ms"]["p50_ms"] <= mark["words_ms"]["p99_ms"]
        assert 0 < mark["meaning_ms"]["p50_ms"] <= mark["meaning_ms"]["p99_ms"]
        for restart in (mark["restart"], mark["crash"]):
            assert restart["findable_s"] is not None  # every tier's newest learning, by its words and by its vector
            assert 0 < restart["serving_s"] <= restart["findable_s"] <= restart["settled_s"]


def test_the_scale_charts_are_drawn_from_their_data_and_cannot_drift(tmp_path: Path) -> None:
    data = Path("docs/data/scale-2cpu-2026-12-02.json")
    drawn_as_committed(data, tmp_path, 2)
    line = json.loads(data.read_text())
    memory = (tmp_path / "scale-2cpu-2026-12-02-memory.svg").read_text()
    assert f"{line['marks'][-1]['rss_mb']:,.0f}" in memory


@pytest.mark.parametrize("name", ["scale-2cpu-2026-12-02-crash", "scale-2cpu-2026-12-03-waiting"])
def test_a_scale_run_that_crashed_draws_its_start_times_too(tmp_path: Path, name: str) -> None:
    data = Path(f"docs/data/{name}.json")
    drawn_as_committed(data, tmp_path, 3)
    line = json.loads(data.read_text())
    starts = (tmp_path / f"{name}-restart.svg").read_text()
    assert f">{line['marks'][-1]['crash']['findable_s']:.1f}<" in starts
