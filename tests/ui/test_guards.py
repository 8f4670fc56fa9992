"""What the dashboard refuses and survives: actions without the token, from another site or with a forged form
(refused, nothing changed); a coordinator that goes away and comes back (the page says so, then recovers);
and `/metrics`, parsed as Prometheus does, against the operations just made."""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from prometheus_client.parser import text_string_to_metric_families

from groove.client import BadRequest, GrooveClient
from groove.coordinator.net.checks import CHECKED
from groove.protocol import constants as C
from groove.protocol.keys import CurveClient, generate_key_pair
from groove.swarm.fleet import stop_process
from groove.ui.metrics import METRICS
from tests.helpers import RunningCoordinator, learning, wait_for
from tests.ui.conftest import TOKEN, Dashboard, start_dashboard


def _post(url: str, fields: dict[str, str], headers: dict[str, str] | None = None) -> int:
    request = urllib.request.Request(url, data=urllib.parse.urlencode(fields).encode(), headers=headers or {})
    opener = urllib.request.build_opener(_NoRedirect())
    try:
        return int(opener.open(request, timeout=10).status)
    except urllib.error.HTTPError as exc:
        return exc.code


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *_: object) -> None:
        return None


def _review_waiting(client: GrooveClient) -> tuple[str, str]:
    task = f"guard-{uuid.uuid4().hex[:6]}"
    memory = client.create_memory("/srv/guard", task, "guard the actions")
    client.add_tasks(memory, [{"id": task, "title": "needs a look", "needs_review": True}])
    client.claim_task(memory, "coder-9", lease_ms=60_000)
    client.complete_task(task, "coder-9", "done")
    return memory, task


