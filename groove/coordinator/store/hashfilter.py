"""The content hashes a tier may hold, in memory: a superset of its `learning_hashes`, so the writer looks up
only the hashes that may be stored and skips the dedupe query for content it has certainly never seen.

Why: every `learning.put` asks whether its content is stored already, and that CozoDB lookup cost the writer
thread 14 % of its samples under load (py-spy, 32 x 16 on 2 vCPUs), a sixth of what it spends in CozoDB. Nearly
every answer is "no".

What is kept: the first 64 bits of each hash (a 256-bit hex digest), 8 bytes a learning in a sorted array plus
a set of those added since the array was last merged. Two different contents sharing 64 bits, a hash whose
learning was deleted since, only cost a lookup: the answer is always CozoDB's. What must hold is that every
hash stored is in here before a commit that could store it again: `add` is called as a transaction is
prepared, before it runs, and a tier loads its hashes when it opens (after its migrations).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import numpy.typing as npt

_MERGE_AT = 4096  # hashes added before they move into the sorted array (a merge copies the array)
_PREFIX = 16  # hex digits kept of each hash: 64 bits
HASHES_FILE = "hashes.npy"  # in a kept folder (`Tier.save_counts`)


def _key(content_hash: str) -> int:
    return int(content_hash[:_PREFIX], 16)


class HashFilter:
    """Which content hashes a tier may hold. Used by the writer thread alone."""

    def __init__(self, hashes: Iterable[str] = ()) -> None:
        self._sorted: npt.NDArray[np.uint64] = np.unique(np.fromiter(map(_key, hashes), dtype=np.uint64))
        self._recent: set[int] = set()

    def __len__(self) -> int:
        """64-bit keys held: a hash stored in several scopes once, one added again before a merge twice."""
        return len(self._sorted) + len(self._recent)

    def add(self, hashes: Iterable[str]) -> None:
        """Hashes a transaction about to run may store."""
        self._recent.update(map(_key, hashes))
        if len(self._recent) >= _MERGE_AT:
            self._sorted = self._merged()
            self._recent.clear()

    def frozen(self) -> HashFilter:
        """A copy that later `add`s leave as it is (for a checkpoint to save on another thread)."""
        copy = HashFilter()
        copy._sorted = self._merged() if self._recent else self._sorted  # never changed in place, only replaced
        return copy

    def save(self, folder: Path) -> None:
        """Write the keys held into `folder` (`load` reads them back)."""
        np.save(folder / HASHES_FILE, self._merged())

    @classmethod
    def load(cls, folder: Path) -> HashFilter:
        """The filter `save` wrote; ValueError if the file is not one (damaged, or not sorted unique keys)."""
        keys = np.load(folder / HASHES_FILE, allow_pickle=False)
        if keys.dtype != np.uint64 or keys.ndim != 1 or not bool(np.all(keys[1:] > keys[:-1])):
            raise ValueError(f"{folder / HASHES_FILE} does not hold sorted unique 64-bit keys")
        loaded = cls()
        loaded._sorted = keys
        return loaded

    def _merged(self) -> npt.NDArray[np.uint64]:
        if not self._recent:
            return self._sorted
        return np.union1d(self._sorted, np.fromiter(self._recent, dtype=np.uint64, count=len(self._recent)))

    def maybe(self, hashes: Iterable[str]) -> list[str]:
        """Those of these hashes the tier may hold: each one left out is certainly not stored."""
        asked = list(hashes)
        if not asked:
            return []
        keys = [_key(h) for h in asked]
        held = np.zeros(len(asked), dtype=bool)
        if len(self._sorted):
            wanted = np.asarray(keys, dtype=np.uint64)
            at = np.minimum(np.searchsorted(self._sorted, wanted), len(self._sorted) - 1)
            held = self._sorted[at] == wanted
        return [h for h, key, found in zip(asked, keys, held, strict=True) if found or key in self._recent]
