"""Starting a coordinator process for the commands and harnesses that need one of their own."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from groove.swarm.coding import groove_argv

_START_TIMEOUT_S = 60.0
_START_POLL_S = 0.01  # a start takes ~0.4 s: polling every 50 ms added 25 ms to each on average


def start_coordinator(
    data_dir: Path,
    extra: list[str],
    env: dict[str, str] | None = None,
    log_file: Path | None = None,
    poll_s: float = _START_POLL_S,
) -> tuple[subprocess.Popen[bytes], str]:
    """Start `groove serve` on a free loopback port (unless `extra` binds elsewhere), with `env` over this
    process's environment; returns the process and its endpoint once it serves (its endpoint file checked
    every `poll_s`). Its log goes to `log_file`, by default DATA_DIR/coordinator.log (the fault tests keep it
    off the disk they break)."""
    endpoint_file = data_dir / "endpoint"
    endpoint_file.unlink(missing_ok=True)
    log_file = log_file or data_dir / "coordinator.log"
    log = open(log_file, "ab")  # noqa: SIM115 - the child keeps writing to it
    argv = ["serve", "--data-dir", str(data_dir), "--bind", "tcp://127.0.0.1:0", "--endpoint-file", str(endpoint_file)]
    # its own session: a Ctrl-C at the terminal must not stop it before the agents that depend on it
    proc = subprocess.Popen(
        groove_argv(*argv, *extra),
        stdout=log,
        stderr=log,
        start_new_session=True,
        env={**os.environ, **env} if env is not None else None,
    )
    log.close()
    deadline = time.monotonic() + _START_TIMEOUT_S
    while not endpoint_file.exists():
        if proc.poll() is not None:
            tail = log_file.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"coordinator exited with status {proc.returncode}:\n{tail}")
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"coordinator did not start within {_START_TIMEOUT_S:.0f} s")
        time.sleep(poll_s)
    return proc, endpoint_file.read_text().strip()
