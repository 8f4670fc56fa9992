"""The agents' clients, the sync and the async one by one suite (`make_client`): typed errors, deadlines,
backing off on `busy`, resends, pipelining, and staying light."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import msgpack
import pytest
import zmq

from groove.client import (
    BadEndpoint,
    BadRequest,
    Busy,
    CoordinatorAbsent,
    GrooveClient,
    GrooveTimeout,
    InternalError,
    NotFound,
    RemoteError,
)
from groove.client.errors import from_wire
from groove.coordinator.wire.codec import encode_error, encode_ok
from groove.protocol import constants as C
from groove.protocol.envelope import encode_request
from groove.protocol.errors import ErrorCode
from tests.helpers import RunningCoordinator, learning, silent_endpoint


def test_error_codes_become_typed_exceptions() -> None:
    busy = from_wire({"code": "busy", "message": "full", "retryable": True, "retry_after_ms": 40})
    assert isinstance(busy, Busy)
    assert (busy.retryable, busy.retry_after_ms) == (True, 40)
    assert isinstance(from_wire({"code": "not_found", "message": "x"}), NotFound)
    unknown = from_wire({"code": "from_the_future", "message": "x"})
    assert type(unknown) is RemoteError
    assert unknown.code == "from_the_future"


def test_no_coordinator_means_a_timeout_at_the_deadline(make_client: Callable[..., GrooveClient]) -> None:
    with silent_endpoint() as endpoint:
        client = make_client(endpoint, timeout=0.6, attempt_timeout=0.1)
        started = time.monotonic()
        with pytest.raises(GrooveTimeout, match="is the coordinator running"):
            client.ping()
        assert 0.5 < time.monotonic() - started < 3
        client.close()


def test_busy_is_answered_when_the_queue_is_full_and_the_client_rides_it_out(
    coordinator_factory: Callable[..., RunningCoordinator], make_client: Callable[..., GrooveClient]
) -> None:
    running = coordinator_factory("--queue-size", "1", "--max-batch", "1")
    sock: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(running.endpoint)
    # Each request carries 50 learnings, so a commit takes longer than relaying the next request, even on a
    # loaded machine: with one learning each the writer sometimes kept up with all of them.
    for i in range(100):
        batch = [learning(n=i * 50 + j) for j in range(50)]
        sock.send_multipart([b"", encode_request(f"r{i}", "learning.put", {"learnings": batch})])
    codes = []
    for _ in range(100):
        assert sock.poll(10_000)
        reply = msgpack.unpackb(sock.recv_multipart()[1], raw=False)
        codes.append("ok" if reply["ok"] else reply["error"]["code"])
        if not reply["ok"]:
            assert reply["error"]["retryable"] is True
            assert reply["error"]["retry_after_ms"] > 0
    sock.close()
    assert "busy" in codes
    assert "ok" in codes
    client = make_client(running.endpoint, timeout=20)
    # numbered past the 5,000 above: the same content again would reinforce its learning, not add one
    results = client.call_many(
        [("learning.put", {"learnings": [learning(n=10_000 + i)]}) for i in range(200)], window=32
    )
    assert [r.error for r in results] == [None] * 200
    assert len({r.body["ids"][0] for r in results if r.body}) == 200
    assert client.stats().tiers[0].learnings == codes.count("ok") * 50 + 200


def test_pipelined_results_come_back_in_order(
    coordinator: RunningCoordinator, make_client: Callable[..., GrooveClient]
) -> None:
    client = make_client(coordinator.endpoint, timeout=20)
    lid = client.learn("global", "solution", "d", "i")
    calls = [
        ("learning.get", {"id": lid}),
        ("learning.get", {"id": "01a20000-0000-7000-8000-000000000000"}),
        ("ping", {}),
    ] * 20
    results = client.call_many(calls, window=8)
    assert [r.body is not None for r in results] == [True, False, True] * 20
    assert all(isinstance(r.error, NotFound) for r in results[1::3])
    assert all(r.latency_s > 0 for r in results)


def test_the_client_is_light() -> None:
    code = (
        "import sys, psutil; from groove import GrooveClient; c = GrooveClient('tcp://127.0.0.1:1'); "
        "import json; print(json.dumps({'rss_mb': psutil.Process().memory_info().rss / 1e6, "
        "'heavy': [m for m in ('torch', 'sentence_transformers', 'pycozo', 'groove.coordinator', 'asyncio') "
        "if m in sys.modules]}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    figures = json.loads(out.stdout)
    assert figures["heavy"] == []
    assert figures["rss_mb"] < 60


def test_prepare_builds_the_named_reply_validators_before_the_first_call() -> None:
    # a fresh interpreter: in this one, other tests' calls have built validators already
    code = (
        "import json; from groove import GrooveClient; from groove.protocol.ops import OPS\n"
        "built = lambda: sorted(op for op, spec in OPS.items() if spec.reply.__pydantic_complete__)\n"
        "before = built()\n"
        "try:\n    GrooveClient.prepare('task.claim', 'task.clam')\nexcept ValueError as exc:\n    refused = str(exc)\n"
        "after_refusal = built(); GrooveClient.prepare('task.claim', 'task.complete'); named = built()\n"
        "GrooveClient.prepare()\n"
        "print(json.dumps([before, refused, after_refusal, named, built() == sorted(OPS)]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    before, refused, after_refusal, named, everything = json.loads(out.stdout)
    assert not {"task.claim", "task.complete"} & set(before)
    assert refused == "unknown operation 'task.clam'"
    assert after_refusal == before  # a bad name builds nothing
    assert set(named) - set(before) == {"task.claim", "task.complete"}
    assert everything


@pytest.mark.parametrize("endpoint", ["tcp://nohost", "localhost:5555", "tcp://h:0", "tcp://h:99999", "udp://h:1"])
def test_a_malformed_endpoint_is_refused_before_a_socket_sees_it(
    endpoint: str, make_client: Callable[..., GrooveClient]
) -> None:
    with pytest.raises(BadEndpoint, match="endpoint"):
        make_client(endpoint)


def _peer(endpoint: str = "tcp://127.0.0.1:0") -> tuple[zmq.Socket[bytes], str]:
    """A ROUTER standing in for the coordinator, bound at `endpoint` (a free loopback port by default), and where
    it listens. An endpoint just closed is free once ZeroMQ's I/O thread has let the old socket go."""
    router: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    deadline = time.monotonic() + 10
    while True:
        try:
            router.bind(endpoint)
            return router, router.getsockopt_string(zmq.LAST_ENDPOINT)
        except zmq.ZMQError:
            assert time.monotonic() < deadline
            time.sleep(0.01)


