"""The console script: each verb loads only its own module, and the cyclic collector, off while a process
starts up, is on when a verb runs."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator

import click
import pytest

from groove.cli.entry import run
from groove.cli.main import cli
from tests.helpers import subcommands


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


def test_every_verb_in_the_table_is_the_command_of_that_name() -> None:
    verbs = subcommands(cli)
    assert len(verbs) > 40
    assert [name for name, command in verbs.items() if command.name != name] == []


def test_a_client_verb_loads_none_of_the_other_verbs_modules() -> None:
    probe = (
        "import sys, click; from groove.cli.main import cli; cli.get_command(click.Context(cli), 'learn'); "
        "print(' '.join(m for m in sys.modules "
        "if m.startswith(('groove.cli.', 'groove.coordinator', 'groove.ui', 'groove.integrations'))))"
    )
    loaded = set(
        subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    )
    assert "groove.cli.commands" in loaded
    assert loaded.isdisjoint({f"groove.cli.{name}" for name in ("swarm", "backup", "board", "ui", "agent", "serve")}), (
        loaded
    )
    assert not any(m.startswith(("groove.coordinator", "groove.ui")) for m in loaded), (
        loaded
    )  # nor the coordinator's code
