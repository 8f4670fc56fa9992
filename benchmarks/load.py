"""The load harness: N agent processes against a fresh coordinator, then the same load against its peers.

    python -m benchmarks.load --agents 32 --in-flight 1 --duration 10 --peers sqlite,echo
    python -m benchmarks.load --agents 32 --duration 60 --mix learn=60,outcome=30,search=10 --peers ""

Reports per-kind throughput and p50/p99/p99.9 latency, writes over 1 s, the coordinator's CPU and RSS (its front
process included) over time (sampled every second), how long a `ping` takes (every 100 ms, from the harness's
own connection: during the load, and over the whole run with the agents' start-up), its batch sizes, and —
after the run — reads back every acked learning:
`lost` (acked, not stored), `duplicates` (the same learning stored more than once), `unacked_stored`
(stored, never acked: a write whose ack a client gave up on) and `miscounted` (learnings whose
`times_injected` differs from the injections and attributions acked for them). Then, with the same agent
count, payloads and duration, the peers (benchmarks/peers.py; the fair SQLite peer, benchmarks/fairpeer.py, at
the same mix, its learns set beside groove's) and the ratios. The last line is JSON.

`--rest-rss` then restarts a coordinator on the run's data, opens every tier and reports its RSS at rest: what
the coordinator holds for that data alone, so that the RSS under load minus it is what the load itself cost.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import psutil

from benchmarks import fairpeer
from benchmarks.cluster import agent_projects, run_cluster
from benchmarks.common import ProcessTree, latency_summary, machine, ratio
from benchmarks.evidence import PER_AGENT_S, SETTLE_S, readback, spawn_agent, summarize
from benchmarks.peers import create_sqlite, peer_argv, start_echo_server
from groove.cli.output import table
from groove.cli.processes import start_coordinator
from groove.client import GrooveClient, GrooveTimeout
from groove.coordinator.net.config import EMBEDDERS
from groove.swarm.fleet import Fleet, stop_process
from groove.swarm.workloads import LEARN, parse_mix

FAIR = "sqlite-fair"  # the SQLite peer doing what groove does per write, at the same mix (fairpeer.py)
_PING_EVERY_S = 0.1  # often enough that a tail of ~0.5 % shows in a minute's run
_PING_TIMEOUT_S = 10.0


class Sampler(threading.Thread):
    """The coordinator's CPU percent, RSS and writes committed once a second, and how long a `ping` takes every
    100 ms."""

    def __init__(self, pid: int, endpoint: str) -> None:
        super().__init__(daemon=True)
        self.process = ProcessTree(pid)  # the coordinator and its front process
        self.endpoint = endpoint
        self.series: list[tuple[float, float, float, int]] = []  # (seconds, CPU %, RSS MB, writes committed)
        self.pings: list[tuple[float, float]] = []  # (wall-clock time sent, ms until the reply)
        self.stopped = threading.Event()
        self.committed = 0

    def run(self) -> None:
        started = time.monotonic()
        next_sample = started + 1.0
        with GrooveClient(self.endpoint, timeout=_PING_TIMEOUT_S) as client:
            while not self.stopped.wait(_PING_EVERY_S):
                sent, t0 = time.time(), time.monotonic()
                # a ping that never came back counts as the whole timeout: the worst case, not a gap
                with contextlib.suppress(GrooveTimeout):
                    client.ping()
                self.pings.append((sent, (time.monotonic() - t0) * 1000))
                if time.monotonic() < next_sample:
                    continue
                next_sample += 1.0
                try:
                    rss = self.process.rss_mb()
                    at, cpu = round(time.monotonic() - started, 1), self.process.cpu_percent()
                except psutil.Error:
                    return
                # what was written by then, for RSS at a count (a missed reading repeats the last)
                with contextlib.suppress(GrooveTimeout):
                    self.committed = client.stats().writes_committed
                self.series.append((at, cpu, rss, self.committed))

    def ping_summary(self, since: float = 0.0, until: float = float("inf")) -> dict[str, float]:
        """Ping latency percentiles for pings sent between two wall-clock times, and how many took over 100 ms."""
        window = [ms for sent, ms in self.pings if since <= sent <= until]
        return latency_summary(window) | {"pings": len(window), "over_100ms": sum(1 for ms in window if ms > 100)}


def serve_args(args: dict[str, Any]) -> list[str]:
    """The `groove serve` arguments of a run: the load's coordinator and the one measured at rest run alike."""
    return ["--embedder", args["embedder"], *args["serve_arg"]]


