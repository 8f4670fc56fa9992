"""Rows <-> learning ids for a vector index, in about 30 bytes an id instead of 170.

A Python list of id strings and a dict back to rows cost about 170 B an id (a 36-character str object, its list
slot, a dict entry and a boxed row): 170 MB at a million learnings, beside a graph of about 1 KB a learning. Ids
are uuids in their canonical text form (`protocol/ids.py`), so each row holds its id's 128 bits in a numpy
array, and the way back is a sorted array of their low 64 bits beside the rows holding them, searched by
bisection; the ids given rows since the last merge into it are in a small dict. Any other id (no caller writes
one today) keeps its string in a dict of its own.

A lookup is only trusted where the row it finds still holds that id's 128 bits, so entries left in the sorted
array by rows freed or reused since are skipped, never answered (and dropped at the next full sort).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from groove.coordinator.errors import DamagedIndex

_FIRST_ROWS = 1024
_GROWTH = 1.25  # the row array grows by a quarter when full: a doubling would hold up to twice what it needs
# The recent ids are merged into the sorted arrays once there are this many, or a 64th of the rows (whichever is
# more): a merge is one pass over the arrays, a few microseconds a recent id at a million rows.
_MERGE_AFTER = 1024
_NOT_UUID = bytes(16)  # the bits of a row that holds no uuid (the nil uuid is kept as another id)
_NO_DIGITS = "0" * 32  # what stands for an id that is no uuid in a batch's digits
_LOW = 0xFFFF_FFFF_FFFF_FFFF

Words = np.ndarray[Any, np.dtype[np.uint64]]


def uuid_bits(lids: Sequence[str]) -> tuple[Words, list[bool]]:
    """Each id's 128 bits as (high, low) rows, and whether it is a canonical lowercase uuid (the others' rows
    are 0s)."""
    digits = [lid.replace("-", "") for lid in lids]
    canonical = [_canonical(lid, hexes) for lid, hexes in zip(lids, digits, strict=True)]
    try:  # one call for the batch; fromhex also takes spaces between bytes: then it gives fewer than 16 each
        packed = bytes.fromhex(
            "".join(hexes if ok else _NO_DIGITS for hexes, ok in zip(digits, canonical, strict=True))
        )
    except ValueError:
        packed = b""
    if len(packed) != 16 * len(lids):  # one of them is not hex digits after all: each on its own
        packed = b"".join(_packed(hexes) if ok else _NOT_UUID for hexes, ok in zip(digits, canonical, strict=True))
    bits = np.frombuffer(packed, dtype=">u8").astype(np.uint64).reshape(-1, 2)
    canonical = [ok and bool(high or low) for ok, (high, low) in zip(canonical, bits.tolist(), strict=True)]
    return bits, canonical


def _packed(digits: str) -> bytes:
    try:
        packed = bytes.fromhex(digits)
    except ValueError:
        return _NOT_UUID
    return packed if len(packed) == 16 else _NOT_UUID


def _canonical(lid: str, digits: str) -> bool:
    """Whether `lid` has a canonical uuid's shape: 36 characters, its four dashes where they go, no upper case
    (`digits` is it without dashes; the caller checks that they are hex digits)."""
    return (
        len(lid) == 36 and lid[8] == lid[13] == lid[18] == lid[23] == "-" and len(digits) == 32 and lid == lid.lower()
    )


class IdMap:
    """Row -> id and id -> row for rows 0..len-1, some of them free (holding no id). Not thread-safe: the vector
    index's lock guards it."""

    def __init__(self) -> None:
        self._bits: Words = np.zeros((_FIRST_ROWS, 2), dtype=np.uint64)  # row -> its uuid's (high, low); 0s: none
        self._rows = 0  # rows in use, free ones included
        self._held = 0  # ids held
        self._sorted_low: Words = np.zeros(0, dtype=np.uint64)  # low bits of rows, as of the last merge
        self._sorted_rows: np.ndarray[Any, np.dtype[np.int32]] = np.zeros(0, dtype=np.int32)
        self._recent: dict[str, int] = {}  # uuids given a row since the last merge
        self._stale = 0  # sorted entries whose row no longer holds their id
        self._other: dict[str, int] = {}  # ids that are not canonical uuids -> row
        self._other_at: dict[int, str] = {}  # and back

    @property
    def rows(self) -> int:
        """Rows in use, free ones included (the next new row's number)."""
        return self._rows

    def __len__(self) -> int:
        return self._held

    def memory_bytes(self) -> int:
        """Its arrays, and its dicts at about 170 B an entry."""
        arrays = self._bits.nbytes + self._sorted_low.nbytes + self._sorted_rows.nbytes
        return arrays + 170 * (len(self._recent) + 2 * len(self._other))

    def row(self, lid: str) -> int | None:
        """The row holding this id, or None (`rows_of` for many: this one costs about 2 µs)."""
        row = self._recent.get(lid)
        if row is not None:
            return row
        digits = lid.replace("-", "")
        packed = _packed(digits) if _canonical(lid, digits) else _NOT_UUID  # as `uuid_bits` reads a batch
        if packed == _NOT_UUID:
            return self._other.get(lid)
        value = int.from_bytes(packed, "big")
        return self._scan(int(self._sorted_low.searchsorted(value & _LOW)), value >> 64, value & _LOW)

    def rows_of(self, lids: Sequence[str]) -> list[int | None]:
        """The row holding each of these ids, or None."""
        bits, canonical = uuid_bits(lids)
        found: list[int | None] = [None] * len(lids)
        sought = []
        for at, lid in enumerate(lids):
            if not canonical[at]:
                found[at] = self._other.get(lid)
            elif (row := self._recent.get(lid)) is not None:
                found[at] = row
            else:
                sought.append(at)
        keys = self._sorted_low
        if not sought or not len(keys):
            return found
        want = bits[sought]
        first = np.minimum(keys.searchsorted(want[:, 1]), len(keys) - 1)
        rows = self._sorted_rows[first]
        same_low = keys[first] == want[:, 1]
        held = same_low & (rows < self._rows) & (self._bits[rows] == want).all(axis=1)
        for at, row, hit, low_hit, (high, low), start in zip(
            sought, rows.tolist(), held.tolist(), same_low.tolist(), want.tolist(), first.tolist(), strict=True
        ):
            if hit:
                found[at] = row
            elif low_hit:  # rarely: a stale entry first, or another uuid with the same low bits
                found[at] = self._scan(start + 1, high, low)
        return found

    def _scan(self, start: int, high: int, low: int) -> int | None:
        """The row holding (high, low) among the sorted entries from `start` that share its low bits. The first
        is almost always it; others are stale entries (rows freed or reused since the merge) or a uuid sharing
        the low 64 bits."""
        keys = self._sorted_low
        while start < len(keys) and int(keys[start]) == low:
            row = int(self._sorted_rows[start])
            if row < self._rows and self._bits[row].tolist() == [high, low]:
                return row
            start += 1
        return None

    def __contains__(self, lid: object) -> bool:
        return isinstance(lid, str) and self.row(lid) is not None

    def id_at(self, row: int) -> str | None:
        """The id this row holds, or None for a free row."""
        return self.ids_at([row])[0]

    def ids_at(self, rows: Sequence[int]) -> list[str | None]:
        """The id each of these rows holds, or None for a free row."""
        hexes = self._bits.take(rows, axis=0).astype(">u8").tobytes().hex()  # one call: f-strings cost 2 µs an id
        found: list[str | None] = []
        for at, row in enumerate(rows):
            d = hexes[32 * at : 32 * at + 32]
            found.append(
                self._other_at.get(row) if d == _NO_DIGITS else f"{d[:8]}-{d[8:12]}-{d[12:16]}-{d[16:20]}-{d[20:]}"
            )
        return found

    def free_rows(self) -> list[int]:
        """The rows in use that hold no id."""
        free = np.flatnonzero(~self._bits[: self._rows].any(axis=1))
        return [int(row) for row in free if int(row) not in self._other_at]

    def put(self, row: int, lid: str) -> None:
        """Give `row` to `lid` (held in no row); `row` is free, or is `rows` (a new last row)."""
        self.put_many([row], [lid])

    def put_many(self, rows: Sequence[int], lids: Sequence[str]) -> None:
        """Give each of these rows to its id, in turn as `put` does."""
        if not rows:
            return
        end = max(self._rows, max(rows) + 1)
        if end > len(self._bits):
            grown = np.zeros((max(end, int(len(self._bits) * _GROWTH)), 2), dtype=np.uint64)
            grown[: self._rows] = self._bits[: self._rows]
            self._bits = grown
        self._rows = end
        self._held += len(rows)
        bits, canonical = uuid_bits(lids)
        self._bits[list(rows)] = bits
        for row, lid, is_uuid in zip(rows, lids, canonical, strict=True):
            if is_uuid:
                self._recent[lid] = row
            else:
                self._other[lid], self._other_at[row] = row, lid
        if len(self._recent) >= max(_MERGE_AFTER, self._rows // 64):
            self._merge()

    def free(self, row: int) -> str | None:
        """Take the id from `row` (which stays in use, free); the id it held, or None."""
        lid = self.id_at(row)
        if lid is None:
            return None
        self._held -= 1
        self._bits[row] = 0
        if self._other_at.pop(row, None) is not None:
            del self._other[lid]
        elif self._recent.pop(lid, None) is None:
            self._stale += 1  # its sorted entry stays until the next sort
        return lid

    def pop(self) -> None:
        """Drop the last row, which must be free."""
        assert self.id_at(self._rows - 1) is None
        self._rows -= 1

    def _merge(self) -> None:
        """Move the recent ids into the sorted arrays (one pass, about 10 ms at a million rows), or sort them
        all again (about 200 ms) once a quarter of their entries are stale."""
        if 4 * self._stale > len(self._sorted_low):
            self._rebuild()
            return
        rows = np.fromiter(self._recent.values(), dtype=np.int32, count=len(self._recent))
        low = self._bits[rows, 1]
        order = np.argsort(low)
        at = self._sorted_low.searchsorted(low[order])
        self._sorted_low = np.insert(self._sorted_low, at, low[order])
        self._sorted_rows = np.insert(self._sorted_rows, at, rows[order])
        self._recent = {}

    def _rebuild(self) -> None:
        held = np.flatnonzero(self._bits[: self._rows].any(axis=1))
        low = self._bits[held, 1]
        order = np.argsort(low, kind="stable")
        self._sorted_low, self._sorted_rows = low[order], held[order].astype(np.int32)
        self._recent, self._stale = {}, 0

    # --- saving and loading: the bits of every row, and the other ids as JSON ---------------------------

    def save(self, bits_file: Path, other_file: Path) -> None:
        np.save(bits_file, self._bits[: self._rows])
        other_file.write_text(json.dumps(sorted(self._other_at.items())))

    @classmethod
    def load(cls, bits_file: Path, other_file: Path) -> IdMap:
        """An id map as `save` wrote it; DamagedIndex if the files do not make one."""
        try:
            bits = np.load(bits_file)
        except ValueError as exc:  # not an array numpy wrote
            raise DamagedIndex(f"{bits_file} does not hold ids ({exc})") from exc
        if bits.dtype != np.uint64 or bits.ndim != 2 or bits.shape[1] != 2:
            raise DamagedIndex(f"{bits_file} does not hold ids")
        ids = cls()
        ids._bits = np.zeros((max(_FIRST_ROWS, len(bits)), 2), dtype=np.uint64)
        ids._bits[: len(bits)] = bits
        ids._rows = len(bits)
        try:
            others = [(int(row), str(lid)) for row, lid in json.loads(other_file.read_text())]
        except (ValueError, TypeError) as exc:  # not JSON, or not its pairs
            raise DamagedIndex(f"{other_file} does not hold ids ({exc})") from exc
        for row, lid in others:
            if not 0 <= row < ids._rows or ids._bits[row].any() or row in ids._other_at or lid in ids._other:
                raise DamagedIndex(f"{other_file} names a row or an id twice")
            ids._other[lid], ids._other_at[row] = row, lid
        ids._rebuild()
        low = ids._sorted_low
        if len(low) > 1 and bool((low[1:] == low[:-1]).any()) and _has_twice(ids._bits[: ids._rows]):
            raise DamagedIndex(f"{bits_file} names a learning twice")
        ids._held = len(ids._sorted_low) + len(ids._other)
        return ids


def _has_twice(bits: Words) -> bool:
    held = bits[bits.any(axis=1)]
    return len(np.unique(held, axis=0)) != len(held)
