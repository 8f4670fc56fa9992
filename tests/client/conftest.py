"""The client tests' fixtures: a client of each kind."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, cast

import pytest

from groove.client import GrooveClient
from tests.client.kinds import KINDS, Blocking


@pytest.fixture(params=KINDS)
def make_client(request: pytest.FixtureRequest) -> Iterator[Callable[..., GrooveClient]]:
    """`make(endpoint, **options)`: a client of the test's kind (sync, then async), closed at teardown."""
    made: list[GrooveClient] = []

    def make(*args: Any, **kwargs: Any) -> GrooveClient:
        client = (
            GrooveClient(*args, **kwargs) if request.param == "sync" else cast(GrooveClient, Blocking(*args, **kwargs))
        )
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()