def run_groove(args: dict[str, Any], work: Path) -> dict[str, Any]:
    """The coordinator under the agents' load, and the read-back check."""
    data = work / "data"
    data.mkdir(parents=True)
    coordinator, endpoint = start_coordinator(data, serve_args(args))
    try:
        client = GrooveClient(endpoint, timeout=600)
        if args["preload"]:
            preload(client, args["preload"])
        sampler = Sampler(coordinator.pid, endpoint)
        sampler.start()
        fleet = Fleet(endpoint, work / "agents", timeout=120.0, restart=False)
        start_at = time.time() + SETTLE_S + PER_AGENT_S * args["agents"]
        # with --cluster, each agent keeps to the projects it writes in the cluster run: like for like
        projects = agent_projects(args["cluster"], args["agents"]) if args["cluster"] else [None] * args["agents"]
        for i in range(args["agents"]):
            spawn_agent(fleet, i, args, start_at, projects[i])
        fleet.wait(timeout=args["duration"] + 600)
        sampler.stopped.set()
        sampler.join(_PING_TIMEOUT_S + 1)
        stats = client.stats()
        reports = fleet.reports()
        failed = [m.agent_id for m in fleet.members.values() if not m.reports]
        if failed:
            raise RuntimeError(f"agents {failed} ended without a report: {fleet.members[failed[0]].crashes}")
        result = summarize(reports, fleet.latencies(), args["duration"])
        result["readback"] = readback(client, fleet.workdir, preloaded=args["preload"])
        load_from = SETTLE_S + PER_AGENT_S * args["agents"]  # seconds after the sampler started
        warmed_up = load_from + args["duration"] / 4
        warm = [rss for t, _, rss, _ in sampler.series if t > warmed_up]
        # whole seconds inside the load only: start-up and read-back would dilute the mean
        loaded = [cpu for t, cpu, _, _ in sampler.series if load_from + 1 < t <= load_from + args["duration"]]
        result["coordinator"] = {
            "rss_mb_peak": round(max((s[2] for s in sampler.series), default=0.0), 1),
            "rss_mb_after_warmup": [round(min(warm, default=0.0), 1), round(max(warm, default=0.0), 1)],
            "cpu_percent_mean": round(sum(s[1] for s in sampler.series) / max(1, len(sampler.series)), 1),
            "cpu_percent_under_load": round(sum(loaded) / max(1, len(loaded)), 1),
            "ping_ms": sampler.ping_summary(start_at, start_at + args["duration"]),
            "ping_ms_whole_run": sampler.ping_summary(),
            "series": [[t, round(cpu), round(rss, 1), n] for t, cpu, rss, n in sampler.series],
            "rss_mb_by_writes": rss_by_writes(sampler.series),
            "batch_size": stats.batch_size.model_dump(),
            "commit_ms": stats.commit_ms.model_dump(),
            "batches": stats.batches_committed,
        }
        client.close()
    finally:
        stop_process(coordinator)
    if args["rest_rss"]:
        result["coordinator"]["rss_mb_at_rest"] = rest_rss(data, serve_args(args))
    return result


