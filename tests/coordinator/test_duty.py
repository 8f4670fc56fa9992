"""The embedding backlog's duty: flat out, or a tenth of the time while clients write on a machine with no core
to spare; the pool tells its workers, and their bulk thread rests between forward passes."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import msgpack
import pytest
import zmq

from groove.coordinator.procs import Child
from groove.coordinator.search import embedpool
from groove.coordinator.search.derived import Derived
from groove.coordinator.search.duty import BUSY_DUTY, LAG_BOUND_S, MAX_REST_S, Pace, SpareCores, duty_for
from groove.coordinator.search.embedder import MiniLM
from groove.coordinator.search.embedpool import EmbedPool, _Slot
from groove.coordinator.search.embedworker import HELLO, PACE, Worker


def test_the_backlog_runs_flat_out_unless_clients_write_on_a_machine_with_no_core_spare() -> None:
    assert duty_for(busy=True, spare=0.4) == BUSY_DUTY
    assert duty_for(busy=True, spare=1.0) == 1.0  # a whole core idle: the backlog may have it
    assert duty_for(busy=False, spare=0.0) == 1.0  # nobody writing: the backlog may take everything


def test_spare_cores_are_what_the_machine_leaves_idle_apart_from_the_workers() -> None:
    spare = SpareCores(cores=2)
    assert spare.update(10.0, machine_busy_s=100.0, workers_s={7: 5.0}) == 2.0  # one sample says nothing yet
    # 1.5 core-seconds busy in the second, 0.5 of them the worker's: the others used 1.0, one core is spare
    assert spare.update(11.0, machine_busy_s=101.5, workers_s={7: 5.5}) == pytest.approx(1.0)
    # the worker restarted (a new pid): its seconds are left out, not read as a burst of the others' work
    assert spare.update(12.0, machine_busy_s=103.0, workers_s={8: 0.5}) == pytest.approx(0.5)
    assert spare.update(13.0, machine_busy_s=105.0, workers_s={8: 1.0}) == pytest.approx(0.5)
    assert spare.update(14.0, machine_busy_s=108.0, workers_s={8: 1.0}) == 0.0  # never below none


def test_a_pass_at_a_tenth_duty_owes_nine_times_its_length_and_a_new_duty_ends_the_rest() -> None:
    pace = Pace()
    pace.ran(0.5)
    assert pace.rest() == 0.0  # flat out: no rest
    pace.set(BUSY_DUTY)
    pace.ran(0.01)
    started = time.monotonic()
    assert pace.rest() == pytest.approx(0.09)
    assert time.monotonic() - started >= 0.085
    assert pace.rest() == 0.0  # owed once
    pace.ran(100.0)  # a pass that long owes more than the longest rest
    threading.Timer(0.05, pace.set, args=(1.0,)).start()
    started = time.monotonic()
    assert pace.rest() == MAX_REST_S
    assert time.monotonic() - started < MAX_REST_S / 2  # the new duty ended it


@pytest.fixture
def context() -> Iterator[zmq.Context[Any]]:
    made: zmq.Context[Any] = zmq.Context()
    yield made
    made.destroy(linger=0)


def received(sock: zmq.Socket[bytes]) -> list[Any]:
    assert sock.poll(10_000), "nothing arrived in 10 s"
    message: list[Any] = msgpack.unpackb(sock.recv())
    return message


def test_the_pool_tells_its_ready_workers_a_new_duty_and_a_worker_that_says_hello_later(
    context: zmq.Context[Any], tmp_path: Path
) -> None:
    busy = [True]
    derived = Derived(10, embeddings=True)
    pool = EmbedPool(derived, lambda *_: True, lambda: busy[0], context, tmp_path, ("cpu", 1, 1), "info")
    pool.sock.bind(pool.endpoint)
    # a live process in the slot (the pool checks that its worker runs), and the worker's side of the link
    child = Child("embed-0", [sys.executable, "-c", "import time; time.sleep(60)"])
    child.start()
    slot = _Slot(child, b"embed-0")
    pool.slots.append(slot)
    worker: zmq.Socket[bytes] = context.socket(zmq.DEALER)
    worker.setsockopt(zmq.IDENTITY, b"embed-0")
    worker.connect(pool.endpoint)
    try:
        pool._tell(BUSY_DUTY)  # no worker ready yet: nothing sent, the duty kept for its hello
        assert pool.duty == BUSY_DUTY
        pool._grown = True  # (no further workers to start)
        worker.send(msgpack.packb([HELLO, "cpu", 64, 0]))
        assert pool.sock.poll(10_000)
        pool._receive()
        assert slot.ready
        assert received(worker) == [PACE, BUSY_DUTY]
        # at a low duty the backlog goes in shares of one pass (4 texts here), so each pass's vectors come back
        derived.enqueue("user", [(f"id{i}", f"text {i}") for i in range(40)], since=None)
        slot.batch_size = 4
        pool._dispatch()
        assert [len(received(worker)[2]) for _ in range(2)] == [4, 4]  # two shares held: one embedding, one next
        slot.shares.clear()  # (as if their vectors came back)
        pool._tell(1.0)
        assert received(worker) == [PACE, 1.0]
        pool._dispatch()
        assert [len(received(worker)[2]) for _ in range(2)] == [4 * embedpool._PASSES] * 2
        pool._tell(1.0)  # unchanged: not sent again
        assert not worker.poll(100)
        busy[0] = False
        pool._pace(time.monotonic())  # this machine's own counters, but nobody writing: flat out
        assert pool.duty == 1.0
    finally:
        child.stop(5)
        pool.sock.close(linger=0)


def test_a_workers_bulk_thread_takes_its_duty_from_the_link(context: zmq.Context[Any]) -> None:
    pool: zmq.Socket[bytes] = context.socket(zmq.ROUTER)
    port = pool.bind_to_random_port("tcp://127.0.0.1")
    link: zmq.Socket[bytes] = context.socket(zmq.DEALER)
    link.setsockopt(zmq.IDENTITY, b"w")
    link.connect(f"tcp://127.0.0.1:{port}")
    link.send(b"")  # the pool learns its identity
    assert pool.poll(10_000)
    pool.recv_multipart()
    # the models are never called: no job is sent, and the threads are not started
    worker = Worker(link, context, cast(MiniLM, None), cast(MiniLM, None))
    pool.send_multipart([b"w", msgpack.packb([PACE, BUSY_DUTY])])
    assert link.poll(10_000)
    worker._take()
    assert worker.pace.duty == BUSY_DUTY
    worker.results.close(linger=0)


def test_the_backlog_runs_flat_out_once_its_oldest_text_has_waited_past_the_bound() -> None:
    assert duty_for(busy=True, spare=0.0, oldest_s=LAG_BOUND_S - 0.1) == BUSY_DUTY
    assert duty_for(busy=True, spare=0.0, oldest_s=LAG_BOUND_S + 0.1) == 1.0  # seconds behind, not minutes
