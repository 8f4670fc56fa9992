"""CurveZMQ key files: making them, reading them, and the keys a client connects with.

A key pair is two files in the ZeroMQ certificate format (the one czmq's `zcert` and pyzmq's
`zmq.auth` write, so other tools can read them): `NAME.key` holds the public key and is handed out;
`NAME.key_secret` holds both keys and stays with its owner (mode 0600). Either file may carry a
`metadata` section; the coordinator reads a client's role from the public file in its authorized-keys
directory:

    metadata
        role = "agent"           # agent | curator | admin
        user = "alex"            # the id in the `user:<id>` scope this key may write (default: NAME)
        orgs = "acme,initech"    # a curator's organisations
    curve
        public-key = "<40 Z85 characters>"
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import zmq
from zmq.utils import z85

PUBLIC_SUFFIX = ".key"
SECRET_SUFFIX = ".key_secret"
_Z85_KEY_CHARS = 40
_LINE_RE = re.compile(r'^(?P<indent>\s*)(?P<name>[A-Za-z0-9_.-]+)\s*(=\s*"(?P<value>[^"]*)")?\s*$')
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]*$")


class KeyFileError(ValueError):
    """A key file that is missing, unreadable or not in the certificate format; the message names it."""


@dataclass(frozen=True)
class KeyFile:
    """What one key file holds: the public key, the secret key (secret files only) and the metadata."""

    path: Path
    public: bytes
    secret: bytes | None
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CurveClient:
    """The keys a client needs to talk to a coordinator running with `--curve`."""

    server_public: bytes
    public: bytes
    secret: bytes

    @classmethod
    def load(cls, server_key: str, client_key: str | Path) -> CurveClient:
        """From the server's public key (a `.key` file or its 40 Z85 characters) and the client's secret file."""
        mine = read_key_file(Path(client_key))
        if mine.secret is None:
            raise KeyFileError(f"{client_key}: holds no secret key; give the client's {SECRET_SUFFIX} file")
        return cls(server_public_key(server_key), mine.public, mine.secret)

    def write_secret(self, path: Path) -> Path:
        """Write the client's key pair as a `.key_secret` file (mode 0600) for a child process to load, as a
        worker hands its keys to its coding agent's hooks and MCP server; overwrites a previous copy."""
        path.unlink(missing_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(_render(self.public, self.secret, {}))
        return path

    def apply(self, sock: zmq.Socket[bytes]) -> None:
        """Make `sock` a CURVE client of the server; call before connecting."""
        sock.curve_serverkey = self.server_public
        sock.curve_publickey = self.public
        sock.curve_secretkey = self.secret


def server_public_key(value: str) -> bytes:
    """The server's public key from 40 Z85 characters or from the path of its `.key` file."""
    if len(value) == _Z85_KEY_CHARS and not Path(value).exists():
        return value.encode("ascii")
    return read_key_file(Path(value)).public


def _check_key(path: Path, what: str, value: str | None) -> bytes:
    if value is None or len(value) != _Z85_KEY_CHARS:
        raise KeyFileError(f"{path}: no {what} of {_Z85_KEY_CHARS} Z85 characters under 'curve'")
    try:
        z85.decode(value)
    except (ValueError, KeyError, IndexError, TypeError):
        raise KeyFileError(f"{path}: the {what} is not valid Z85") from None
    return value.encode("ascii")


def read_key_file(path: Path) -> KeyFile:
    """Parse a certificate file; raises KeyFileError saying what is wrong with it."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise KeyFileError(f"cannot read key file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise KeyFileError(f"{path}: not a text key file") from None
    sections: dict[str, dict[str, str]] = {}
    section: str | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):  # Z85 keys may hold '#': only whole-line comments
            continue
        match = _LINE_RE.match(line)
        if match is None:
            raise KeyFileError(f"{path}, line {number}: expected 'section' or 'name = \"value\"', got {raw.strip()!r}")
        if not match["indent"]:
            section = match["name"]
            sections.setdefault(section, {})
        elif section is None or match["value"] is None:
            raise KeyFileError(f"{path}, line {number}: a 'name = \"value\"' line must sit indented under a section")
        else:
            sections[section][match["name"]] = match["value"]
    curve = sections.get("curve", {})
    public = _check_key(path, "public-key", curve.get("public-key"))
    secret = _check_key(path, "secret-key", curve["secret-key"]) if "secret-key" in curve else None
    return KeyFile(path, public, secret, sections.get("metadata", {}))


def _render(public: bytes, secret: bytes | None, metadata: dict[str, str]) -> str:
    kind = "**Secret** Certificate" if secret else "Public Certificate"
    lines = [
        f"#   ****  Generated on {time.strftime('%Y-%m-%d %H:%M:%S')} by groove  ****",
        f"#   ZeroMQ CURVE {kind}",
    ]
    if secret:
        lines.append("#   DO NOT PROVIDE THIS FILE TO OTHER USERS nor change its permissions.")
    lines += ["", "metadata"]
    lines += [f'    {k} = "{v}"' for k, v in metadata.items()]
    lines += ["curve", f'    public-key = "{public.decode()}"']
    if secret:
        lines.append(f'    secret-key = "{secret.decode()}"')
    return "\n".join(lines) + "\n"


def generate_key_pair(directory: Path, name: str, metadata: dict[str, str]) -> tuple[Path, Path]:
    """Write NAME.key and NAME.key_secret (mode 0600) in `directory`; refuses to overwrite either."""
    if not _NAME_RE.match(name):
        raise KeyFileError(f"key name {name!r}: use letters, digits and . _ @ + -, starting with a letter or digit")
    for key, value in metadata.items():
        if '"' in value or "\n" in value or not _NAME_RE.match(key):
            raise KeyFileError(f"metadata {key}={value!r}: names are words and values may not hold quotes or newlines")
    public_path, secret_path = directory / f"{name}{PUBLIC_SUFFIX}", directory / f"{name}{SECRET_SUFFIX}"
    for path in (public_path, secret_path):
        if path.exists():
            raise KeyFileError(f"{path} exists already; remove it first or pick another name")
    directory.mkdir(parents=True, exist_ok=True)
    public, secret = zmq.curve_keypair()
    fd = os.open(secret_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(_render(public, secret, metadata))
    public_path.write_text(_render(public, None, metadata))
    return public_path, secret_path