def rss_by_writes(series: list[tuple[float, float, float, int]], every: int = 250_000) -> list[list[float]]:
    """[writes committed, RSS MB] at the first reading past each multiple of `every` writes (a write that repeats
    a learning's content reinforces it: the learnings stored are fewer, as the read-back counts them)."""
    marks: list[list[float]] = []
    for _, _, rss, committed in series:
        if committed >= every * (len(marks) + 1):
            marks.append([committed, round(rss, 1)])
    return marks


def rest_rss(data: Path, serve: list[str]) -> float:
    """RSS of a coordinator just started on `data` (with `serve` arguments) with every tier open: what holding
    that data costs."""
    coordinator, endpoint = start_coordinator(data, serve)
    try:
        with GrooveClient(endpoint, timeout=600) as client:
            client.list_learnings(limit=1)  # a list across tiers opens every tier on disk
            return round(ProcessTree(coordinator.pid).rss_mb(), 1)
    finally:
        stop_process(coordinator)


def preload(client: GrooveClient, n: int) -> None:
    """`n` learnings in batches of 500 before the run (in the user tier)."""
    done = 0
    while done < n:
        k = min(500, n - done)
        learnings = [
            {"scope": "global", "category": "solution", "description": f"preloaded learning {done + j}", "insight": "x"}
            for j in range(k)
        ]
        client.put_learnings(learnings)
        done += k
        if done % 20_000 < 500:
            click.echo(f"  preloaded {done:,}/{n:,}", err=True)


def run_peer(name: str, args: dict[str, Any], work: Path) -> dict[str, Any]:
    """One peer with the same agent count, payloads (seeds) and duration; its acked rate and latencies."""
    n, duration = args["agents"], args["duration"]
    server: subprocess.Popen[bytes] | None = None
    argv: Callable[..., list[str]] = peer_argv
    kinds: list[Path] | None = None
    if name == "sqlite":
        db = work / "peer.sqlite"
        create_sqlite(db)
        extra = ["--db", str(db)]
    elif name == FAIR:
        db = work / "fair.sqlite"
        create_sqlite(db, fairpeer.SCHEMA)
        argv, kinds = _fair_argv, [work / f"{FAIR}-{i}.kinds.json" for i in range(n)]
        extra = ["--db", str(db), "--mix", args["mix"]]
    elif name == "echo":
        server, endpoint = start_echo_server(work)
        extra = ["--endpoint", endpoint, "--in-flight", str(args["in_flight"])]
    else:
        server = subprocess.Popen(["chroma", "run", "--path", str(work / "chroma"), "--port", "8765"])
        time.sleep(5.0)
        extra = ["--port", "8765"]
    start_at = time.time() + SETTLE_S + PER_AGENT_S * n
    procs = [
        subprocess.Popen(
            argv(
                name,
                *extra,
                *(("--kinds-file", str(kinds[i])) if kinds is not None else ()),
                *("--agent-id", f"load-{i}", "--seed", str(i), "--duration", str(duration)),
                *("--start-at", str(start_at), "--latencies-file", str(work / f"{name}-{i}.lat.json")),
            ),
            stdout=subprocess.PIPE,
        )
        for i in range(n)
    ]
    try:
        outs = [json.loads(p.communicate(timeout=duration + 300)[0].decode().strip().splitlines()[-1]) for p in procs]
    finally:
        if server is not None:
            stop_process(server, grace=5)
    latencies = [x for i in range(n) for x in json.loads((work / f"{name}-{i}.lat.json").read_text())]
    acked = sum(o["acked"] for o in outs)
    elapsed = max(o["elapsed_s"] for o in outs)
    found = {"acked": acked, "per_s": round(acked / elapsed, 1)} | latency_summary(latencies)
    if kinds is not None:  # its learns alone, to set beside groove's at the same mix
        learns = sum(json.loads(path.read_text()).get(LEARN, 0) for path in kinds)
        found |= {"learn_per_s": round(learns / elapsed, 1)}
    return found


def _fair_argv(_: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "benchmarks.fairpeer", *args]


