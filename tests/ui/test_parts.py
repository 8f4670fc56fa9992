"""The dashboard's pure parts, without a browser: charts, the live hub, addresses, redirects and errors."""

from __future__ import annotations

import asyncio
import re

import pytest

from groove.cli.options import host_port
from groove.cli.ui import parse_bind
from groove.client import BadRequest, Conflict, GrooveTimeout, NotFound
from groove.client.errors import Busy
from groove.ui import charts
from groove.ui.actions import ACTIONS
from groove.ui.app import _safe_next
from groove.ui.live import Hub, sse
from groove.ui.metrics import METRICS
from groove.ui.source import CoordinatorDown, Missing, Refused, Source
from tests.helpers import ROOT


def test_the_beta_density_integrates_to_one_and_its_plot_marks_the_mean() -> None:
    for alpha, beta in ((1, 1), (2, 5), (30, 3)):
        n = 4000
        area = sum(charts.beta_pdf((i + 0.5) / n, alpha, beta) for i in range(n)) / n
        assert area == pytest.approx(1, abs=0.01)
    svg = str(charts.beta_density(2, 6, label="budget"))
    assert "mean 0.25" in svg
    assert 'aria-label="budget Beta(2.00, 6.00)"' in svg


def test_a_task_graph_is_laid_out_by_depth_and_escapes_every_text() -> None:
    nodes = [
        charts.Node("c", "third", "pending", ("b", "a")),
        charts.Node("a", "<b>first</b>", "completed"),
        charts.Node("b", "second", "in_progress", ("a", "elsewhere")),  # a dependency not drawn is left out
    ]
    assert charts.layers(nodes) == {"a": 0, "b": 1, "c": 2}
    svg = str(charts.dag(nodes))
    assert "<b>" not in svg
    assert "&lt;b&gt;first&lt;/b&gt;" in svg
    assert svg.count("<line") == 3  # a->b, a->c, b->c
    assert re.search(r'data-task="b" data-status="in_progress"', svg)
    # a cycle (a board refuses them) is cut rather than looping
    assert set(charts.layers([charts.Node("x", "x", "pending", ("y",)), charts.Node("y", "y", "pending", ("x",))])) == {
        "x",
        "y",
    }


def test_small_charts_draw_what_they_have() -> None:
    assert "<polyline" not in str(charts.sparkline([1.0]))
    assert "<polyline" in str(charts.sparkline([1.0, 3.0, 2.0]))
    assert str(charts.series([(0, 0.5), (10, 0.7)])).count("<circle") == 2
    star = str(charts.star("<i>centre</i>", [("neighbour <script>", "related_to", "/learnings/x")]))
    assert "<script>" not in star
    assert "<i>" not in star


def test_server_sent_events_put_each_line_of_the_data_in_its_own_field() -> None:
    assert sse("fragment", "<p>a</p>\n<p>b</p>") == "event: fragment\ndata: <p>a</p>\ndata: <p>b</p>\n\n"


def test_one_render_a_second_serves_every_listener_and_only_changes_are_sent() -> None:
    renders: list[str] = []

    def render(topic: str) -> str:
        renders.append(topic)
        return "same" if len(renders) < 3 else "changed"

    async def run() -> list[list[str]]:
        hub = Hub(render, interval=1.0)
        got: list[list[str]] = [[], []]

        async def listen(into: list[str]) -> None:
            async for event in hub.listen("overview"):
                if not event.startswith(":"):
                    into.append(event)

        tasks = [asyncio.create_task(listen(into)) for into in got]
        await asyncio.sleep(3.5)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        assert hub.watched() == []  # the last listener gone, the poll stops
        return got

    got = asyncio.run(run())
    assert 3 <= len(renders) <= 5  # about one a second for both pages together, not one per page
    for events in got:
        assert events == [sse("fragment", "same"), sse("fragment", "changed")]


def test_a_bind_address_is_host_and_port() -> None:
    assert parse_bind("127.0.0.1:5580") == ("127.0.0.1", 5580)
    with pytest.raises(ValueError, match="HOST:PORT"):
        host_port("h:0", "h:1")  # port 0 only where the system may pick one
    assert parse_bind("[::1]:0") == ("::1", 0)
    for bad in ("nohost", ":80", "h:99999", "h:x"):
        with pytest.raises(ValueError, match="HOST:PORT"):
            parse_bind(bad)


def test_an_action_only_sends_the_browser_back_to_this_site() -> None:
    assert _safe_next("/board/x?y=1") == "/board/x?y=1"
    for elsewhere in ("https://evil.example/", "//evil.example/x", "javascript:alert(1)", "", None):
        assert _safe_next(elsewhere) == "/"


def test_client_errors_become_the_pages_errors() -> None:
    source = Source("tcp://127.0.0.1:9", None, timeout=1.0)
    cases: list[tuple[Exception, type[Exception]]] = [
        (NotFound("not_found", "no task x"), Missing),
        (BadRequest("bad_request", "bad"), Refused),
        (Conflict("conflict", "not in review"), Refused),
        (Busy("busy", "queue full"), CoordinatorDown),
        (GrooveTimeout("no reply"), CoordinatorDown),
    ]
    try:
        for raised, shown in cases:

            def fail(_: object, raised: Exception = raised) -> None:
                raise raised

            with pytest.raises(shown):
                source.call(fail)
    finally:
        source.close()


def test_an_action_missing_a_field_is_refused_before_the_coordinator_is_asked() -> None:
    for name, fields in (("task-review", {"task_id": "t"}), ("nudge", {"memory_id": "m", "target": " "})):
        with pytest.raises(Refused, match="missing"):
            ACTIONS[name](None, fields, "dashboard")  # type: ignore[arg-type]


def test_the_dashboard_page_documents_every_metric_with_its_help_text() -> None:
    readme = (ROOT / "docs" / "dashboard.md").read_text()
    for metric in METRICS:
        name = metric.name + ("_total" if metric.kind == "counter" else "")
        assert f"| `{name}` | {metric.kind} | {metric.help} |" in readme, name
