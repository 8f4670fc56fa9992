"""The cluster map: which coordinator owns (writes) each tier, when tiers are partitioned over several.

One coordinator owns a tier; only it writes the tier, so single writer per tier, exactly once and acks after
commit hold as they do with one coordinator. The map is a TOML file that clients and coordinators load alike:

    home = "a"                    # the user tier and every enterprise tier
    spread = ["b", "c"]           # projects no prefix names: by a stable hash of the root over these
                                  # (default: every coordinator)

    [coordinators]                # name -> endpoint
    a = "tcp://10.0.0.1:5555"
    b = "tcp://10.0.0.2:5555"
    c = "tcp://10.0.0.3:5555"

    [projects]                    # a project root, and every root under it -> its coordinator
    "/srv/shop" = "b"

The longest matching prefix wins. The hash is SHA-256 of the normalised root, so every reader of one map
agrees on every tier's owner. A coordinator given the map (`groove serve --cluster FILE --name NAME`) refuses
a write to a tier it does not own (`wrong_coordinator`, naming the owner): a stale map cannot split one
tier's writes between two writers.
"""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from groove.protocol import constants as C
from groove.protocol.endpoints import check_endpoint
from groove.protocol.scopes import normalise_root

_NAME_RE = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
Name = Annotated[str, Field(pattern=_NAME_RE)]


def _root(value: str) -> str:
    return normalise_root(value, "project prefix")


class ClusterMapError(ValueError):
    """A cluster map that cannot be read or does not hold together; the message names the file and the fault."""


class ClusterMap(BaseModel):
    """Coordinators by name, and which one owns each tier."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    coordinators: dict[Name, Annotated[str, AfterValidator(check_endpoint)]] = Field(min_length=1)
    home: Name
    spread: list[Name] = Field(default_factory=list)
    projects: dict[Annotated[str, AfterValidator(_root)], Name] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _names_exist(self) -> ClusterMap:
        named = [("home", self.home)] + [("spread", n) for n in self.spread]
        named += [(f"projects.{root!r}", n) for root, n in self.projects.items()]
        for where, name in named:
            if name not in self.coordinators:
                raise ValueError(f"{where} names {name!r}, which is not under [coordinators]")
        if len(set(self.spread)) != len(self.spread):
            raise ValueError("spread names a coordinator twice")
        return self

    @classmethod
    def load(cls, path: Path) -> ClusterMap:
        """Read and check a map file; ClusterMapError says what is wrong, with the file's name."""
        try:
            data = tomllib.loads(path.read_text())
        except OSError as exc:
            raise ClusterMapError(f"cluster map {path}: {exc.strerror or exc}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ClusterMapError(f"cluster map {path}: not TOML ({exc})") from None
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "the map"
            raise ClusterMapError(f"cluster map {path}: {where}: {first['msg']}") from None

    def owner(self, tier: str) -> str:
        """The name of the coordinator that owns `tier` (a valid tier name)."""
        if not tier.startswith(C.TIER_PROJECT_PREFIX):
            return self.home  # the user tier and every enterprise tier
        root = tier[len(C.TIER_PROJECT_PREFIX) :]
        best = max((p for p in self.projects if _under(root, p)), key=len, default=None)
        if best is not None:
            return self.projects[best]
        spread = self.spread or sorted(self.coordinators)
        digest = hashlib.sha256(root.encode()).digest()
        return spread[int.from_bytes(digest[:8], "big") % len(spread)]

    def by_owner(self, tiers: list[str]) -> dict[str, list[str]]:
        """The tiers grouped by owner, in the order first seen."""
        grouped: dict[str, list[str]] = {}
        for tier in tiers:
            grouped.setdefault(self.owner(tier), []).append(tier)
        return grouped


def _under(root: str, prefix: str) -> bool:
    return root == prefix or root.startswith(prefix.rstrip("/") + "/")
