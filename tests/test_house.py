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


def test_the_top_level_package_exports_what_the_client_package_exports() -> None:
    # groove/__init__.py lists the names again rather than importing groove.agents to derive them (the
    # coordinator's processes and the hook path never load the client): the two lists must stay one
    import groove
    import groove.agents

    assert groove.__all__ == groove.agents.__all__
    assert all(getattr(groove, name) is getattr(groove.agents, name) for name in groove.__all__)
