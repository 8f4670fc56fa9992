"""The memory benchmarks run as users run them, at small sizes: many projects against the busy few, and the soak."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_benchmarks import benchmark


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
    _, result = benchmark("plots", str(data), "--out", str(tmp_path))
    (drawn,) = map(Path, result["written"])
    assert drawn.read_text() == (Path("docs/plots") / drawn.name).read_text()  # as committed
    line = json.loads(data.read_text())
    assert len(line["samples"]) >= 100  # an hour, a sample every 30 s
    assert "RocksDB (estimated)" in drawn.read_text()
