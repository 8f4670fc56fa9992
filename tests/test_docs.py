"""The documentation site builds with --strict (every link, anchor and included file checked), its CLI
reference has every verb, `make docs` serves it as the README says, the README stays short, and the Getting started
page shows only tested blocks."""

from __future__ import annotations

import html
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from groove.cli.main import VERBS
from tests.helpers import README, ROOT, example, wait_for

_TESTED = ("first-learning", "sh"), ("realswarm", "sh"), ("realswarm-plan", "yaml")


def test_the_site_builds_strictly_with_a_cli_reference_of_every_verb(tmp_path: Path) -> None:
    site = tmp_path / "site"
    built = subprocess.run(
        # the console script, as `make docs` runs it: `python -m` would put the root on sys.path, where `cli`
        # imports as a top-level module the installed package does not have
        [str(Path(sys.executable).parent / "mkdocs"), "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env=os.environ | {"NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    assert "WARNING" not in built.stderr, built.stderr[-3000:]
    reference = (site / "cli" / "index.html").read_text()
    headings = {name.strip() for name in re.findall(r'<h3 id="[^"]+">([^<]+)<', reference)}
    assert set(VERBS) <= headings, sorted(set(VERBS) - headings)
    # the Getting started page's blocks are the README's tested examples, included, not copied
    page = html.unescape(re.sub(r"<[^>]+>", "", (site / "getting-started" / "index.html").read_text()))
    blocks = re.findall(r"<pre", (site / "getting-started" / "index.html").read_text())
    assert len(blocks) == len(_TESTED)
    for name, language in _TESTED:
        first = example(name, language).splitlines()[0]
        assert first in page, name


def test_the_readme_is_read_in_five_minutes() -> None:
    assert len(README.read_text().splitlines()) <= 300


def test_make_docs_serves_the_site_as_the_readme_says(tmp_path: Path) -> None:
    with socket.socket() as s:  # not 8000: tests run side by side
        s.bind(("127.0.0.1", 0))
        addr = f"127.0.0.1:{s.getsockname()[1]}"
    assert "`make docs` serves the documentation site at http://127.0.0.1:8000" in README.read_text()
    served = subprocess.Popen(
        ["make", "--no-print-directory", "docs", f"DOCS_ADDR={addr}"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # make, mkdocs and its server: stopped together
    )
    try:
        page = wait_for(lambda: _page(f"http://{addr}/cli/"), "the site served", timeout=120, every=0.5)
        assert page is not None
        assert all(f">{verb}<" in page for verb in ("serve", "learn", "search", "ui"))
    finally:
        os.killpg(served.pid, signal.SIGTERM)
        _, err = served.communicate(timeout=30)
    assert b"Traceback" not in err, err.decode()[-3000:]


def _page(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return str(reply.read().decode())
    except OSError:
        return None
