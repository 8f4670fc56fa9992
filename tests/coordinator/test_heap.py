"""The C heap's readings: what was freed is counted until a trim gives it back, then no longer."""

from __future__ import annotations

import sys

import pytest

from groove.coordinator.heap import give_back_memory, heap_free_bytes, heap_used_bytes


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's counters: Linux")
def test_freed_memory_is_counted_until_a_trim_gives_it_back() -> None:
    give_back_memory()
    before = heap_used_bytes()
    held = [bytearray(4000) for _ in range(20_000)]  # 80 MB from the C heap (Python's objects over 512 bytes)
    assert heap_used_bytes() - before > 60e6
    del held[::2]  # half freed, in holes the heap cannot return by shrinking alone
    assert heap_free_bytes() > 30e6
    give_back_memory()
    assert heap_free_bytes() < 1e6  # what is trimmed is no longer held, though glibc still lists it
    del held


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's counters: Linux")
def test_trimmed_pages_taken_again_and_freed_again_are_counted() -> None:
    holes = [bytearray(4000) for _ in range(20_000)]
    del holes[::2]  # 40 MB free in holes: after the trim, listed free but not resident
    give_back_memory()
    before = heap_used_bytes()
    held = [bytearray(4000) for _ in range(20_000)]  # takes those trimmed pages first: resident again
    assert heap_used_bytes() - before > 60e6
    del held[::2]
    assert heap_free_bytes() > 30e6  # held again, though the trim's free count listed them
    del held, holes
