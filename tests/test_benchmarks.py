"""The limits benchmark's own parts: the raw storage figure stores what it claims, and the ratios."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import board, common, faults, limits, load, storage
from tests import helpers
from tests.helpers import benchmark, drawn_as_committed


def test_the_storage_limit_commits_every_row_a_learning_write_stores_both_ways() -> None:
    # commit_rate raises unless every learning row and its by_hash index entry were stored
    (result,) = storage.measure(writes=512, batches=(16,))
    assert result["batch"] == 16
    assert result["script_per_s"] > 0
    assert result["import_per_s"] > 0


def test_the_rows_prepared_are_those_the_writer_commits(tmp_path: Path) -> None:
    prepared = storage.prepare(tmp_path, batch=4, writes=8)
    assert len(prepared) == 2
    text, params = prepared[0]
    assert set(params) == {"hashes", "learning", "usage", "applied"}
    assert ":insert applied_requests" in text  # a request id seen before fails the transaction
    assert len(params["applied"]) == 4


def test_the_limits_benchmark_gives_the_load_every_argument_it_takes() -> None:
    # it once crashed with KeyError 'cluster': the load had gained an option the limits did not pass
    assert set(limits.load_args(2, 1, 1.0)) == {param.name for param in load.main.params}


def test_ratios_divide_groove_by_every_other_figure() -> None:
    found = limits.ratios({"groove": 5000.0, "storage": 20000.0, "echo": 10000.0, "sqlite": 0.0})
    assert found == {"groove/storage": 0.25, "groove/echo": 0.5}
    with pytest.raises(KeyError):
        limits.ratios({"storage": 1.0})


def test_a_ratio_keeps_three_significant_figures_and_never_rounds_a_positive_figure_to_zero() -> None:
    # a 1 s run on a busy machine once gave groove a few writes beside the echo peer's 30k: 0.0 at 3 places
    assert common.ratio(4.0, 30_000.0) == 0.000133
    assert common.ratio(5000.0, 3.0) == 1670.0
    assert common.ratio(0.0, 3.0) == 0.0
    with pytest.raises(ZeroDivisionError):
        common.ratio(1.0, 0.0)


def test_the_board_graph_depends_only_on_the_level_before() -> None:
    tasks = board.graph(40, 4)
    assert len(tasks) == 40
    level = {t["id"]: int(t["id"][1:].split("-")[0]) for t in tasks}
    assert all(level[dep] == level[t["id"]] - 1 for t in tasks for dep in t["depends_on"])
    assert {len(t["depends_on"]) for t in tasks if level[t["id"]] > 0} <= {1, 2}


def test_the_board_history_check_finds_doubles_gaps_and_early_claims() -> None:
    tasks = [{"id": "a", "depends_on": []}, {"id": "b", "depends_on": ["a"]}, {"id": "c", "depends_on": []}]
    # [task, claim sent, claim took, completed, complete took]: b's claim came back (at 1.5) before a's
    # completion was sent (a's claim came back at 2.0)
    records = [["a", 1.0, 1.0, 3.0, 1.0], ["b", 1.0, 0.5, 4.0, 1.0], ["b", 5.0, 0.1, 6.0, 0.1]]
    result = board.summary(records, tasks, 0)
    assert result["history"] == {"completed_twice": 1, "never_completed": 1, "before_dependencies": 1}
    assert result["completed"] == 3


@pytest.mark.slow
def test_the_board_benchmark_drains_a_small_graph_both_ways() -> None:
    _, result = benchmark("board", "--agents", "3", "--tasks", "60", "--depth", "4")
    for name in ("groove", "sqlite"):
        drained = result["results"][name]
        assert drained["completed"] == 60
        assert set(drained["history"].values()) == {0}
    assert result["results"]["groove"]["coordinator_cpu_us_per_task"] > 0


@pytest.mark.slow
def test_the_mcp_benchmark_times_both_ways() -> None:
    _, result = benchmark("mcp", "--learnings", "20", "--calls", "10")
    assert set(result["results"]) == {"mcp_stdio", "bare_client"}
    for timed in result["results"].values():
        assert 0 < timed["p50_ms"] <= timed["max_ms"]


@pytest.mark.slow
def test_the_hook_benchmark_times_the_hooks_and_their_peers() -> None:
    run, result = benchmark("hook", "--learnings", "20", "--sessions", "3")
    assert set(result["results"]) == {
        "session_start_hook",
        "session_end_hook",
        "python_start",
        "inject_prepare_in_process",
    }
    # the first session is given its best match; later ones draw their thresholds, so may be given nothing
    given = re.search(r"sessions given learnings: (\d+) of 8", run.stdout)
    assert given is not None
    assert int(given.group(1)) >= 1
    for timed in result["results"].values():
        assert 0 < timed["p50_ms"] <= timed["max_ms"]


def test_the_restart_benchmark_times_each_start_after_a_kill_against_the_interpreters_own() -> None:
    run, result = benchmark("restart", "--restarts", "2", "--learnings", "20")
    assert set(result["results"]) == {"restart", "python_start"}
    assert result["restarts"] == 2
    for timed in result["results"].values():
        assert 0 < timed["p50_ms"] <= timed["max_ms"]
    assert result["ratio_python"] > 1  # a coordinator cannot start before its interpreter has
    assert "times the bare interpreter's start" in run.stdout


def test_the_load_harness_runs_the_same_agents_against_a_cluster_and_reads_every_write_back() -> None:
    run, result = benchmark("load", "--agents", "4", "--duration", "2", "--peers", "", "--cluster", "2")
    cluster = result["cluster"]
    assert set(cluster["coordinators"]) == {"c0", "c1"}
    for part in cluster["coordinators"].values():
        assert part["kinds"]["learn"]["acked"] > 0  # each coordinator took its agents' writes
        assert part["errors"] == 0
        readback = part["readback"]
        assert readback["acked"] == readback["stored"] > 0
        assert readback["lost"] == readback["duplicates"] == readback["unacked_stored"] == 0
    assert cluster["x_single"] > 0
    assert "2 coordinators: " in run.stdout


def test_a_search_and_an_injection_across_two_coordinators_equal_one_coordinators() -> None:
    run, result = benchmark("clustersearch", "--searches", "50", "--injections", "20")
    assert result["searches"] == 50
    # keyword scores over the whole corpus: the pools do not bind, so the same lists in the same order
    assert result["unlike"] == result["merged_worse"] == 0
    assert result["merged"]["p99_ms"] > 0
    assert "merged p99 / single p99: " in run.stdout
    # and the same injections: the home chose what one coordinator chose, from the same draws
    assert (result["injections"], result["inject_unlike"]) == (20, 0)
    assert result["inject_merged"]["p99_ms"] > 0


def test_the_real_swarm_benchmark_drains_a_plan_with_claude_code() -> None:
    _, result = benchmark("realswarm", "--tasks", "4", "--workers", "2", "--nudges", "1", "--spawns", "2")
    figures = result["result"]
    assert figures["tasks"] == {"completed": 4}
    assert figures["overhead"]["p50_ms"] > 0
    assert figures["nudge"]["sent"] == figures["nudge"]["seen"] == 1
    assert figures["mcp_startup"]["groove_mcp"]["p50_ms"] > figures["mcp_startup"]["bare_python"]["p50_ms"]
    assert figures["worker_rss_mb_max"] > 0


def test_the_dashboard_benchmark_times_every_page_the_scrape_and_the_writer_both_ways() -> None:
    _, result = benchmark("ui", "--learnings", "200", "--tasks", "60", "--requests", "3", "--seconds", "0.5")
    assert set(result["pages"]) == {"overview", "learnings", "search", "learning", "sessions", "boards", "board"}
    for timed in [*result["pages"].values(), result["metrics_scrape"]]:
        assert 0 < timed["p50_ms"] <= timed["max_ms"]
    writes = result["writes_per_s"]
    assert writes["without"] > 0
    assert writes["with_dashboards"] > 0
    assert result["dashboard_updates"] >= 5  # each open board got its first fragment at least


# --- every benchmark, run as users run it, at sizes of seconds -----------------------------------------------------

# Modules with a `__main__` run by another benchmark rather than on their own.
# the SQLite and echo peers are subprocesses of the load harness; the fair SQLite peer's agents run in limits'
RUN_BY_OTHERS = {"peers": "load", "fairpeer": "limits"}


def test_every_benchmark_module_has_a_smoke_test() -> None:
    """An option renamed in one benchmark once broke another unseen (`limits`): each must run here."""
    runnable = {p.stem for p in Path("benchmarks").glob("*.py") if '__name__ == "__main__"' in p.read_text()}
    # the tests, and the helper that draws charts for several of them (`drawn_as_committed` runs `plots`)
    tests = "".join(p.read_text() for p in [*Path(__file__).parent.glob("test_*benchmarks.py"), Path(helpers.__file__)])
    smoked = set(re.findall(r'benchmark\(\s*"(\w+)"', tests))
    assert runnable - smoked - set(RUN_BY_OTHERS) == set()
    assert set(RUN_BY_OTHERS.values()) <= smoked


def test_the_storage_benchmark_runs_from_the_command_line() -> None:
    _, result = benchmark("storage", "--writes", "256")
    assert {r["batch"] for r in result["results"]} >= {1, 16}
    assert all(r["script_per_s"] > 0 and r["import_per_s"] > 0 for r in result["results"])


def test_the_fed_writer_benchmark_times_the_writer_beside_a_producer_holding_the_gil() -> None:
    _, result = benchmark("fed", "--producer-us", "0,5", "--writes", "256", "--writers", "1", "--writers", "2")
    assert [(row["producer_us"], row["writers"]) for row in result["results"]] == [(0, 1), (0, 2), (5, 1), (5, 2)]
    assert all(row["writes_per_s"] > 0 for row in result["results"])
    assert result["results"][0]["x_first"] == 1.0


def test_the_writer_benchmark_times_the_batcher_alone() -> None:
    _, result = benchmark("writer", "--batch", "4", "--batches", "5", "--side-by-side", "2")
    # one tier, then a batch spread over seven; each with the writer alone, then a transaction behind it; then two
    # writers side by side in the one process
    rows = [(r["writers"], r["tiers"], r["commit_threads"]) for r in result["results"]]
    assert rows == [(1, 1, 1), (1, 1, 2), (1, 7, 1), (1, 7, 2), (2, 7, 1)]
    assert all(r["batch"] == 4 and r["writes_per_s"] > 0 for r in result["results"])


@pytest.mark.slow
def test_the_load_harness_reads_every_write_back_and_measures_the_peers_and_the_rss_at_rest() -> None:
    run, result = benchmark("load", "--agents", "2", "--duration", "1", "--peers", "sqlite,echo", "--rest-rss")
    assert result["errors"] == result["lost"] == result["duplicates"] == result["unacked_stored"] == 0
    assert result["kinds"]["learn"]["acked"] > 0
    assert set(result["peers"]) == {"sqlite_wal", "zmq_echo"}
    # groove acked writes, so each ratio is positive however far behind a peer a 1 s run on a busy machine leaves it
    sqlite = result["peers"]["sqlite_wal"]["writes_per_s"]
    assert result["ratios"]["sqlite"] == common.ratio(result["writes_per_s"], sqlite) > 0
    echo = result["peers"]["zmq_echo"]["req_per_s"]
    assert result["ratios"]["echo"] == common.ratio(result["writes_per_s"], echo) > 0
    assert result["coordinator"]["rss_mb_at_rest"] > 0
    assert {len(reading) for reading in result["coordinator"]["series"]} == {4}  # with the writes committed
    assert "RSS of a coordinator restarted on the same data" in run.stdout


def test_rss_by_writes_takes_the_first_reading_past_each_mark() -> None:
    series = [(1.0, 0.0, 100.0, 0), (2.0, 0.0, 110.0, 90), (3.0, 0.0, 120.0, 110), (4.0, 0.0, 125.0, 150)]
    series += [(5.0, 0.0, 130.0, 230)]
    assert load.rss_by_writes(series, every=100) == [[110, 120.0], [230, 130.0]]


@pytest.mark.slow
def test_the_limits_benchmark_puts_groove_beside_storage_the_writer_and_the_peers() -> None:
    _, result = benchmark("limits", "--agents", "2", "--in-flight", "1", "--duration", "1", "--writes", "256")
    assert {"groove/storage", "groove/writer", "groove/echo", "groove/sqlite", "groove/sqlite-fair"} <= set(
        result["ratios"]
    )
    assert result["figures"]["sqlite-fair"] > 0  # the fair peer's agents ran and learned
    assert result["readback"]["lost"] == result["readback"]["duplicates"] == 0
    assert result["errors"] == 0


def test_the_ann_benchmark_compares_libraries_on_random_vectors() -> None:
    _, result = benchmark("ann", "--random", "--size", "2000", "--queries", "20", "--libraries", "usearch")
    (row,) = result["results"]
    assert row["library"] == "usearch"
    assert 0 < row["k10_recall_at_10"] <= 1


@pytest.mark.slow
def test_the_injection_benchmark_times_each_kind_of_call() -> None:
    _, result = benchmark("inject", "--learnings", "100", "--sessions", "5")
    for kind in ("no_task", "with_task", "session"):
        assert 0 < result[kind]["p50_ms"] <= result[kind]["p99_ms"]


@pytest.mark.slow
def test_the_search_benchmark_measures_quality_lag_throughput_and_latency() -> None:
    _, result = benchmark(
        "search",
        "--sizes",
        "300",
        "--duration",
        "0.5",
        "--queries",
        "5",
        "--clients",
        "1",  # each writer's learnings are embedded before the searches (≈ 150/s): one writer, half a second
        "--lag-seconds",
        "1",
        "--texts",
        "64",
    )
    assert result["quality"]["hybrid"]["pairs"] > 0
    assert result["lag_100_per_s"]["p50_ms"] > 0
    assert result["embedding"]["worker_texts_per_s"] > 0
    (size,) = result["sizes"]
    assert size["learnings"] >= 300
    assert size["clients_qps"] > 0


@pytest.mark.slow
@pytest.mark.xdist_group("ray")  # Ray's tests share one worker: two Ray clusters at once starve two cores
def test_the_fleets_benchmark_runs_the_swarm_locally_and_on_ray() -> None:
    _, result = benchmark("fleets", "--agents", "1", "--duration", "1")
    assert set(result["acked"]) == {"local", "ray"}
    assert result["acked"]["local"] > 0
    assert result["acked"]["ray"] > 0
    assert result["mismatches"] == {"local": 0, "ray": 0}
    assert result["errors"] == {"local": 0, "ray": 0}


def test_the_memory_benchmark_reports_rss_at_every_mark_and_at_rest() -> None:
    run, result = benchmark("memory", "--preload", "100", "--learnings", "300", "--every", "100", "--rate", "1000")
    assert [m["learnings"] for m in result["marks"]] == [0, 100, 200, 300, 400]
    assert len(result["kb_per_learning"]) == 4
    assert result["rss_mb_at_rest"] > 0
    assert "at rest on the same data" in run.stdout
    assert result["rate"] == 1000
    assert result["marks"][-1]["s"] >= 0.25  # paced: 300 learnings at 1,000 a second


FAULT_PARTS = {"disks": "disk_full,dir_deleted,read_only,os_crash", "processes": "kill_9,hung,hung_agent,cluster_cut"}


@pytest.mark.slow
@pytest.mark.parametrize("faults", list(FAULT_PARTS.values()), ids=list(FAULT_PARTS))
def test_the_faults_benchmark_injects_each_fault_and_loses_nothing(faults: str) -> None:
    _, result = benchmark("faults", "--writers", "2", "--seconds", "0.5", "--faults", faults)
    assert list(result["results"]) == faults.split(",")
    for name, fault in result["results"].items():
        assert fault["acked"] > 0, name
        assert fault["lost"] == fault["duplicated"] == 0, name
        assert fault["recovered_ms"] is not None, name
    # a write whose log sync met the read-only turn was refused but may be stored; nothing else unacked is
    assert {name for name, fault in result["results"].items() if fault["unacked_stored"]} <= {"read_only"}
    for name in {"disk_full", "dir_deleted", "read_only"} & set(result["results"]):
        assert 0 < result["results"][name]["first_error_ms"] < 2000, name
    if "dir_deleted" in result["results"]:
        assert result["results"]["dir_deleted"]["acked_after_fault"] == 0
    if "cluster_cut" in result["results"]:  # told by the clients' timeout: a cut is not told from a slow reply
        assert result["results"]["cluster_cut"]["first_error_ms"] > 0


def test_the_faults_benchmark_refuses_a_fault_it_does_not_know_and_the_smoke_tests_run_every_one() -> None:
    assert sorted(",".join(FAULT_PARTS.values()).split(",")) == sorted(faults.FAULTS)
    argv = [sys.executable, "-m", "benchmarks.faults", "--faults", "kill_9,flood"]
    run = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert run.returncode == 2
    assert "flood: choose among disk_full" in run.stderr


@pytest.mark.slow
def test_the_cores_benchmark_measures_the_write_path_the_embedder_and_the_peers_in_one_run() -> None:
    run, result = benchmark(
        "cores",
        *("--agents", "2", "--in-flight", "2", "--duration", "1", "--commit-threads", "1", "--writers", "2"),
        *("--front-checks", "off,on"),
        # no --cluster here (the load test above runs one): this test stays under 40 s on 2 cores
        *("--embed-devices", "cpu", "--embed-texts", "64", "--cluster", "0", "--writes", "256"),
    )
    # more threads: the batcher's own tests
    rows = [(row["commit_threads"], row["writers"], row["front_checks"]) for row in result["curve"]]
    assert rows == [(1, 2, False), (1, 2, True)]
    assert all(row["per_s"] > 0 and row["bad"] == 0 for row in result["curve"])
    (on,) = result["embedder"]
    off = result["embedder_off"]
    # the defaults' run (one writer is not in the curve): the embedder-on run is set against it
    assert (off["commit_threads"], off["writers"], off["front_checks"]) == (1, 1, True)
    assert off["per_s"] > 0
    assert on["device"] == "cpu"
    assert on["bad"] == 0
    assert on["writes_x_off"] == common.ratio(on["per_s"], off["per_s"])
    (rate,) = result["embedding"]
    assert rate["device"] == "cpu"
    assert rate["texts_per_s"] > 0
    assert result["bare_texts_per_s"] > 0
    assert set(result["peers"]) == {"storage", "sqlite"}
    assert all(value > 0 for value in result["peers"].values())
    assert set(result["ratios"]) == {"groove/storage", "groove/sqlite"}
    steps = [json.loads(line)["step"] for line in run.stderr.splitlines() if line.startswith('{"step"')]
    assert steps[0] == "storage"
    assert steps.count("write_path") == 2  # each figure printed as it was measured


def test_the_performance_page_s_charts_are_drawn_from_their_data_and_cannot_drift(tmp_path: Path) -> None:
    data = Path("docs/data/cores-h200-2026-11-26.json")
    drawn_as_committed(data, tmp_path, 2, "--leave-out", "coordinators_3")
    line = json.loads(data.read_text())
    writes = (tmp_path / "cores-h200-2026-11-26-writes.svg").read_text()
    for row in line["curve"]:
        assert f"{row['per_s']:,.0f} /s" in writes
    assert "coordinators_3" not in writes  # left out: that run's figure is known to be wrong


def _conversation(path: Path) -> Path:
    """A small conversation in LoCoMo's format (the benchmark's own data is not part of groove)."""
    turns = [
        ("Ana", "I finally signed up for the pottery class downtown!"),
        ("Ben", "Nice. I spent the weekend fixing my bike's brakes."),
        ("Ana", "My sister is moving to Lisbon next month."),
        ("Ben", "I adopted a grey cat called Pixel from the shelter."),
    ]
    data = {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": s, "dia_id": f"D1:{i + 1}", "text": t} for i, (s, t) in enumerate(turns[:2])],
        "session_2_date_time": "3:00 pm on 20 May, 2023",
        "session_2": [{"speaker": s, "dia_id": f"D2:{i + 1}", "text": t} for i, (s, t) in enumerate(turns[2:])],
        "qa": [
            {"question": "What class did Ana sign up for?", "answer": "pottery", "evidence": ["D1:1"], "category": 4},
            {"question": "Where is Ana's sister moving?", "answer": "Lisbon", "evidence": ["D2:1"], "category": 4},
            {"question": "What is the cat called?", "answer": "Pixel", "evidence": ["D2:2; D9:9"], "category": 1},
            {"question": "Who has no answer?", "answer": "", "evidence": [], "category": 5},
        ],
    }
    path.write_text(json.dumps(data))
    return path


@pytest.mark.slow
def test_the_relevance_benchmark_ranks_each_set_by_groove_minilm_and_bm25_and_learns_from_sessions(
    tmp_path: Path,
) -> None:
    conversation = _conversation(tmp_path / "conv-x.json")
    _, result = benchmark("relevance", "--locomo", str(conversation), "--questions", "4", "--learn", "--fit")
    assert set(result["sets"]) == {"coding-dev", "coding-heldout", "conv-x"}
    tiny = result["sets"]["conv-x"]
    assert (tiny["questions"], tiny["learnings"]) == (3, 4)  # category 5 and evidence naming no turn left out
    for ranker in ("groove", "minilm", "bm25"):
        assert set(tiny[ranker]["by_category"]) == {"single-hop", "multi-hop"}
        assert all(0 <= tiny[ranker][m] <= 1 for m in ("hit@1", "recall@5", "recall@10", "mrr", "ndcg@10"))
    assert tiny["groove"]["hit@1"] == 1.0  # three questions over four turns: the words alone find each
    assert result["pooled"]["locomo"]["groove"] == {k: v for k, v in tiny["groove"].items() if k != "by_category"}
    learn = result["learn"]["conv-x"]
    assert learn["sessions"] == 2
    assert learn["helpful_ratings"] >= 1
    assert set(learn["after"]) == set(learn["before"])
    assert set(result["fit"]["folds"]) == {"coding-dev", "conv-x"}  # the held-out coding questions never tune


def test_relevance_metrics_score_a_ranking_against_the_relevant_keys() -> None:
    from benchmarks.relscore import metrics
    from benchmarks.relsets import Question

    questions = [Question("q1", frozenset({"a"}), "x"), Question("q2", frozenset({"b", "c"}), "x")]
    got = metrics([["a", "z"], ["z", "b"]], questions)
    assert got["hit@1"] == 0.5
    assert got["recall@5"] == 0.75
    assert got["mrr"] == 0.75
    assert got["ndcg@10"] == pytest.approx((1 + (1 / 1.5849625) / (1 + 1 / 1.5849625)) / 2, rel=1e-3)


def test_the_relevance_benchmark_refuses_a_file_that_is_not_a_conversation_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"qa": []}')
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.relevance", "--locomo", str(bad)],
        check=False,
        capture_output=True,
        text=True,
    )
    assert run.returncode != 0
    assert "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines() == [
        f"Error: {bad} holds no dialog turns or no questions of categories 1-4 with evidence"
    ]


@pytest.mark.slow
def test_the_query_first_benchmark_times_searches_under_writes_with_and_without_the_embedder() -> None:
    _, result = benchmark("queryfirst", "--agents", "2", "--in-flight", "2", "--duration", "2")
    for embedder in ("default", "none"):
        assert result[embedder]["search"]["done"] > 0
        assert result[embedder]["learn"]["done"] > 0
    assert result["default"]["coordinator"]["query_embedding_ms"]["samples"] > 0  # the coordinator's own figure
    assert result["none"]["coordinator"]["query_embedding_ms"]["samples"] == 0
    assert result["search_vs_none"]["p50_ms"] > 0


@pytest.mark.slow
def test_the_soak_benchmark_samples_the_backlog_and_the_memory_and_waits_for_the_drain() -> None:
    _, result = benchmark("soak", "--agents", "1", "--rate", "20", "--duration", "4", "--every", "1")
    assert result["requests"] > 0
    assert result["errors"] == 0
    assert len(result["samples"]) >= 3
    assert result["samples"][-1]["queue"] == 0  # drained before the last sample
    assert result["samples"][-1]["learnings"] > 0
    assert result["samples"][-1]["memory_mb"]["interpreter"] > 0  # memory by part, sampled with the rest
    assert result["drained_after_load_s"] >= 0


def test_the_relevance_charts_are_drawn_from_their_data_and_cannot_drift(tmp_path: Path) -> None:
    data = Path("docs/data/relevance-2cpu-2026-11-28.json")
    drawn_as_committed(data, tmp_path, 3)
    line = json.loads(data.read_text())
    hit1 = (tmp_path / "relevance-2cpu-2026-11-28-hit1.svg").read_text()
    assert f"{line['pooled']['locomo']['groove']['hit@1']:.3f}" in hit1


def test_the_async_client_benchmark_times_one_async_client_against_threads_of_sync_ones() -> None:
    _, result = benchmark("asyncclient", "--concurrency", "4", "--calls", "40")
    assert result["calls"] == 40
    for way in ("threads", "async"):
        assert 0 < result[way]["p50_ms"] <= result[way]["p99_ms"]
    assert result["async_vs_threads"]["p50_ms"] == common.ratio(result["async"]["p50_ms"], result["threads"]["p50_ms"])
