"""House rules a reader relies on: no module over 500 lines."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).parents[1]
PACKAGES = ("protocol", "agents", "coordinator", "cli", "benchmarks", "tests")


def test_no_module_is_over_500_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if (n := len(path.read_text().splitlines())) > 500
    }
    assert long == {}