def test_an_error_without_an_id_answers_the_one_request_in_flight(make_client: Callable[..., GrooveClient]) -> None:
    """A peer that could not read the request's id answers with `id` null (PROTOCOL.md, section 3): with one
    request in flight the client takes it as that request's answer instead of waiting for its deadline."""
    router, endpoint = _peer()

    def answer() -> None:
        peer, _, _ = router.recv_multipart()
        router.send_multipart([peer, b"", encode_error(None, ErrorCode.BAD_REQUEST, "unreadable")])

    answering = threading.Thread(target=answer)
    answering.start()
    started = time.monotonic()
    with make_client(endpoint, timeout=30) as client, pytest.raises(BadRequest, match="unreadable"):
        client.ping()
    assert time.monotonic() - started < 5  # not the 30 s deadline
    answering.join()
    router.close()


def test_a_call_given_up_says_the_coordinators_last_error_not_no_reply(
    make_client: Callable[..., GrooveClient],
) -> None:
    """A coordinator that keeps answering a retryable error is resent to until the deadline; then the client
    raises that error (what the coordinator said), not a timeout that suggests nobody answered."""
    router, endpoint = _peer()
    answered = []
    stop = threading.Event()

    def answer() -> None:
        while not stop.is_set():
            if router.poll(50):
                peer, _, payload = router.recv_multipart()
                request_id = msgpack.unpackb(payload)["id"]
                answered.append(request_id)
                reply = encode_error(request_id, ErrorCode.INTERNAL, "the write failed inside the coordinator")
                router.send_multipart([peer, b"", reply])

    answering = threading.Thread(target=answer)
    answering.start()
    try:
        with make_client(endpoint, timeout=1.0) as client, pytest.raises(InternalError, match="failed inside"):
            client.ping()
    finally:
        stop.set()
        answering.join()
        router.close()
    assert len(answered) > 1  # resent...
    assert len(set(answered)) == 1  # ...under its one id, then given up with the coordinator's error


