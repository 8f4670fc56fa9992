"""Every verb with the inputs users get wrong: a clear one-line error, a non-zero exit, and nothing stored changed.

Each row was run as `groove ...` (a process of its own, forked from one that loaded the CLI once:
tests/cliforks.py) against one real coordinator, or with no coordinator where the row says so. Status 1: the
coordinator refused the request; 2: the command line or a local file is wrong; 3: no coordinator answered.
`ID` is a stored learning, `GONE` an id no tier holds.

| verb | what is wrong | tried | status |
|---|---|---|---|
| any | endpoint without transport | `--endpoint localhost:5555 ping` | 2 |
| any | endpoint without a port | `--endpoint tcp://nohost ping` | 2 |
| any | endpoint after the verb, malformed | `ping --endpoint tcp://h:99999` | 2 |
| any | timeout out of range | `ping --timeout 0` | 2 |
| any | coordinator down | `--endpoint SILENT --timeout 0.3 ping` | 3 |
| any | half the CURVE options | `--server-key K ping` | 2 |
| any | key file missing | `--server-key K --key missing ping` | 2 |
| any | unknown verb, unknown option | `teleport`, `ping --bogus` | 2 |
| learn | empty, whitespace, too long | `learn ""`, `learn "   "`, `learn x*5000` | 1 |
| learn | wrong scope or tier (checked before sending) | `--scope proj:/x`, `--scope user:`, `--tier enterprise:` | 2 |
| learn | wrong category, confidence | `--category nope`, `--confidence 2` | 2 |
| get | not an id, unknown id, none | `get nope`, `get GONE`, `get` | 1, 1, 2 |
| delete | unknown id | `delete GONE` | 1 |
| outcome | unknown id, unknown outcome | `outcome GONE helpful`, `outcome ID great` | 1, 2 |
| relate | unknown type, unknown ids | `relate ID likes ID`, `relate GONE supersedes ID` | 2, 1 |
| relations | not an id | `relations nope` | 1 |
| list | limit 0, malformed tier | `list --limit 0`, `list --tier bogus` | 2 |
| search | empty query, limit 0, mode | `search ""`, `search x --limit 0`, `--mode psychic` | 1, 2, 2 |
| inject | budget 0 | `inject --budget 0` | 2 |
| session-end | not an id, unknown injection | `session-end nope`, `session-end GONE` | 1 |
| session | not an id, unknown injection, none | `session nope`, `session GONE`, `session` | 1, 1, 2 |
| maintain, reindex, reembed | malformed tier | `--tier bogus` | 2 |
| promote, propose | unknown id | `promote GONE`, `propose GONE --org acme` | 1 |
| review, reviews | unknown review, no org | `review GONE approve ...`, `reviews` | 1, 2 |
| agents | unknown state | `agents --state asleep` | 2 |
| params, stats | take nothing but --json | `stats --limit 3` | 2 |
| backup | directory not empty | `backup NONEMPTY` | 1 |
| restore | unknown id, missing path, used data dir | `restore GONE`, `restore ./missing`, `restore BK` | 1, 2, 2 |
| export | unwritable path, malformed tier | `export /proc/x.json`, `export --tier bogus f` | 1, 2 |
| import | missing, not JSON, not an export | `import missing.json`, `import BAD`, `import WRONG` | 1 |
| keys | no role, curator without org, unwritable, bad key dir | `keys generate ...`, `keys list ...` | 2 |
| serve | bad bind, bad settings | `--bind bogus`, `--max-batch 0`, `--writers 9`, `--embed-device gpu` | 2 |
| serve | no config file | `--config m` | 2 |
| agent | no duration, missing script, bad mix | `agent`, `agent --workload missing`, `--mix fly=1` | 2 |
| agent | unknown memory, share out of range | `agent --memory GONE`, `--memory M --fail-share 2` | 1, 2 |
| swarm | no agents, bad mix | `swarm --agents 0`, `swarm --mix fly=1` | 2 |
| swarm | unknown backend, Ray options without Ray | `--backend k8s`, `--ray-address auto`, `--cpus-per-agent 2` | 2 |
| swarm | Ray cluster unreachable | `--backend ray --ray-address 127.0.0.1:1` | 1 |
| agent, swarm | real agents: no plan, both plans | `--agent claude`, `--memory M --plan P` | 2 |
| agent, swarm | real agents: agent missing, not a git repo | `--agent-binary /nowhere`, `--repo NOGIT` | 2 |
| swarm | real agents: plan broken, unknown memory | `--plan BAD`, `--plan DANGLING`, `--memory GONE` | 2, 1 |
| swarm | a plan without --agent | `swarm --memory M` | 2 |
| memory | no goal, blank root, unknown memory, bad status | `memory create`, `show GONE`, `status M bored` | 2, 1, 2 |
| tasks | plan missing, broken or cyclic; unknown dependency or task | `add M BAD`, `add M CYCLE`, `show nope` | 2, 1 |
| tasks | bad verdict, unknown task, not in review | `review t maybe`, `cancel nope`, `review T approved` | 2, 1, 1 |
| tasks | bad priority, unknown task | `prioritize t hi`, `prioritize t 1e9`, `prioritize x 1` | 2, 1 |
| history, sessions | bad id, unknown learning, bad page | `history nope`, `history GONE`, `sessions --before x` | 1 |
| archive | not an id, unknown learning, archived already | `archive nope`, `archive GONE`, `archive ARCHIVED` | 1 |
| board | unknown memory | `board GONE --once` | 1 |
| nudge | unknown memory, bad priority | `nudge GONE a m`, `nudge M a m --priority max` | 1, 2 |
| decisions | unknown memory | `decisions GONE` | 1 |
| memory note | unknown memory, bad kind | `note GONE x`, `note M x --kind bad` | 1, 2 |
| memory note | blank, expiry 0 | `note M " "`, `note M x --expires-in 0` | 1, 2 |
| memory notes | unknown memory, search with filters | `notes GONE`, `notes M --search x --kind context` | 1, 2 |
| memory artifacts, checkpoints, nudges | unknown memory | `artifacts GONE`, `checkpoints GONE`, `nudges GONE` | 1 |
| reverse-decision | not an id, unknown decision | `reverse-decision nope`, `reverse-decision GONE` | 1 |
| mcp | not HOST:PORT | `mcp --http nohost`, `mcp --http h:99999` | 2 |
| ui | not HOST:PORT, a short token, a port in use | `ui --bind nohost`, `ui --token short`, `ui --bind TAKEN` | 2 |
| swarm | a dashboard address that is not HOST:PORT | `swarm --ui nohost` | 2 |
| hook | unknown event (bad stdin: tests/integration/test_hooks.py) | `hook Sleep` | 2 |
| hooks | both places, no such project, unknown agent | `--project . --user`, `--project nope`, `--agent vim` | 2 |
| cluster status | no map, a missing or broken map | `cluster status`, `--cluster missing.toml`, `--cluster BAD` | 2 |
| any, with a map | broken map; the tier's owner down (stale: test_cluster) | `learn x`, `learn x --scope P` | 2, 3 |
| serve | a map without a name, a name not in the map | `--cluster MAP`, `--cluster MAP --cluster-name z` | 2 |
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
from pathlib import Path
from typing import Any

from groove.client import GrooveClient
from tests.cliforks import run_many
from tests.helpers import RunningCoordinator, silent_endpoint, subcommands

GONE = "01a20000-0000-7000-8000-0000000000ee"


def state(client: GrooveClient) -> list[Any]:
    """Everything a wrong input could have changed: every learning with its usage, the tiers, the reviews."""
    return [
        [x.model_dump() for x in client.iter_learnings()],
        sorted(client.stats().disk_tiers),
        [r.model_dump() for r in client.reviews("acme", status=None)],
        [(m.model_dump(), [t.model_dump() for t in client.tasks(m.id)]) for m in client.memories()],
    ]


def test_every_wrong_input_gets_one_line_a_nonzero_status_and_changes_nothing(
    coordinator: RunningCoordinator, client: GrooveClient, tmp_path: Path
) -> None:
    lid = client.learn("global", "solution", "kept", "kept")
    archived = client.learn("global", "solution", "put away", "put away")
    client.archive(archived)
    client.record_outcome([(lid, "helpful")])
    backup = tmp_path / "bk"
    client.backup(str(backup))
    nonempty = tmp_path / "nonempty"
    nonempty.mkdir()
    (nonempty / "x").write_text("x")
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "wrong.json").write_text(json.dumps({"format": "something-else"}))
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "broken.key").write_text("not a certificate")
    memory = client.create_memory("/srv/x", "plan", "a goal")
    client.add_tasks(memory, [{"id": "pending-task", "title": "t"}])
    (tmp_path / "plan.yaml").write_text("tasks: [unclosed")
    repo = tmp_path / "repo"  # a git repository with a commit, for the real agents' rows
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "i"],
                   cwd=repo, check=True)  # fmt: skip
    agent_bin = ("--agent-binary", "/bin/true")  # a program that exists: the rows get past the binary check
    (tmp_path / "dangling.yaml").write_text("- {title: t, depends_on: [ghost]}\n")
    (tmp_path / "cycle.yaml").write_text("- {id: a, title: a, depends_on: [b]}\n- {id: b, title: b, depends_on: [a]}\n")
    ep = ("--endpoint", coordinator.endpoint)
    busy = socket.create_server(("127.0.0.1", 0))  # a port in use, for `groove ui --bind`
    taken = f"127.0.0.1:{busy.getsockname()[1]}"
    serve = ("serve", "--data-dir", str(tmp_path / "never"))
    broken_map = tmp_path / "broken.toml"
    broken_map.write_text('home = "a"\n[coordinators]\n')
    # a map under which the running coordinator (not started with one) is b, and a owns the project
    cluster_map = tmp_path / "cluster.toml"
    cluster_map.write_text(
        f'home = "b"\n[coordinators]\na = "tcp://127.0.0.1:1"\nb = "{coordinator.endpoint}"\n'
        '[projects]\n"/srv/other" = "a"\n'
    )
    with silent_endpoint() as silent:
        cases: list[tuple[tuple[str, ...], int]] = [
            (("--endpoint", "localhost:5555", "ping"), 2),
            (("--endpoint", "tcp://nohost", "ping"), 2),
            (("ping", "--endpoint", "tcp://h:99999"), 2),
            (("ping", "--timeout", "0"), 2),
            (("--endpoint", silent, "--timeout", "0.3", "ping"), 3),
            ((*ep, "--server-key", "K" * 40, "ping"), 2),
            ((*ep, "--server-key", "K" * 40, "--key", str(tmp_path / "missing"), "ping"), 2),
            (("teleport",), 2),
            ((*ep, "ping", "--bogus"), 2),
            ((*ep, "learn", ""), 1),
            ((*ep, "learn", "   "), 1),
            ((*ep, "learn", "x" * 5000), 1),
            ((*ep, "learn", "x", "--scope", "proj:/x"), 2),
            ((*ep, "learn", "x", "--scope", "user:"), 2),
            ((*ep, "learn", "x", "--tier", "enterprise:"), 2),
            ((*ep, "learn", "x", "--category", "nope"), 2),
            ((*ep, "learn", "x", "--confidence", "2"), 2),
            ((*ep, "get", "nope"), 1),
            ((*ep, "get", GONE), 1),
            ((*ep, "get"), 2),
            ((*ep, "delete", GONE), 1),
            ((*ep, "outcome", GONE, "helpful"), 1),
            ((*ep, "outcome", lid, "great"), 2),
            ((*ep, "relate", lid, "likes", lid), 2),
            ((*ep, "relate", GONE, "supersedes", lid), 1),
            ((*ep, "relations", "nope"), 1),
            ((*ep, "list", "--limit", "0"), 2),
            ((*ep, "list", "--tier", "bogus"), 2),
            ((*ep, "search", ""), 1),
            ((*ep, "search", "x", "--limit", "0"), 2),
            ((*ep, "search", "x", "--mode", "psychic"), 2),
            ((*ep, "inject", "--budget", "0"), 2),
            ((*ep, "session-end", "nope"), 1),
            ((*ep, "session-end", GONE), 1),
            ((*ep, "session", "nope"), 1),
            ((*ep, "session", GONE), 1),
            ((*ep, "session"), 2),
            ((*ep, "maintain", "--tier", "bogus"), 2),
            ((*ep, "reindex", "--tier", "bogus"), 2),
            ((*ep, "reembed", "--tier", "bogus"), 2),
            ((*ep, "promote", GONE), 1),
            ((*ep, "propose", GONE, "--org", "acme"), 1),
            ((*ep, "review", GONE, "approve", "--org", "acme", "--curator", "c"), 1),
            ((*ep, "reviews"), 2),
            ((*ep, "agents", "--state", "asleep"), 2),
            ((*ep, "stats", "--limit", "3"), 2),
            ((*ep, "backup", str(nonempty)), 1),
            ((*ep, "restore", GONE), 1),
            ((*ep, "restore", "./missing"), 2),
            (("restore", str(backup), "--data-dir", str(coordinator.data_dir)), 2),
            ((*ep, "export", "/proc/groove.json"), 1),
            ((*ep, "export", "--tier", "bogus", str(tmp_path / "e.json")), 2),
            ((*ep, "import", str(tmp_path / "missing.json")), 1),
            ((*ep, "import", str(tmp_path / "bad.json")), 1),
            ((*ep, "import", str(tmp_path / "wrong.json")), 1),
            (("keys", "generate", "k", "--dir", str(tmp_path)), 2),
            (("keys", "generate", "k", "--role", "curator", "--dir", str(tmp_path)), 2),
            (("keys", "generate", "k", "--role", "agent", "--dir", "/proc"), 2),
            (("keys", "list", str(keys)), 2),
            (("keys", "list", str(tmp_path / "nokeys")), 2),
            ((*serve, "--bind", "bogus"), 2),
            ((*serve, "--max-batch", "0"), 2),
            ((*serve, "--writers", "9"), 2),
            ((*serve, "--embed-device", "gpu"), 2),
            ((*serve, "--config", str(tmp_path / "missing.toml")), 2),
            ((*ep, "agent"), 2),
            ((*ep, "agent", "--count", "1", "--workload", str(tmp_path / "missing.jsonl")), 2),
            ((*ep, "agent", "--count", "1", "--mix", "fly=1"), 2),
            ((*ep, "agent", "--memory", GONE), 1),
            ((*ep, "agent", "--memory", memory, "--fail-share", "2"), 2),
            ((*ep, "agent", "--agent", "claude"), 2),
            ((*ep, "agent", "--memory", memory, "--agent", "claude", "--agent-binary", "/nowhere/claude"), 2),
            ((*ep, "agent", "--memory", memory, "--agent", "codex", *agent_bin, "--repo", str(tmp_path)), 2),
            ((*ep, "swarm", "--agent", "claude", *agent_bin), 2),
            ((*ep, "swarm", "--agent", "claude", *agent_bin, "--memory", memory, "--plan", "p.yaml"), 2),
            ((*ep, "swarm", "--memory", memory), 2),
            ((*ep, "swarm", "--agent", "claude", "--agent-binary", "/nowhere/claude", "--memory", memory), 2),
            ((*ep, "swarm", "--agent", "codex", *agent_bin, "--memory", memory, "--repo", str(tmp_path)), 2),
            (
                (
                    *ep,
                    "swarm",
                    "--agent",
                    "claude",
                    *agent_bin,
                    "--plan",
                    str(tmp_path / "plan.yaml"),
                    "--repo",
                    str(repo),
                ),
                2,
            ),
            ((*ep, "swarm", "--agent", "claude", *agent_bin, "--memory", GONE, "--repo", str(repo)), 1),
            (
                (
                    *ep,
                    "swarm",
                    "--agent",
                    "claude",
                    *agent_bin,
                    "--plan",
                    str(tmp_path / "dangling.yaml"),
                    "--repo",
                    str(repo),
                ),
                2,
            ),
            (("cluster", "status"), 2),
            (("cluster", "status", "--cluster", str(tmp_path / "missing.toml")), 2),
            (("--cluster", str(broken_map), "cluster", "status"), 2),
            (("--cluster", str(broken_map), "learn", "x"), 2),
            (("--cluster", str(cluster_map), "--timeout", "0.5", "learn", "x", "--scope", "project:/srv/other"), 3),
            ((*serve, "--cluster", str(cluster_map)), 2),
            ((*serve, "--cluster", str(cluster_map), "--cluster-name", "z"), 2),
            (("swarm", "--agents", "0"), 2),
            (("swarm", "--mix", "fly=1"), 2),
            (("swarm", "--backend", "k8s"), 2),
            (("swarm", "--ray-address", "auto"), 2),
            (("swarm", "--cpus-per-agent", "2"), 2),
            (("swarm", "--embedder", "none", "--backend", "ray", "--ray-address", "127.0.0.1:1"), 1),
            ((*ep, "memory", "create", "--project", "/srv/x", "--name", "n"), 2),
            ((*ep, "memory", "create", "--project", " ", "--name", "n", "--goal", "g"), 2),
            ((*ep, "memory", "show", GONE), 1),
            ((*ep, "memory", "status", memory, "bored"), 2),
            ((*ep, "tasks", "add", memory, str(tmp_path / "missing.yaml")), 2),
            ((*ep, "tasks", "add", memory, str(tmp_path / "plan.yaml")), 2),
            ((*ep, "tasks", "add", memory, str(tmp_path / "dangling.yaml")), 1),
            ((*ep, "tasks", "add", memory, str(tmp_path / "cycle.yaml")), 2),
            ((*ep, "tasks", "show", "nope"), 1),
            ((*ep, "tasks", "review", "nope", "maybe"), 2),
            ((*ep, "tasks", "cancel", "nope"), 1),
            ((*ep, "tasks", "review", "pending-task", "approved"), 1),
            ((*ep, "board", GONE, "--once"), 1),
            ((*ep, "nudge", GONE, "a1", "hello"), 1),
            ((*ep, "nudge", memory, "a1", "hello", "--priority", "max"), 2),
            ((*ep, "decisions", GONE), 1),
            ((*ep, "memory", "note", GONE, "x"), 1),
            ((*ep, "memory", "note", memory, "x", "--kind", "gossip"), 2),
            ((*ep, "memory", "note", memory, " "), 1),
            ((*ep, "memory", "note", memory, "x", "--expires-in", "0"), 2),
            ((*ep, "memory", "notes", GONE), 1),
            ((*ep, "memory", "notes", memory, "--search", "x", "--kind", "context"), 2),
            ((*ep, "memory", "artifacts", GONE), 1),
            ((*ep, "memory", "checkpoints", GONE), 1),
            ((*ep, "memory", "nudges", GONE), 1),
            ((*ep, "reverse-decision", "nope"), 1),
            ((*ep, "reverse-decision", GONE), 1),
            ((*ep, "mcp", "--http", "nohost"), 2),
            ((*ep, "mcp", "--http", "h:99999"), 2),
            ((*ep, "tasks", "prioritize", "pending-task", "high"), 2),
            ((*ep, "tasks", "prioritize", "pending-task", str(10**9)), 2),
            ((*ep, "tasks", "prioritize", "nope", "1"), 1),
            ((*ep, "history", "nope"), 1),
            ((*ep, "history", GONE), 1),
            ((*ep, "sessions", "--before", "yesterday"), 1),
            ((*ep, "archive", "nope"), 1),
            ((*ep, "archive", GONE), 1),
            ((*ep, "archive", archived), 1),
            ((*ep, "ui", "--bind", "nohost"), 2),
            ((*ep, "ui", "--token", "short"), 2),
            ((*ep, "ui", "--bind", taken), 2),
            (("swarm", "--ui", "nohost"), 2),
            ((*ep, "hook", "Sleep"), 2),
            (("hooks", "install", "--project", ".", "--user"), 2),
            (("hooks", "install", "--project", "nope"), 2),
            (("hooks", "uninstall", "--agent", "vim"), 2),
        ]
        before = state(client)
        runs = run_many([list(args) for args, _ in cases])
    busy.close()
    wrong = []
    for (args, status), run in zip(cases, runs, strict=True):
        lines = run.stderr.strip().splitlines()
        if (
            run.returncode != status
            or len(lines) != 1
            or not lines[0].startswith("groove: error: ")
            or len(lines[0]) < len("groove: error: ") + 12  # says something
        ):
            wrong.append(f"groove {' '.join(a[:30] for a in args)} -> {run.returncode}: {run.stderr.strip()[:300]}")
    assert not wrong, "\n".join(wrong)
    assert state(client) == before
    assert not (tmp_path / "never").exists()
    assert list(tmp_path.glob("k.key*")) == []


def test_the_table_in_the_docstring_names_every_verb() -> None:
    """The docstring's table is what a reader sees; it must not leave a verb out."""
    from groove.cli.main import cli

    missing = [verb for verb in subcommands(cli) if not re.search(rf"[|`,] *{verb}\b", __doc__ or "")]
    assert missing == []