@click.command()
@click.option("--agents", type=click.IntRange(1, 512), default=32, show_default=True, help="Agent processes.")
@click.option("--duration", type=click.FloatRange(1), default=10.0, show_default=True, help="Seconds of load.")
@click.option("--mix", default="learn=1", show_default=True, help="Synthetic mix: KIND=WEIGHT,...")
@click.option("--in-flight", type=click.IntRange(1, 1024), default=1, show_default=True, help="Per agent.")
@click.option("--preload", type=click.IntRange(0), default=0, show_default=True, help="Learnings stored first.")
@click.option(
    "--peers",
    default=f"sqlite,{FAIR},echo",
    show_default=True,
    help=f"Comma-separated: sqlite (one row a write), {FAIR} (groove's work a write, the same mix), echo, chroma.",
)
@click.option("--embedder", type=click.Choice(EMBEDDERS), default="none", show_default=True)
@click.option("--serve-arg", multiple=True, help="Extra `groove serve` argument (repeatable), e.g. --max-batch=1.")
@click.option("--rest-rss", is_flag=True, help="After the run, the RSS of a coordinator restarted on its data.")
@click.option(
    "--cluster",
    type=click.IntRange(0, 6),
    default=0,
    show_default=True,
    help="Also run the agents against this many coordinators partitioning the corpus's projects (2-6).",
)
def main(**args: Any) -> None:
    """Run the load against groove, then against each peer; print tables, then one JSON line."""
    try:
        mix = parse_mix(args["mix"])
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--mix") from None
    if args["cluster"] == 1:
        raise click.BadParameter("a cluster has 2 coordinators or more", param_hint="--cluster")
    if args["cluster"] and set(mix) - {"learn", "search"}:
        raise click.BadParameter(
            "runs learn and search only (inject and outcome are not split yet)", param_hint="--cluster"
        )
    peers = [p for p in args["peers"].split(",") if p]
    unknown = set(peers) - {"sqlite", FAIR, "echo", "chroma"}
    if unknown:
        raise click.BadParameter(f"unknown peer(s) {', '.join(sorted(unknown))}", param_hint="--peers")
    if "chroma" in peers and importlib.util.find_spec("chromadb") is None:
        click.echo("chroma peer skipped: chromadb is not installed", err=True)
        peers.remove("chroma")
    with tempfile.TemporaryDirectory(prefix="groove-load-") as tmp:
        work = Path(tmp)
        click.echo(f"groove: {args['agents']} agents x {args['in_flight']} in flight, {args['mix']} ...", err=True)
        groove = run_groove(args, work / "groove")
        if args["cluster"]:
            click.echo(f"groove: {args['cluster']} coordinators ...", err=True)
            groove["cluster"] = run_cluster(args, work / "cluster", serve_args(args))
        peer_results = {}
        for peer in peers:
            click.echo(f"peer {peer} ...", err=True)
            (work / peer).mkdir()
            peer_results[peer] = run_peer(peer, args, work / peer)
    report(args, groove, peer_results)


