"""Where the embedding pool's workers run: how many CPU workers of how many torch threads fit the cores, and
whether a GPU asked for is there (asked in a child process, so that the coordinator never imports torch).
"""

from __future__ import annotations

import os
import subprocess
import sys

from groove.coordinator.errors import CoordinatorError


def cpu_layout(cores: int) -> tuple[int, int]:
    """Workers and torch threads per worker for a CPU pool on `cores` cores: threads of 4 (fewer cores: all
    of them in one process), as many workers as fill the cores."""
    threads = max(1, min(4, cores))
    return max(1, cores // threads), threads


def check_gpu() -> None:
    """`--embed-device cuda`: CoordinatorError at once if torch sees no GPU. Asked in a child process, which
    imports torch so that the coordinator does not."""
    probe = "from groove.coordinator.search.embedder import resolve_device\nresolve_device('cuda')"
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    if found.returncode != 0:
        lines = found.stderr.strip().splitlines() or [f"the GPU probe exited with status {found.returncode}"]
        raise CoordinatorError(lines[-1].split(": ", 1)[-1])  # the exception's message, after its class name


def default_workers() -> tuple[int, int]:
    """The CPU pool for this machine's cores (workers, threads each)."""
    return cpu_layout(os.cpu_count() or 1)
