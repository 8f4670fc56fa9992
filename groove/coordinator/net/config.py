"""Coordinator settings: CLI option, then environment variable, then config file, then default.

The config file is TOML with the same keys as the options (underscores for dashes); an unknown key, a
value of the wrong type or one out of range stops the coordinator before it opens anything.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from groove.coordinator.budget import DEFAULT_MB, Budget
from groove.coordinator.errors import ConfigError
from groove.coordinator.net.auth import is_loopback
from groove.coordinator.wire.codec import describe
from groove.coordinator.write.batcher import MOST_WRITERS
from groove.coordinator.write.tiercommit import MOST_THREADS
from groove.protocol.cluster import ClusterMap
from groove.protocol.endpoints import check_endpoint

ENV_PREFIX = "GROOVE_"
Embedder = Literal["minilm", "none"]
EMBEDDERS = get_args(Embedder)
EmbedDevice = Literal["auto", "cpu", "cuda"]
EMBED_DEVICES = get_args(EmbedDevice)
Durability = Literal["process", "fsync"]
DURABILITIES = get_args(Durability)
LogLevel = Literal["debug", "info", "warning", "error"]
LOG_LEVELS = get_args(LogLevel)


def default_data_dir() -> Path:
    """The user's data directory: $XDG_DATA_HOME/groove, else ~/.local/share/groove."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "groove"


class Settings(BaseModel):
    """Everything `groove serve` can be told."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    data_dir: Path = Field(default_factory=default_data_dir)
    bind: str = "tcp://127.0.0.1:5555"
    max_batch: int = Field(256, ge=1, le=10_000)
    max_wait_ms: float = Field(0.0, ge=0.0, le=1000.0)
    queue_size: int = Field(5_000, ge=1, le=1_000_000)
    readers: int = Field(4, ge=1, le=64)
    # 1: a transaction behind the writer measured no faster end to end (performance-history.md): opt-in
    commit_threads: int = Field(1, ge=1, le=MOST_THREADS)
    # writer threads, each committing the tiers it was given; opt-in until a measurement keeps it (docs/performance-*)
    writers: int = Field(1, ge=1, le=MOST_WRITERS)
    # the front decodes and validates writes and builds plain puts: 1.22 x the writes/s on 2 cores in an A/B
    # (performance.md); off only for that A/B
    front_checks: bool = True
    # None: from the memory budget (budget.py), as row_cache
    reply_cache: int | None = Field(None, ge=0, le=10_000_000)
    peer_hwm: int = Field(1_000, ge=10, le=1_000_000)
    log_level: LogLevel = "info"
    embedder: Embedder = "minilm"
    embed_device: EmbedDevice = "auto"
    # the CPU embedding pool: 0 = from the cores (devices.cpu_layout); with GPUs, one worker per device
    embed_workers: int = Field(0, ge=0, le=256)
    embed_threads: int = Field(0, ge=0, le=256)
    exact_limit: int = Field(10_000, ge=0, le=10_000_000)
    row_cache: int | None = Field(None, ge=0, le=10_000_000)
    memory_mb: int = Field(DEFAULT_MB, ge=128, le=1_048_576)
    tier_idle_s: float = Field(300.0, ge=1.0, le=30 * 86400.0)
    maintain_every_s: float = Field(3600.0, ge=0.0, le=30 * 86400.0)
    # derived indexes checkpointed this often when few learnings changed (sooner when many did); 0: at a clean stop
    checkpoint_every_s: float = Field(300.0, ge=0.0, le=86400.0)
    durability: Durability = "process"
    curve: bool = False
    authorized_keys: Path | None = None
    curve_key: Path | None = None  # the server's secret key file; default <data_dir>/server.key_secret
    insecure: bool = False
    cluster: Path | None = None  # the cluster map: this coordinator writes only the tiers it owns
    cluster_name: str | None = None  # this coordinator's name in the map
    _map: ClusterMap | None = PrivateAttr(None)

    @field_validator("bind")
    @classmethod
    def _endpoint(cls, bind: str) -> str:
        return check_endpoint(bind, binding=True)

    @model_validator(mode="after")
    def _safe(self) -> Settings:
        if self.curve and self.authorized_keys is None:
            raise ValueError("--curve needs --authorized-keys DIR (the public keys of the clients it admits)")
        if not self.curve and self.authorized_keys is not None:
            raise ValueError("--authorized-keys only applies with --curve")
        if not self.curve and not self.insecure and not is_loopback(self.bind):
            raise ValueError(
                f"refusing to listen on {self.bind} without CURVE: anyone who can reach it could read and change "
                "every tier. Use --curve --authorized-keys DIR, bind a loopback address, or pass --insecure"
            )
        if (self.cluster is None) != (self.cluster_name is None):
            raise ValueError("--cluster FILE and --cluster-name NAME go together")
        if self.cluster is not None:
            cluster = ClusterMap.load(self.cluster)
            if self.cluster_name not in cluster.coordinators:
                raise ValueError(
                    f"--cluster-name {self.cluster_name!r} is not in {self.cluster} "
                    f"(it names {', '.join(sorted(cluster.coordinators))})"
                )
            self._map = cluster
        return self

    def owners(self) -> tuple[str, ClusterMap] | None:
        """This coordinator's name and the cluster map, when it is one of a cluster."""
        return None if self._map is None or self.cluster_name is None else (self.cluster_name, self._map)

    def budget(self) -> Budget:
        """The shares of `memory_mb` each bounded part may hold."""
        return Budget(self.memory_mb)

    def row_cache_rows(self) -> int:
        """Rows the row cache keeps: as set, or the budget's share."""
        return self.budget().row_cache() if self.row_cache is None else self.row_cache

    def reply_cache_size(self) -> int:
        """Replies the reply cache keeps: as set, or the budget's share."""
        return self.budget().reply_cache() if self.reply_cache is None else self.reply_cache

    def server_key_path(self) -> Path:
        """The server's secret key file."""
        return self.curve_key or self.data_dir / "server.key_secret"


def load_file(path: Path) -> dict[str, Any]:
    """Read a TOML config file; raises ConfigError for unreadable files and unknown keys."""
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    unknown = set(data) - set(Settings.model_fields)
    if unknown:
        raise ConfigError(
            f"config file {path}: unknown key(s) {', '.join(sorted(unknown))}; "
            f"known keys are {', '.join(Settings.model_fields)}"
        )
    return data


def build(explicit: dict[str, Any], config_file: Path | None) -> Settings:
    """Settings from explicitly given values (CLI or environment) over the file over the defaults."""
    values = load_file(config_file) if config_file is not None else {}
    values.update({k: v for k, v in explicit.items() if v is not None})
    try:
        return Settings.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(f"invalid setting: {describe(exc)}") from None
