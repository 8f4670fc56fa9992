"""The `groove` command line against a real coordinator: tables, --json, and one-line errors."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import click
from click.testing import CliRunner

from groove.client import GrooveClient
from groove.swarm.coding import groove_argv
from tests.helpers import RunningCoordinator, run_groove, silent_endpoint, subcommands


def test_client_verbs(coordinator: RunningCoordinator) -> None:
    ep = ("--endpoint", coordinator.endpoint)
    ping = run_groove(*ep, "ping")
    assert ping.returncode == 0
    assert "protocol v1" in ping.stdout
    learned = run_groove(
        *ep,
        "learn",
        "tests time out on CI",
        "--insight",
        "give every test a timeout",
        "--scope",
        "project:/srv/api",
        "--category",
        "tool_usage",
        "--json",
    )
    assert learned.returncode == 0, learned.stderr
    lid = json.loads(learned.stdout)["id"]
    shown = run_groove(*ep, "get", lid)
    assert "give every test a timeout" in shown.stdout
    assert "project:/srv/api" in shown.stdout
    out = run_groove(*ep, "outcome", lid, "helpful", "--json")
    assert json.loads(out.stdout)["usage"]["times_helpful"] == 1
    listed = run_groove(*ep, "list")
    assert lid in listed.stdout
    assert listed.stdout.splitlines()[0].split()[:3] == ["id", "tier", "category"]
    stats = json.loads(run_groove(*ep, "stats", "--json").stdout)
    assert stats["tiers"][1]["learnings"] == 1
    assert "write queue" in run_groove(*ep, "stats").stdout
    other = json.loads(run_groove(*ep, "learn", "timeouts everywhere", "--json").stdout)["id"]
    assert run_groove(*ep, "relate", lid, "specializes", other).returncode == 0
    shown = run_groove(*ep, "relations", other, "--direction", "in")
    assert lid in shown.stdout
    assert "specializes" in shown.stdout
    assert json.loads(run_groove(*ep, "relations", lid, "--json").stdout)[0]["to_id"] == other
    assert run_groove(*ep, "relate", lid, "likes", other).returncode == 2
    assert run_groove(*ep, "delete", lid).stdout.startswith("deleted")
    assert json.loads(run_groove(*ep, "relations", other, "--json").stdout) == []


def test_errors_are_one_line_without_traceback(coordinator: RunningCoordinator) -> None:
    ep = ("--endpoint", coordinator.endpoint)
    bad_scope = run_groove(*ep, "learn", "x", "--scope", "proj:/x")
    assert bad_scope.returncode == 2  # checked before connecting
    assert bad_scope.stderr.startswith("groove: error: Invalid value for '--scope': invalid scope")
    assert "Traceback" not in bad_scope.stderr
    missing = run_groove(*ep, "get", "01a20000-0000-7000-8000-000000000000")
    assert missing.returncode == 1
    assert "not_found" in missing.stderr
    bad_id = run_groove(*ep, "get", "nope")
    assert "UUIDv7" in bad_id.stderr
    bad_choice = run_groove(*ep, "outcome", "x", "great")
    assert bad_choice.returncode == 2
    assert "Traceback" not in bad_choice.stderr


def test_unreachable_coordinator(tmp_path: Path) -> None:
    with silent_endpoint() as endpoint:
        result = run_groove("--endpoint", endpoint, "--timeout", "0.5", "ping")
    assert result.returncode == 3
    assert result.stderr.strip().count("\n") == 0
    assert "is the coordinator running?" in result.stderr


def test_a_verb_with_nothing_listening_says_so_within_seconds_naming_the_endpoint() -> None:
    with silent_endpoint() as endpoint:
        started = time.monotonic()
        result = run_groove("--endpoint", endpoint, "ping")  # the default 10 s timeout
        took = time.monotonic() - started
    assert result.returncode == 3
    assert took < 5 + 2  # within 5 s of its start (a second or two to start Python under load)
    assert result.stderr.startswith(f"groove: error: nothing is listening at {endpoint}")
    assert result.stderr.strip().count("\n") == 0


def test_serve_refuses_bad_configuration(tmp_path: Path) -> None:
    config = tmp_path / "groove.toml"
    config.write_text("max_batch = 8\nturbo = true\n")
    result = run_groove("serve", "--config", str(config), "--data-dir", str(tmp_path / "d"))
    assert result.returncode == 2
    assert "unknown key(s) turbo" in result.stderr
    env_bad = run_groove("serve", "--data-dir", str(tmp_path / "d"), env={"GROOVE_MAX_BATCH": "0"})
    assert env_bad.returncode == 2
    assert "max_batch" in env_bad.stderr
    assert not (tmp_path / "d").exists()


def test_serve_refuses_a_gpu_it_does_not_have(tmp_path: Path) -> None:
    # CI machines have no CUDA GPU: asking for one must fail at start-up, not leave search without vectors
    result = run_groove(
        "serve", "--data-dir", str(tmp_path / "d"), "--bind", "tcp://127.0.0.1:0", "--embed-device", "cuda"
    )
    assert result.returncode == 2
    assert result.stderr.startswith("groove: error: --embed-device cuda: torch")
    assert "use --embed-device auto or cpu" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "d").exists()


def test_a_second_coordinator_on_the_same_data_dir_is_refused(coordinator: RunningCoordinator) -> None:
    result = run_groove("serve", "--data-dir", str(coordinator.data_dir), "--bind", "tcp://127.0.0.1:0")
    assert result.returncode == 2
    assert "another coordinator" in result.stderr


def test_serve_explains_an_unusable_data_dir_or_endpoint(tmp_path: Path, coordinator: RunningCoordinator) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    result = run_groove("serve", "--data-dir", str(not_a_dir), "--bind", "tcp://127.0.0.1:0")
    assert result.returncode == 2
    assert result.stderr.startswith(f"groove: error: cannot use data dir {not_a_dir}: it is not a directory")
    taken = run_groove("serve", "--data-dir", str(tmp_path / "d"), "--bind", coordinator.endpoint)
    assert taken.returncode == 2
    assert f"cannot listen on {coordinator.endpoint}" in taken.stderr
    assert "Traceback" not in result.stderr + taken.stderr


def test_search_and_reindex(coordinator: RunningCoordinator) -> None:
    ep = ("--endpoint", coordinator.endpoint)
    lid = json.loads(
        run_groove(*ep, "learn", "the socket test is flaky under load", "--scope", "project:/srv/api", "--json").stdout
    )["id"]
    assert run_groove(*ep, "search", "flaky socket").stdout.strip() == "no learnings found"  # user tier only
    shown = run_groove(*ep, "search", "flaky socket", "--project", "/srv/api")
    assert "('flaky', 'socket')" in shown.stdout  # the words' part in the reasoning
    assert lid in shown.stdout
    hits = json.loads(run_groove(*ep, "search", "flaky", "--project", "/srv/api", "--json").stdout)
    assert [h["learning"]["id"] for h in hits] == [lid]
    rebuilt = run_groove(*ep, "reindex")
    assert rebuilt.returncode == 0
    assert rebuilt.stdout.startswith("rebuilt 2 tier(s)")
    assert "rebuilding indexes" in rebuilt.stderr
    refused = run_groove(*ep, "reembed")
    assert refused.returncode == 1
    assert "without an embedder" in refused.stderr
    bad = run_groove(*ep, "search", "x", "--project", "")
    assert bad.returncode == 2  # checked before connecting
    assert "Invalid value for '--project'" in bad.stderr


def test_inject_prints_the_block_and_session_end_closes_it(coordinator: RunningCoordinator) -> None:
    ep = ("--endpoint", coordinator.endpoint)
    learned = run_groove(
        *ep, "learn", "flaky socket tests need a retry budget", "--scope", "project:/srv/api", "--json"
    )
    lid = json.loads(learned.stdout)["id"]
    params = run_groove(*ep, "params")
    assert params.returncode == 0
    assert "injection_budget" in params.stdout
    shown = run_groove(*ep, "inject", "--project", "/srv/api", "--task", "flaky socket tests", "--seed", "1")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == "<!-- groove:learnings:begin -->"
    assert lines[-1] == "<!-- groove:learnings:end -->"
    assert any("flaky socket tests need a retry budget" in line for line in lines)
    injection_id = shown.stderr.split()[1].rstrip(":")
    given = run_groove(*ep, "session", injection_id)
    assert given.returncode == 0, given.stderr
    assert given.stdout.splitlines()[0].endswith(": open")
    assert lid in given.stdout
    # the sequence the docs show: a rating during the session (session `cli`, as `inject` records), then the
    # close naming the same learning: one session, one helpful
    rated = run_groove(*ep, "outcome", lid, "helpful")
    assert rated.returncode == 0, rated.stderr
    assert rated.stdout.startswith(f"recorded helpful for {lid}")
    twice = run_groove(*ep, "outcome", lid, "contradicted")
    assert twice.stdout == f"session cli rated {lid} already; not counted again\n"
    ended = run_groove(*ep, "session-end", injection_id, "--success", "--helpful", lid, "--json")
    assert json.loads(ended.stdout) == {"applied": 0, "ignored": 0, "rated_before": 1}
    usage = json.loads(run_groove(*ep, "get", lid, "--json").stdout)["usage"]
    assert (usage["times_injected"], usage["times_helpful"], usage["times_contradicted"]) == (1, 1, 0)
    again = run_groove(*ep, "session-end", injection_id, "--failure")
    assert again.returncode == 1
    assert "already recorded" in again.stderr
    closed = json.loads(run_groove(*ep, "session", injection_id, "--json").stdout)
    assert closed["closed_at"] is not None
    assert [g["id"] for g in closed["learnings"]] == [lid]
    observed = json.loads(run_groove(*ep, "params", "--json").stdout)
    assert {p["name"]: p["observations"] for p in observed}["injection_budget"] == 1


def test_promote_propose_review_and_maintain(coordinator: RunningCoordinator) -> None:
    ep = ("--endpoint", coordinator.endpoint)
    learned = run_groove(*ep, "learn", "keep fixtures in tests/data", "--scope", "project:/srv/api", "--json")
    lid = json.loads(learned.stdout)["id"]
    promoted = run_groove(*ep, "promote", lid)
    assert promoted.stdout.startswith("promoted as ")
    proposed = run_groove(*ep, "propose", lid, "--org", "acme", "--note", "email ops@example.com first")
    assert "flagged email in note: ops@example.com" in proposed.stdout
    review_id = proposed.stdout.split()[3]
    listed = run_groove(*ep, "reviews", "--org", "acme")
    assert review_id in listed.stdout
    assert "email" in listed.stdout
    rejected = run_groove(*ep, "review", review_id, "reject", "--org", "acme", "--curator", "dana")
    assert rejected.returncode == 1
    assert "reason" in rejected.stderr
    approved = run_groove(*ep, "review", review_id, "approve", "--org", "acme", "--curator", "dana")
    assert "approved; enterprise learning" in approved.stdout
    maintained = run_groove(*ep, "maintain")
    assert maintained.returncode == 0
    assert "decayed 0, archived 0, purged 0" in maintained.stdout
    assert run_groove(*ep, "restore", lid).returncode == 1  # not archived


def test_agents_lists_who_said_hello(coordinator: RunningCoordinator) -> None:
    ep = ("--endpoint", coordinator.endpoint)
    assert run_groove(*ep, "agents").stdout.strip() == "no agents"
    with GrooveClient(coordinator.endpoint, timeout=10) as client:
        client.hello("agent-7", role="worker")
        client.ping()
        listed = json.loads(run_groove(*ep, "agents", "--json").stdout)
        assert [(a["agent_id"], a["role"], a["state"]) for a in listed] == [("agent-7", "worker", "alive")]
        assert listed[0]["requests"] >= 1
        shown = run_groove(*ep, "agents", "--state", "alive")
        assert "agent-7" in shown.stdout
        assert run_groove(*ep, "agents", "--state", "gone").stdout.strip() == "no agents"
        assert run_groove(*ep, "agents", "--state", "lost").returncode == 2


def test_every_verb_has_complete_help() -> None:
    """`groove VERB --help` says what the verb does and what each option is for; client verbs list the
    connection options (they may come after the verb) with their environment variables."""
    from groove.cli.main import cli

    def verbs(group: click.Group, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], click.Command]]:
        found = []
        for name, command in subcommands(group).items():
            if isinstance(command, click.Group):
                found += verbs(command, (*path, name))
            else:
                found.append(((*path, name), command))
        return found

    runner = CliRunner()
    talking = {"ping", "learn", "get", "list", "delete", "search", "agent", "restore", "backup", "inject"}
    for path, command in verbs(cli, ()):
        assert command.help, path
        undocumented = [p.opts for p in command.params if isinstance(p, click.Option) and not p.help]
        assert undocumented == [], (path, undocumented)
        shown = runner.invoke(cli, [*path, "--help"], prog_name="groove")
        assert shown.exit_code == 0, (path, shown.output)
        if path[0] in talking:
            assert "GROOVE_ENDPOINT" in shown.output, path
    agent_help = runner.invoke(cli, ["agent", "--help"]).output
    for variable in ("GROOVE_AGENT_ID", "GROOVE_AGENT_WORKLOAD", "GROOVE_AGENT_RATE", "GROOVE_KEY"):
        assert variable in agent_help


def test_options_after_the_verb_json_everywhere_and_archived_state_shown(
    coordinator: RunningCoordinator, client: GrooveClient, tmp_path: Path
) -> None:
    assert run_groove("ping", "--endpoint", coordinator.endpoint, "--timeout", "5").returncode == 0
    env = {"GROOVE_ENDPOINT": "tcp://127.0.0.1:9"}  # the option after the verb wins over the environment
    assert run_groove("ping", "--endpoint", coordinator.endpoint, env=env).returncode == 0
    cold = client.learn("project:/srv/web", "solution", "commit the build output", "do it", confidence=0.05)
    client.maintain(tiers=["project:/srv/web"])  # below 0.1: archived
    shown = run_groove("get", cold, "--endpoint", coordinator.endpoint)
    assert "state        archived" in shown.stdout, shown.stdout
    listed = run_groove("list", "--endpoint", coordinator.endpoint)
    assert listed.stdout.splitlines()[0].split()[:4] == ["id", "tier", "category", "state"]
    assert "archived" in listed.stdout.splitlines()[2]
    assert json.loads(run_groove("get", cold, "--json", "--endpoint", coordinator.endpoint).stdout)["archived"]
    restored = run_groove("restore", cold, "--json", "--endpoint", coordinator.endpoint)
    assert json.loads(restored.stdout) == {"restored": cold}
    assert client.get(cold).archived is False
    keys = run_groove("keys", "generate", "ci", "--role", "agent", "--dir", str(tmp_path), "--json")
    made = json.loads(keys.stdout)
    assert (made["role"], len(made["public_key"])) == ("agent", 40)
    assert Path(made["secret_key_file"]).exists()


def test_a_relative_project_root_is_the_directory_it_names(coordinator: RunningCoordinator, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    argv = groove_argv("--endpoint", coordinator.endpoint, "learn", "x", "--scope", "project:.", "--json")
    here = subprocess.run(argv, cwd=repo, capture_output=True, text=True, check=False)
    argv = groove_argv("--endpoint", coordinator.endpoint, "list", "--tier", "project:..", "--json")
    from_src = subprocess.run(argv, cwd=repo / "src", capture_output=True, text=True, check=False)
    assert here.returncode == from_src.returncode == 0, here.stderr + from_src.stderr
    (stored,) = json.loads(from_src.stdout)["learnings"]
    assert (stored["id"], stored["scope"]) == (json.loads(here.stdout)["id"], f"project:{repo}")


def test_a_start_that_cannot_listen_leaves_no_running_marker(
    coordinator_factory: Callable[..., RunningCoordinator], client_factory: Callable[..., GrooveClient], tmp_path: Path
) -> None:
    first = coordinator_factory()
    taken = run_groove("serve", "--data-dir", str(tmp_path / "d"), "--bind", first.endpoint)
    assert taken.returncode == 2
    assert not (tmp_path / "d" / "coordinator.running").exists()
    second = coordinator_factory(data_dir=tmp_path / "d")  # the next start does not report a crash
    assert client_factory(second.endpoint).stats().last_stop == "clean"
