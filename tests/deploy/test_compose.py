"""docker-compose.yml and its Dockerfile (no Docker engine runs here): structure, and that every command,
option and environment variable they use exists in groove."""

from __future__ import annotations

import re

import click
import yaml

from groove.cli.main import cli
from groove.coordinator.net.config import ENV_PREFIX, Settings, build
from tests.helpers import ROOT, compose, subcommands


def known_env() -> set[str]:
    """Every environment variable the CLI reads: serve settings, global options, agent options."""
    found = {ENV_PREFIX + name.upper() for name in Settings.model_fields}

    def walk(command: click.Command) -> None:
        for param in command.params:
            envvars = getattr(param, "envvar", None)
            found.update([envvars] if isinstance(envvars, str) else envvars or [])
        if isinstance(command, click.Group):
            for sub in subcommands(command).values():
                walk(sub)

    walk(cli)
    return found


def check_command(argv: list[str]) -> None:
    """`groove ...` argv: the verb exists and every --option it passes is one the command takes."""
    assert argv[0] == "groove"
    command: click.Command = cli
    for word in argv[1:]:
        if word.startswith("--"):
            names = {opt for p in command.params for opt in getattr(p, "opts", [])}
            names |= {opt for p in cli.params for opt in p.opts}
            assert word in names, f"{word} is not an option of {command.name}"
        elif isinstance(command, click.Group) and word in (verbs := subcommands(command)):
            command = verbs[word]
    assert not isinstance(command, click.Group), f"no verb in {argv}"


def test_the_coordinator_service_keeps_its_data_answers_its_healthcheck_and_flushes_on_stop() -> None:
    data = compose()
    coordinator = data["services"]["coordinator"]
    check_command(coordinator["command"])
    assert coordinator["command"][:2] == ["groove", "serve"]
    volume, target = coordinator["volumes"][0].split(":")
    assert volume in data["volumes"]
    assert coordinator["environment"]["GROOVE_DATA_DIR"] == target
    assert coordinator["environment"]["GROOVE_BIND"].startswith("tcp://0.0.0.0:")
    # the environment makes valid settings: a non-loopback bind says how it is secured
    settings = {k.removeprefix("GROOVE_").lower(): v for k, v in coordinator["environment"].items()}
    built = build(settings, None)  # raises if the bind is not loopback and neither CURVE nor insecure is set
    assert built.insecure or built.curve
    health = coordinator["healthcheck"]["test"]
    assert health[0] == "CMD"
    check_command(health[1:])
    assert health[-1] == "ping"
    assert int(coordinator["stop_grace_period"].rstrip("s")) >= 30


def test_the_agents_service_scales_by_replicas_and_waits_for_a_healthy_coordinator() -> None:
    agents = compose()["services"]["agents"]
    assert agents["profiles"] == ["load"]  # not started by a plain `up`
    check_command(agents["command"])
    assert agents["command"][:2] == ["groove", "agent"]
    assert agents["deploy"]["replicas"] >= 1
    assert agents["depends_on"]["coordinator"]["condition"] == "service_healthy"
    assert agents["environment"]["GROOVE_ENDPOINT"].startswith("tcp://coordinator:")
    assert int(agents["stop_grace_period"].rstrip("s")) > 0


def test_every_environment_variable_used_is_one_groove_reads() -> None:
    env = known_env()
    for name, service in compose()["services"].items():
        unknown = set(service.get("environment", {})) - env
        assert not unknown, f"service {name} sets variables groove does not read: {unknown}"
    dockerfile = (ROOT / "Dockerfile").read_text()
    for variable in re.findall(r"\b(GROOVE_[A-Z_]+)=", dockerfile):
        assert variable in env


def test_the_dockerfile_copies_what_exists_and_runs_groove() -> None:
    lines = (ROOT / "Dockerfile").read_text().splitlines()
    copied = [
        word for line in lines if line.startswith("COPY ") and "--from=" not in line for word in line.split()[1:-1]
    ]
    assert copied
    for source in copied:
        assert (ROOT / source).exists(), f"Dockerfile copies {source}, which does not exist"
    assert "groove" in copied  # the one package, its sub-packages inside it
    cmd = next(line for line in lines if line.startswith("CMD "))
    check_command(yaml.safe_load(cmd[4:]))
    text = "\n".join(lines).replace("\\\n", " ")
    assert re.search(r"pip install [^\n]*-c constraints\.txt", text)
    instructions = [line for line in lines if not line.lstrip().startswith("#")]
    assert not any("torch" in line for line in instructions)  # torch-free; GPU=1 installs groove[gpu]
    # the dependencies are pyproject.toml's, the gpu extra's with GPU=1, installed in a layer before groove's code
    # is copied (a code change rebuilds from there); groove itself then goes in without them, and `pip check` holds
    deps = next(i for i, line in enumerate(instructions) if "-r /tmp/requirements.txt" in line)
    code = next(i for i, line in enumerate(instructions) if line.startswith("COPY groove "))
    assert deps < code
    assert '["optional-dependencies"]["gpu"]' in text
    assert re.search(r"pip install [^\n]*--no-deps \. && /opt/groove/bin/pip check", text)


def test_the_dashboard_service_serves_on_a_host_port_with_its_token_from_the_environment() -> None:
    ui = compose()["services"]["ui"]
    check_command(ui["command"])
    assert ui["command"][:2] == ["groove", "ui"]
    assert ui["depends_on"]["coordinator"]["condition"] == "service_healthy"
    assert ui["environment"]["GROOVE_UI_TOKEN"].startswith("${GROOVE_UI_TOKEN")
    assert any(port.endswith(":5580") for port in ui["ports"])
