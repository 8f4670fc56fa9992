"""Request body digests: independent of key order, telling apart any two bodies, marked by how they were taken."""

from __future__ import annotations

from typing import Any

from groove.coordinator.wire.digests import DIGEST_PREFIX, body_digest


def test_a_body_digest_ignores_key_order_and_tells_bodies_apart_even_those_json_cannot_hold() -> None:
    assert body_digest({"a": 1, "b": [1, {"c": 2, "d": 3}]}) == body_digest({"b": [1, {"d": 3, "c": 2}], "a": 1})
    bodies: list[Any] = [{"a": 1}, {"a": 2}, {"a": 1e-5}, {"a": 2e-5}, {"a": "\ud800"}, {"a": 2**70}]
    bodies += [{"a": b"x"}, {1: "a"}]
    digests = [body_digest(body) for body in bodies]
    assert len(set(digests)) == len(bodies)
    assert all(d.startswith(DIGEST_PREFIX) for d in digests)
    assert body_digest({"a": "\ud800"}) == body_digest({"a": "\ud800"})