def _restarted(router: zmq.Socket[bytes], endpoint: str) -> zmq.Socket[bytes]:
    """Close `router` as a killed coordinator goes, with what it took unanswered; bind a new one where it was."""
    router.close()
    return _peer(endpoint)[0]


def test_a_request_lost_with_its_connection_is_resent_as_soon_as_the_peer_is_back(
    make_client: Callable[..., GrooveClient],
) -> None:
    """A coordinator killed with a request in flight loses it; the restarted one is sent it again the moment
    the client reconnects (under the same id, so a write still applies once), not after the attempt timeout."""
    router, endpoint = _peer()
    received: list[str] = []

    def crash_then_answer() -> None:
        nonlocal router
        _, _, payload = router.recv_multipart()
        received.append(msgpack.unpackb(payload)["id"])
        router = _restarted(router, endpoint)
        peer, _, payload = router.recv_multipart()
        request_id = msgpack.unpackb(payload)["id"]
        received.append(request_id)
        router.send_multipart([peer, b"", encode_ok(request_id, {"pong": True})])

    answering = threading.Thread(target=crash_then_answer)
    answering.start()
    started = time.monotonic()
    with make_client(endpoint, timeout=60, attempt_timeout=30) as client:
        assert client.call(C.OP_PING, {}) == {"pong": True}
    took = time.monotonic() - started
    answering.join()
    router.close()
    assert len(received) == 2
    assert received[0] == received[1]  # the same request, resent under its id
    assert took < 10  # not the 30 s attempt timeout


def test_a_call_that_must_not_be_resent_is_not_resent_on_reconnect_either(
    make_client: Callable[..., GrooveClient],
) -> None:
    """A call whose one attempt lasts its whole deadline (a backup, an export) is never sent twice: not after
    a reconnect either. It times out at its deadline."""
    router, endpoint = _peer()
    ended = threading.Event()
    after_restart: list[bytes] = []

    def crash_then_listen() -> None:
        nonlocal router
        router.recv_multipart()
        router = _restarted(router, endpoint)
        while not ended.is_set():
            if router.poll(50):
                after_restart.append(router.recv_multipart()[-1])

    listening = threading.Thread(target=crash_then_listen)
    listening.start()
    with make_client(endpoint, timeout=2) as client, pytest.raises(GrooveTimeout):
        client.call(C.OP_PING, {}, timeout=2, attempt_timeout=2)
    ended.set()
    listening.join()
    router.close()
    assert after_restart == []


def test_nothing_listening_is_said_within_the_wait_given_and_a_silent_coordinator_is_not_called_absent(
    make_client: Callable[..., GrooveClient],
) -> None:
    with silent_endpoint() as endpoint:
        started = time.monotonic()  # the wait counts from the client's making
        client = make_client(endpoint, timeout=30, absent_after=1.0)
        with pytest.raises(CoordinatorAbsent) as refused:
            client.ping()
        assert 1.0 <= time.monotonic() - started < 5  # not the 30 s deadline
        assert endpoint in str(refused.value)
        client.close()
    router, endpoint = _peer()  # accepts the connection, never answers: busy, not absent
    try:
        with make_client(endpoint, timeout=2.5, absent_after=0.5) as client:
            with pytest.raises(GrooveTimeout) as late:
                client.ping()
            assert not isinstance(late.value, CoordinatorAbsent)
            assert router.poll(0)  # the request reached it
    finally:
        router.close(linger=0)
