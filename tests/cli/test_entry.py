"""The console script's runner: the cyclic collector, off while a process starts up, is on when a verb runs."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import click
import pytest

from cli.entry import run


@pytest.fixture
def collector_off() -> Iterator[None]:
    """The state `main` leaves for `run`; the collector is on again afterwards, whatever the test did."""
    gc.disable()
    yield
    gc.enable()


def collector_during(collect: bool) -> bool:
    """Run a verb through `run`; whether the collector was on while it ran."""
    seen: list[bool] = []

    @click.command()
    def probe() -> None:
        seen.append(gc.isenabled())

    with pytest.raises(SystemExit) as exited:
        run(probe, [], "probe", collect=collect)
    assert exited.value.code == 0
    return seen[0]


@pytest.mark.usefixtures("collector_off")
def test_a_verb_runs_with_the_collector_on() -> None:
    assert collector_during(collect=True)


@pytest.mark.usefixtures("collector_off")
def test_serve_turns_it_on_itself_once_started() -> None:
    # `groove serve` passes collect=False: Coordinator.start freezes what start-up made, then turns it on
    assert not collector_during(collect=False)
