"""The coordinator's half of the operation registry agrees with the wire half."""

from __future__ import annotations

from coordinator.net.handlers import HANDLERS, Control, Prepared, Read, Write
from protocol import constants as C
from protocol.ops import OPS


def test_every_operation_has_one_handler_whose_kind_matches_the_wire() -> None:
    assert set(HANDLERS) == set(OPS)
    for name, handler in HANDLERS.items():
        writes = isinstance(handler, Write | Prepared)
        assert writes == OPS[name].write, name
        if isinstance(handler, Write | Prepared):
            assert handler.op.name == name


def test_only_the_liveness_operations_skip_the_reader_threads_and_the_queue() -> None:
    assert {name for name, h in HANDLERS.items() if isinstance(h, Control)} == {C.OP_PING, C.OP_HELLO, C.OP_HEARTBEAT}
    # a backup or an export must see every tier at one moment: writes wait while it runs
    assert {name for name, h in HANDLERS.items() if isinstance(h, Read) and h.held} == {C.OP_BACKUP, C.OP_EXPORT}
    assert {name for name, h in HANDLERS.items() if isinstance(h, Prepared)} == {C.OP_INJECT_PREPARE, C.OP_IMPORT}
