"""The README's "Your first learning" (the Getting started page includes it), run as written in a shell: its
five commands, with the coordinator on a port of its own and its data dir under a scratch TMPDIR."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

from tests.helpers import ROOT, example


def test_the_first_learning_runs_as_written(tmp_path: Path) -> None:
    with socket.socket() as s:  # not the default 5555: tests run side by side
        s.bind(("127.0.0.1", 0))
        endpoint = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    # the coordinator it starts in the background is stopped at the end, as a person's Ctrl-C would
    script = f"set -e\ntrap 'kill $(jobs -p) 2>/dev/null; wait' EXIT\n{example('first-learning', 'sh')}"
    env = os.environ | {"GROOVE_BIND": endpoint, "GROOVE_ENDPOINT": endpoint, "TMPDIR": str(tmp_path)}
    env |= {"GROOVE_EMBEDDER": "none"}  # by its words at once; by meaning is the semantic tests' part
    done = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    stored = next(line for line in lines if line.startswith("stored "))
    learning_id = stored.split()[1]
    found = [line for line in lines if line.endswith(learning_id) and "run them with --timeout 30" in line]
    assert found, done.stdout  # the search found it, by its words
    assert any(line.startswith(f"project:{ROOT} ") for line in lines), done.stdout  # stats: the project's tier
    assert (tmp_path / "groove-first").is_dir()
