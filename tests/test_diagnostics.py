"""The failure diagnostics' reading of a worker's descriptors (tests/diagnostics.py)."""

from __future__ import annotations

import socket

from tests import diagnostics


def test_each_descriptor_is_named_by_its_kind() -> None:
    assert diagnostics._kind("socket:[8124]") == "socket"
    assert diagnostics._kind("pipe:[77]") == "pipe"
    assert diagnostics._kind("anon_inode:[eventfd]") == "eventfd"  # a ZeroMQ mailbox
    assert diagnostics._kind("anon_inode:[eventpoll]") == "eventpoll"
    assert diagnostics._kind("/tmp/pytest-of-root/data/coordinator.log") == "file"


def test_an_open_socket_is_counted_until_it_is_closed() -> None:
    before = diagnostics._kinds()["socket"]
    with socket.socket() as held:
        assert held.fileno() >= 0
        assert diagnostics._kinds()["socket"] == before + 1
    assert diagnostics._kinds()["socket"] == before
