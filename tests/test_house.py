"""House rules a reader relies on: no module over 500 lines, and one import path for every module."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parents[1]
PACKAGES = ("groove", "benchmarks", "tests", "buildtools")


def test_no_module_is_over_500_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if (n := len(path.read_text().splitlines())) > 500
    }
    assert long == {}


def test_every_module_has_one_import_path() -> None:
    # groove's sub-packages live only under groove/: a bare `import coordinator` finds nothing to load a second
    # copy from, and no code asks for one (`agents` is the OpenAI Agents SDK's package, never groove's client)
    subpackages = {path.name for path in (ROOT / "groove").iterdir() if (path / "__init__.py").exists()}
    assert not {name for name in subpackages if (ROOT / name).exists()}
    bare = []
    for package in (*PACKAGES, "examples"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                bare += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in subpackages - {"agents"}]
    assert bare == []


def test_the_top_level_package_exports_what_the_client_package_exports() -> None:
    # groove/__init__.py lists the names again rather than importing groove.client to derive them (the
    # coordinator's processes and the hook path never load the client): the two lists must stay one
    import groove
    import groove.client

    assert groove.__all__ == groove.client.__all__
    assert all(getattr(groove, name) is getattr(groove.client, name) for name in groove.__all__)