def test_an_action_without_the_token_from_another_site_or_with_a_forged_form_changes_nothing(
    page: Page, dashboard: Dashboard, client: GrooveClient
) -> None:
    memory, task = _review_waiting(client)
    fields = {"task_id": task, "status": "approved", "back": f"/board/{memory}"}
    url = f"{dashboard.url}/actions/task-review"
    # no session at all, then a wrong token at login (no cookie is set)
    assert _post(url, fields) == 403
    response = page.goto(f"{dashboard.url}/login?token=wrong-{TOKEN}")
    assert response is not None
    assert response.status == 403
    assert page.context.cookies() == []
    # logged in, but a form without its CSRF token, and one posted from another site's page
    dashboard.login(page)
    (cookie,) = page.context.cookies()
    session = {"Cookie": f"{cookie['name']}={cookie['value']}"}
    assert _post(url, fields, session) == 403
    page.goto(f"{dashboard.url}/board/{memory}")
    csrf = page.locator('input[name="csrf"]').first.get_attribute("value") or ""
    assert _post(url, fields | {"csrf": csrf}, session | {"Origin": "http://evil.example"}) == 403
    assert _post(url, fields | {"csrf": "0" * 64}, session) == 403
    assert client.task(task).status == "review"
    # an action the coordinator refuses is shown as its refusal, and nothing changes either
    status = _post(f"{dashboard.url}/actions/task-review", {"task_id": task, "status": "bogus", "csrf": csrf}, session)
    assert status == 303
    assert client.task(task).status == "review"
    # the same form, whole, from the dashboard's own page: done
    assert _post(url, fields | {"csrf": csrf}, session) == 303
    assert client.task(task).status == "completed"
    # a link made elsewhere cannot put words on the page: an outcome shows only with its signature
    page.goto(f"{dashboard.url}/?done=Your+session+expired%2C+log+in+at+evil.example")
    expect(page.locator("main")).to_be_visible()
    assert page.locator(".flash").count() == 0
    # nor open live streams for topics that are not boards
    for topic in ("nothing", "board:not-an-id"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{dashboard.url}/events/{topic}", timeout=10)
        assert refused.value.code == 404


def test_a_coordinator_that_goes_away_and_comes_back_is_shown_then_recovered(
    page: Page, coordinator_factory: Callable[..., RunningCoordinator], tmp_path: Path
) -> None:
    coordinator = coordinator_factory()
    dashboard = start_dashboard(coordinator.endpoint, tmp_path / "ui.log")
    try:
        page.goto(dashboard.url + "/")
        page.wait_for_function("document.querySelector('[data-live]').dataset.updated !== undefined")
        coordinator.stop()  # gone, then started again on the same endpoint
        expect(page.locator("#banner")).to_contain_text("Coordinator not answering", timeout=20_000)
        coordinator.restart()
        expect(page.locator("#banner")).to_be_hidden(timeout=20_000)
        expect(page.locator("#tiers")).to_contain_text("user")
    finally:
        stop_process(dashboard.proc, grace=10)


def _scrape(dashboard: Dashboard) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(dashboard.url + "/metrics", timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    families = list(text_string_to_metric_families(text))
    # every metric served is declared (with its help text), and every declared one is served
    assert {(f.name, f.documentation) for f in families} == {(m.name, m.help) for m in METRICS}
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in families
        for sample in family.samples
    }


def test_metrics_parse_as_prometheus_and_count_the_operations_just_made(
    dashboard: Dashboard, client: GrooveClient
) -> None:
    before = _scrape(dashboard)
    ids = client.put_learnings([learning(n=i) for i in range(3)]).ids
    client.put_learnings([learning(n=9)])
    with pytest.raises(BadRequest):
        client.call(C.OP_LEARNING_GET, {"id": "not-an-id"})
    client.record_outcome([(ids[0], "helpful"), (ids[1], "contradicted")])
    memory, _ = _review_waiting(client)
    client.send_nudge("coder-9", memory, "look here", "lead")
    (nudge,) = client.poll_nudges("coder-9")
    client.ack_nudges("coder-9", [nudge.id])
    after = _scrape(dashboard)

    def grew(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert after[("groove_up", ())] == 1
    assert grew("groove_requests_total", op="learning.put", outcome="ok") == 2
    assert grew("groove_requests_total", op="learning.get", outcome="bad_request") == 1
    assert grew("groove_outcomes_total", kind="helpful") == 1
    assert grew("groove_outcomes_total", kind="contradicted") == 1
    assert grew("groove_nudges_sent_total") == 1
    assert grew("groove_nudges_acked_total") == 1
    assert grew("groove_writes_committed_total") >= 2
    assert grew("groove_batch_size_count") >= 2
    assert grew("groove_commit_duration_seconds_count") >= 2
    assert after[("groove_request_duration_seconds_bucket", (("le", "+Inf"), ("op", "learning.put")))] >= 2
    # board state is sampled every 5 s: the task in review shows by the next sample
    in_review = ("groove_tasks", (("status", "review"),))
    wait_for(lambda: _scrape(dashboard).get(in_review, 0) >= 1, "the task in review in groove_tasks", timeout=15)
    assert after[("groove_learnings", (("tier", "user"),))] >= 4
    assert after[("groove_vector_work_seconds", ())] >= 0  # no vectors stored in this run: present, and 0
    assert after[("groove_embedding_duty", ())] == 1.0  # no embedder in this run: nothing slowed
    # the front checks every write it can (the default): each one made here, and nothing else
    checked = sum(grew("groove_requests_total", op=op, outcome="ok") for op in CHECKED)
    assert checked >= 8  # two puts, an outcome, the board's writes and three nudge writes at least
    assert grew("groove_writes_checked_in_front_total") == checked


def test_under_curve_the_dashboards_own_key_decides_what_it_may_do(
    page: Page, coordinator_factory: Callable[..., RunningCoordinator], tmp_path: Path
) -> None:
    authorized = tmp_path / "authorized"
    authorized.mkdir()
    secrets = {}
    for name, role in (("alice", "agent"), ("cora", "curator"), ("root", "admin")):
        metadata = {"role": role} | ({"orgs": "acme"} if role == "curator" else {})
        public, secrets[name] = generate_key_pair(tmp_path / "keys", name, metadata)
        (authorized / public.name).write_bytes(public.read_bytes())
    secured = coordinator_factory("--curve", "--authorized-keys", str(authorized))
    server_key = secured.data_dir / "server.key"
    with GrooveClient(secured.endpoint, timeout=20, curve=CurveClient.load(str(server_key), secrets["root"])) as admin:
        memory, task = _review_waiting(admin)
        for name, expected in (("alice", "Refused: unauthorized"), ("cora", f"{task} reviewed (approved)")):
            keys = ("--server-key", str(server_key), "--key", str(secrets[name]))
            dashboard = start_dashboard(secured.endpoint, tmp_path / f"ui-{name}.log", *keys)
            try:
                dashboard.login(page)
                page.goto(f"{dashboard.url}/board/{memory}")
                expect(page.locator("#reviews")).to_contain_text(task)  # reading is an agent's right
                page.locator(f'[data-action="approved-{task}"]').click()
                expect(page.locator(".refusal" if name == "alice" else ".flash")).to_contain_text(expected)
                assert admin.task(task).status == ("review" if name == "alice" else "completed")
            finally:
                stop_process(dashboard.proc, grace=10)
