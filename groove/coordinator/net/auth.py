"""Who may do what: CurveZMQ authentication of client keys and the role rules checked on every request.

With `--curve`, a ZAP handler admits only the public keys in the authorized-keys directory (every other
key fails the handshake and gets no service at all), and each request is checked against the role its
key file names. Without CURVE the coordinator listens on loopback only (unless `--insecure`), and every
local client is an admin.
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zmq

from groove.coordinator.errors import ConfigError
from groove.protocol import constants as C
from groove.protocol.keys import PUBLIC_SUFFIX, SECRET_SUFFIX, KeyFileError, generate_key_pair, read_key_file

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Principal:
    """An authenticated client: its key's name, role, the user id it writes as, and (curators) its orgs."""

    name: str
    role: C.Role
    user: str
    orgs: frozenset[str] = frozenset()

    @property
    def curates(self) -> frozenset[str] | None:
        """The organisations whose enterprise tiers this key's writes may change; None: any."""
        return None if self.role == C.ROLE_ADMIN else self.orgs


ADMIN = Principal("local", C.ROLE_ADMIN, "local")  # every client when CURVE is off (loopback only)


def load_authorized(directory: Path) -> dict[bytes, Principal]:
    """Every `*.key` file in `directory`, by Z85 public key; ConfigError names the first bad file."""
    if not directory.is_dir():
        raise ConfigError(f"--authorized-keys {directory}: not a directory")
    principals: dict[bytes, Principal] = {}
    for path in sorted(directory.glob(f"*{PUBLIC_SUFFIX}")):
        try:
            key = read_key_file(path)
        except KeyFileError as exc:
            raise ConfigError(str(exc)) from None
        name = path.name[: -len(PUBLIC_SUFFIX)]
        named = key.metadata.get("role", "")
        role = next((r for r in C.ROLES if r == named), None)
        if role is None:
            raise ConfigError(f"{path}: metadata role is {named!r}; expected one of {', '.join(C.ROLES)}")
        orgs = frozenset(o.strip() for o in key.metadata.get("orgs", "").split(",") if o.strip())
        if role == C.ROLE_CURATOR and not orgs:
            raise ConfigError(f'{path}: a curator key needs metadata orgs = "org1,org2"')
        if key.public in principals:
            raise ConfigError(f"{path}: the same public key as {principals[key.public].name}{PUBLIC_SUFFIX}")
        principals[key.public] = Principal(name, role, key.metadata.get("user", name), orgs)
    if not principals:
        raise ConfigError(f"--authorized-keys {directory}: no *{PUBLIC_SUFFIX} files, so no client could connect")
    return principals


def server_keys(path: Path) -> tuple[bytes, bytes]:
    """The server's key pair from its secret file, made (with the public file beside it) if missing."""
    if not path.exists():
        if not path.name.endswith(SECRET_SUFFIX):
            raise ConfigError(f"--curve-key {path}: a server key file's name ends in {SECRET_SUFFIX}")
        try:
            public_path, _ = generate_key_pair(path.parent, path.name[: -len(SECRET_SUFFIX)], {"role": "server"})
        except (KeyFileError, OSError) as exc:
            raise ConfigError(f"cannot make the server key {path}: {exc}") from None
        log.info("made a new server key pair; give clients %s", public_path)
    try:
        key = read_key_file(path)
    except KeyFileError as exc:
        raise ConfigError(str(exc)) from None
    if key.secret is None:
        raise ConfigError(f"--curve-key {path}: holds no secret key")
    return key.public, key.secret


class Gate:
    """The ZAP handler: admits authorized keys, counts refused handshakes."""

    def __init__(self, context: zmq.Context[Any], principals: dict[bytes, Principal]) -> None:
        self.principals = principals
        self.refused = 0
        # imported only with CURVE on: it loads asyncio, 25 ms of every coordinator's and front's start otherwise
        from zmq.auth.thread import ThreadAuthenticator  # noqa: PLC0415

        self._auth = ThreadAuthenticator(context, log=logging.getLogger("groove.coordinator.zap"))
        self._auth.start()
        self._auth.configure_curve_callback("*", credentials_provider=self)

    def callback(self, domain: str, key: bytes) -> bool:
        """Called by the ZAP thread for each CURVE handshake with the client's Z85 public key."""
        if key in self.principals:
            return True
        self.refused += 1
        log.warning("refused a CURVE handshake from unknown key %s", key.decode(errors="replace"))
        return False

    def principal(self, user_id: str) -> Principal | None:
        """The principal of an authenticated message's User-Id (its Z85 public key)."""
        return self.principals.get(user_id.encode())

    def stop(self) -> None:
        """Stop the ZAP thread."""
        self._auth.stop()


def is_loopback(endpoint: str) -> bool:
    """Whether a bind endpoint is reachable only from this host (ipc, inproc, or a loopback tcp address)."""
    transport, _, rest = endpoint.partition("://")
    if transport in ("ipc", "inproc"):
        return True
    if transport != "tcp":
        return False
    host = rest.rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # '*', an interface name or a host name: may be reachable from elsewhere
