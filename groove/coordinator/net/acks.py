"""A committed batch's answers, made on the acker thread for the socket loop: each write's reply payload and
outcome, and what the acked writes push to other connections.

A put the front built (write/built.py) brought its ack with it: it is sent as it came, with nothing encoded here.
Every other write's reply is encoded from its result, and its events counted (`stats.count_write`).
"""

from __future__ import annotations

from groove.coordinator.errors import Rejected
from groove.coordinator.metrics import OK, Metrics
from groove.coordinator.net import stats
from groove.coordinator.net.handlers import HANDLERS, Pushes, Services, Write
from groove.coordinator.wire.codec import encode_error, encode_ok
from groove.coordinator.write.batcher import Outcome
from groove.protocol.errors import ErrorCode

# (request id, reply payload, "ok" or the error code), one per write of a batch
Answers = list[tuple[str, bytes, str]]


def answers(services: Services, metrics: Metrics, outcomes: list[Outcome]) -> tuple[Answers, Pushes]:
    """The batch's replies, in its order, and the pushes its acked writes make (sent after the replies)."""
    answered: Answers = []
    pushes: Pushes = []
    for item, result in outcomes:
        if isinstance(result, Rejected):
            if result.code == ErrorCode.UNAUTHORIZED:
                metrics.unauthorized += 1
            payload = encode_error(item.request_id, result.code, result.message, detail=result.detail)
            answered.append((item.request_id, payload, result.code.value))
        elif item.built is not None:
            answered.append((item.request_id, item.built.reply, OK))
        else:
            answered.append((item.request_id, encode_ok(item.request_id, result), OK))
            stats.count_write(metrics, item, result)
            handler = HANDLERS.get(item.op.name)  # internal writes have none
            if isinstance(handler, Write) and handler.acked is not None:
                pushes += handler.acked(services, item.body, result)
    return answered, pushes
