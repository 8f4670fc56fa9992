"""Many `groove` commands, each in a process of its own, without each paying for Python's start and the CLI's
imports again (0.6 CPU-seconds a command, most of them importing the client and the protocol's models).

A server process (`python -m tests.cliforks`) imports the CLI and every verb's module once, then forks a child
per command. The child runs it as the console script does (`groove.cli.entry.main` with the command's argv),
with its own stdout and stderr and its own exit status: a traceback, a second line or a wrong status shows as
it would from `groove` itself. For the tests that run a table of commands (tests/cli/test_wrong_inputs.py);
the other CLI tests spawn `groove` (tests.helpers.run_groove), which also proves that the console script
starts.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any, NoReturn


def run_many(
    commands: list[list[str]], parallel: int = 4, timeout: float = 60
) -> list[subprocess.CompletedProcess[str]]:
    """Run each `groove ARGS` of `commands`, `parallel` at a time; what each printed and its exit status, in
    order. A command still running after `timeout` seconds is killed (status -14)."""
    request = json.dumps({"commands": commands, "parallel": parallel, "timeout": timeout})
    served = subprocess.run(
        [sys.executable, "-m", "tests.cliforks"],
        input=request,
        capture_output=True,
        text=True,
        timeout=timeout * len(commands) / parallel + 60,
        check=True,
    )
    return [
        subprocess.CompletedProcess(["groove", *args], r["status"], r["stdout"], r["stderr"])
        for args, r in zip(commands, json.loads(served.stdout), strict=True)
    ]


def _child(args: list[str], out: Path, err: Path, timeout: float) -> NoReturn:
    """Run `groove ARGS` in this forked process, as the console script does, and exit with its status."""
    status = 1
    try:
        signal.alarm(max(1, int(timeout)))  # the default action of SIGALRM ends the process
        for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, out, os.O_WRONLY), (2, err, os.O_WRONLY)):
            opened = os.open(path, flags | (os.O_CREAT | os.O_TRUNC if fd else 0))
            os.dup2(opened, fd)
            os.close(opened)
        sys.argv = ["groove", *args]
        from groove.cli.entry import main

        main()
        status = 0
    except SystemExit as exc:  # as the interpreter treats it: None is 0, a message is printed and is 1
        if exc.code is None or isinstance(exc.code, int):
            status = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def _serve(commands: list[list[str]], parallel: int, timeout: float) -> list[dict[str, Any]]:
    """Fork a child per command, `parallel` at a time; each one's status and output, in order."""
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")  # as the console script sets it
    from groove.cli.main import VERBS

    for where in VERBS.values():
        importlib.import_module(where.partition(":")[0])
    results: list[dict[str, Any]] = [{} for _ in commands]
    running: dict[int, int] = {}
    with tempfile.TemporaryDirectory(prefix="groove-cliforks-") as scratch:
        files = [(Path(scratch) / f"{i}.out", Path(scratch) / f"{i}.err") for i in range(len(commands))]
        started = 0
        while started < len(commands) or running:
            while started < len(commands) and len(running) < parallel:
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    _child(commands[started], *files[started], timeout)
                running[pid] = started
                started += 1
            pid, wait_status = os.waitpid(-1, 0)
            done = running.pop(pid)
            out, err = files[done]
            results[done] = {
                "status": os.waitstatus_to_exitcode(wait_status),
                "stdout": out.read_text(errors="replace"),
                "stderr": err.read_text(errors="replace"),
            }
    return results


if __name__ == "__main__":
    asked = json.load(sys.stdin)
    json.dump(_serve(asked["commands"], asked["parallel"], asked["timeout"]), sys.stdout)
