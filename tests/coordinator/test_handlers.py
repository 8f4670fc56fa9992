"""The coordinator's half of the operation registry agrees with the wire half, and says so when it does not."""

from __future__ import annotations

import pytest

from groove.coordinator.net import handlers
from groove.coordinator.net.handlers import HANDLERS, Control, Prepared, Read, Write
from groove.coordinator.write import ops as writes
from groove.protocol import constants as C


def test_the_table_is_checked_when_imported_and_refuses_a_table_that_disagrees_with_the_wire(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    handlers._check()  # what the import ran: the table as it stands agrees with OPS
    broken = dict(HANDLERS)
    del broken[C.OP_SEARCH]
    monkeypatch.setattr(handlers, "HANDLERS", broken)
    with pytest.raises(TypeError, match=r"missing \['search'\]"):
        handlers._check()
    # a write served as a read, and a write served by another write's op
    monkeypatch.setattr(handlers, "HANDLERS", dict(HANDLERS) | {C.OP_MAINTAIN: HANDLERS[C.OP_STATS]})
    with pytest.raises(TypeError, match="maintain is a write on the wire"):
        handlers._check()
    monkeypatch.setattr(handlers, "HANDLERS", dict(HANDLERS) | {C.OP_MAINTAIN: Write(writes.DELETE)})
    with pytest.raises(TypeError, match=r"maintain is served by the write learning\.delete"):
        handlers._check()


def test_only_the_liveness_operations_skip_the_reader_threads_and_the_queue() -> None:
    assert {name for name, h in HANDLERS.items() if isinstance(h, Control)} == {C.OP_PING, C.OP_HELLO, C.OP_HEARTBEAT}
    # a backup or an export must see every tier at one moment: writes wait while it runs
    assert {name for name, h in HANDLERS.items() if isinstance(h, Read) and h.held} == {C.OP_BACKUP, C.OP_EXPORT}
    assert {name for name, h in HANDLERS.items() if isinstance(h, Prepared)} == {C.OP_INJECT_PREPARE, C.OP_IMPORT}
