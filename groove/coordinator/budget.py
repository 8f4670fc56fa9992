"""The coordinator's memory budget (`--memory-mb`): what each bounded part may hold, derived from one figure.

groove is left running on laptops beside the agents, and on servers for weeks, so what it holds must follow a
budget, not the number of projects it has seen or the hours it has run. The parts that grow with use are given
shares of the budget; the data itself (each learning's vector and keyword entries) is not capped, and `stats`
reports it beside them (`memory` in PROTOCOL.md):

| part | share | sized as |
|---|---|---|
| open tiers' RocksDB | 40 % | tiers past it are released, least recently used first (`store/idle.py`) |
| row cache | 10 % | rows of about `ROW_BYTES` |
| reply cache | 5 % | replies of about `REPLY_BYTES` |
| outcome votes | 10 % | past tasks' vectors, `VOTE_BYTES` each, over `VOTE_TIERS` tiers |

The per-entry sizes are Python's, measured on CPython 3.11 with tracemalloc over 10,000 entries of the synthetic
corpus (`tests/coordinator/test_budget.py` holds them to within a factor of two).
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MB = 768  # a laptop's share: the coordinator beside an embedding worker (about 190 MB) and the agents
ROW_BYTES = 1_000  # a cached joined learning row (908 B measured over the corpus)
REPLY_BYTES = 450  # a cached write reply: request id, op, digest, msgpack payload (449 B measured)
VOTE_BYTES = 1_850  # a past task's vector (384 float32, as stored) and its map entry (1,843 B measured)
VOTE_TIERS = 8  # the votes' share is split as if this many tiers were open: each gets the same cap
MB = 1024 * 1024


@dataclass(frozen=True)
class Budget:
    """Shares of `total_mb` for each bounded part."""

    total_mb: int = DEFAULT_MB

    @property
    def tiers_mb(self) -> float:
        return 0.40 * self.total_mb

    def row_cache(self) -> int:
        return int(0.10 * self.total_mb * MB / ROW_BYTES)

    def reply_cache(self) -> int:
        return int(0.05 * self.total_mb * MB / REPLY_BYTES)

    def votes_per_tier(self) -> int:
        return max(100, int(0.10 * self.total_mb * MB / VOTE_BYTES / VOTE_TIERS))