def report(args: dict[str, Any], groove: dict[str, Any], peers: dict[str, dict[str, Any]]) -> None:
    """The tables and the final JSON line."""
    cols = ("per_s", "p50_ms", "p99_ms", "p999_ms", "max_ms", "over_1s")
    rows = [(f"groove {kind}", v["acked"], *(v[c] for c in cols)) for kind, v in groove["kinds"].items()]
    rows += [(f"peer {name}", v["acked"], *(v[c] for c in cols)) for name, v in peers.items()]
    click.echo(table(("what", "acked", "per s", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "> 1 s"), rows))
    c, rb = groove["coordinator"], groove["readback"]
    click.echo(
        f"readback: {rb} · errors {groove['errors']} · batch mean {c['batch_size']['mean']:.1f} "
        f"p99 {c['batch_size']['p99']:.0f} · coordinator CPU {c['cpu_percent_under_load']:.0f}% under load "
        f"RSS peak {c['rss_mb_peak']} MB (after warm-up {c['rss_mb_after_warmup']}) · "
        f"ping under load p50 {c['ping_ms']['p50_ms']:.1f} / p99 {c['ping_ms']['p99_ms']:.1f} / "
        f"max {c['ping_ms']['max_ms']:.1f} ms, {c['ping_ms']['over_100ms']} of {c['ping_ms']['pings']} over 100 ms "
        f"(whole run, start-up included: max {c['ping_ms_whole_run']['max_ms']:.1f} ms)"
    )
    if "cluster" in groove:
        cluster = groove["cluster"]
        rows = [
            (name, part["kinds"]["learn"]["acked"], part["kinds"]["learn"]["per_s"], part["kinds"]["learn"]["p99_ms"])
            for name, part in cluster["coordinators"].items()
            if "learn" in part["kinds"]
        ]
        rows.append(("all", sum(r[1] for r in rows), cluster["writes_per_s"], cluster["p99_ms"]))
        click.echo(table(("coordinator", "acked", "per s", "p99 ms"), rows))
        cluster["x_single"] = round(cluster["writes_per_s"] / max(1e-9, groove["kinds"]["learn"]["per_s"]), 2)
        readbacks = {name: part["readback"] for name, part in cluster["coordinators"].items()}
        click.echo(f"{len(rows) - 1} coordinators: {cluster['x_single']} x one coordinator's writes/s")
        click.echo(f"readback by coordinator: {readbacks}")
    if "rss_mb_at_rest" in c:
        click.echo(f"RSS of a coordinator restarted on the same data, every tier open: {c['rss_mb_at_rest']} MB")
    learn = groove["kinds"].get("learn", {"per_s": 0.0, "p50_ms": 0.0, "p99_ms": 0.0, "p999_ms": 0.0, "over_1s": 0})
    # groove's learns over each peer's writes; over the fair peer's learns, at the same mix
    ratios = {name: ratio(learn["per_s"], v.get("learn_per_s", v["per_s"])) for name, v in peers.items() if v["per_s"]}
    for name, value in ratios.items():
        click.echo(f"groove writes/s ÷ {name}: {value}")
    line = {
        "bench": "load",
        "agents": args["agents"],
        "in_flight": args["in_flight"],
        "mix": args["mix"],
        "duration_s": args["duration"],
        "writes_per_s": learn["per_s"],
        "p50_ms": learn["p50_ms"],
        "p99_ms": learn["p99_ms"],
        "p999_ms": learn["p999_ms"],
        "over_1s": learn["over_1s"],
        "errors": groove["errors"],
        "lost": rb["lost"],
        "duplicates": rb["duplicates"],
        "unacked_stored": rb["unacked_stored"],
        "miscounted": rb["miscounted"],
        "coordinator_rss_mb": c["rss_mb_peak"],
        "coordinator": c,
        "kinds": groove["kinds"],
        "peers": {},
        "ratios": ratios,
        "cluster": groove.get("cluster"),
        "machine": machine(),
    }
    if "sqlite" in peers:
        s = peers["sqlite"]
        line["peers"]["sqlite_wal"] = {k: s[k] for k in ("p99_ms", "p999_ms", "over_1s")} | {"writes_per_s": s["per_s"]}
    if FAIR in peers:
        s = peers[FAIR]
        line["peers"]["sqlite_fair"] = {k: s[k] for k in ("p99_ms", "p999_ms", "over_1s", "per_s", "learn_per_s")}
    if "echo" in peers:
        line["peers"]["zmq_echo"] = {"req_per_s": peers["echo"]["per_s"]}
    if "chroma" in peers:
        line["peers"]["chroma"] = {"writes_per_s": peers["chroma"]["per_s"], "p99_ms": peers["chroma"]["p99_ms"]}
    click.echo(json.dumps(line))


if __name__ == "__main__":
    main()
