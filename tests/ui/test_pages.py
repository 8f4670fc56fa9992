"""Each page of the dashboard in a real browser, against a coordinator holding real data: what a person sees."""

from __future__ import annotations

import re
import uuid

from playwright.sync_api import Page, expect

from groove.client import GrooveClient
from tests.helpers import learning
from tests.ui.conftest import Dashboard, shoot


def _memory(client: GrooveClient, tasks: list[dict[str, object]]) -> str:
    memory = client.create_memory("/srv/shop", f"checkout {uuid.uuid4().hex[:6]}", "ship refunds", ["no new deps"])
    client.add_tasks(memory, tasks)
    return memory


def test_the_overview_shows_health_tiers_and_agents(page: Page, dashboard: Dashboard, client: GrooveClient) -> None:
    client.hello("coder-7", role="coder", status="working", task_id="t1")
    client.put_learnings([learning(n=i) for i in range(3)])
    page.goto(dashboard.url + "/")
    expect(page.locator("#agents")).to_contain_text("coder-7")
    expect(page.locator("#agents")).to_contain_text("coder")
    expect(page.locator("#tiers")).to_contain_text("user")
    expect(page.locator("#memory")).to_contain_text("interpreter")  # the coordinator's memory by part
    expect(page.locator("#memory")).to_contain_text("rocksdb")
    expect(page.locator(".card", has_text="Writes/s")).to_be_visible()
    expect(page.locator(".card", has_text="Commit p99")).to_be_visible()
    # the live part is replaced by the server's events without a reload
    page.wait_for_function("document.querySelector('[data-live]').dataset.updated !== undefined")
    shoot(page, "overview")


def test_a_search_finds_a_learning_and_its_page_shows_outcomes_confidence_and_sessions(
    page: Page, dashboard: Dashboard, client: GrooveClient
) -> None:
    lid = client.learn("global", "solution", "Wrap refunds in Result types", "A refund that fails is a value.")
    client.relate(lid, "related_to", client.learn("global", "solution", "Refunds need an audit row", "Always."))
    session = client.inject("sess-refund", task="refunds result types", seed=3)
    assert lid in [item.learning.id for item in session.learnings]
    client.close_session([(lid, "helpful")], injection_id=session.injection_id, success=True)
    page.goto(dashboard.url + "/learnings")
    page.get_by_label("search text").fill("refunds result types")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("#results")).to_contain_text("Wrap refunds in Result types")
    expect(page).to_have_title("learnings · groove")
    shoot(page, "learnings")
    page.get_by_role("link", name="Wrap refunds in Result types").click()
    expect(page).to_have_url(re.compile(f"/learnings/{lid}$"))
    expect(page.locator("#insight")).to_have_text("A refund that fails is a value.")
    expect(page.locator("#outcomes")).to_contain_text("helpful")
    expect(page.locator("#given")).to_contain_text("sess-refund")
    expect(page.locator("svg.series")).to_have_count(1)  # confidence over time
    expect(page.locator("svg.posterior")).to_have_count(1)
    expect(page.locator("svg.relations")).to_contain_text("Refunds need an audit row")
    shoot(page, "learning")


def test_a_script_in_a_learnings_text_is_shown_as_text_and_never_run(
    page: Page, dashboard: Dashboard, client: GrooveClient
) -> None:
    hostile = "<script>window.pwned = 1</script><img src=x onerror='window.pwned = 2'>"
    lid = client.learn("global", "solution", hostile, hostile)
    for path in (f"/learnings/{lid}", "/learnings"):
        page.goto(dashboard.url + path)
        expect(page.get_by_text("<script>window.pwned = 1</script>").first).to_be_visible()
        assert page.evaluate("window.pwned") is None


def test_the_sessions_page_plots_each_parameters_posterior_and_lists_injections(
    page: Page, dashboard: Dashboard, client: GrooveClient
) -> None:
    client.learn("global", "solution", "Sessions page fact", "Something true.")
    given = client.inject("sess-plotted", seed=5)
    client.close_session(injection_id=given.injection_id, success=True)
    page.goto(dashboard.url + "/sessions")
    expect(page.locator("#params svg.posterior")).to_have_count(len(client.params()))
    expect(page.locator("#injections")).to_contain_text("sess-plotted")
    shoot(page, "sessions")


def test_a_task_turns_from_running_to_completed_on_the_open_board(
    page: Page, dashboard: Dashboard, client: GrooveClient
) -> None:
    memory = _memory(client, [{"id": "live-a", "title": "write the refund"}, {"id": "live-b", "title": "test it",
                                                                               "depends_on": ["live-a"]}])  # fmt: skip
    task = client.claim_task(memory, "coder-1", lease_ms=60_000)
    assert task is not None
    client.start_task(task.id, "coder-1")
    client.send_nudge("coder-1", memory, "mind the currency rounding", "lead")
    page.goto(f"{dashboard.url}/board/{memory}")
    expect(page.locator('.dag [data-task="live-a"]')).to_have_attribute("data-status", "in_progress")
    expect(page.locator("#leases")).to_contain_text("coder-1")
    expect(page.locator("#nudges")).to_contain_text("mind the currency rounding")
    page.evaluate("window.notReloaded = true")
    client.complete_task("live-a", "coder-1", "refund written")
    expect(page.locator('.dag [data-task="live-a"]')).to_have_attribute("data-status", "completed")
    expect(page.locator("#task-live-a .status-cell")).to_have_text("completed")
    # the next task fails once: its retry shows with the agent's error, still without a reload
    assert client.claim_task(memory, "coder-1", lease_ms=60_000) is not None
    client.fail_task("live-b", "coder-1", "flaky fixture")
    expect(page.locator("#retries")).to_contain_text("flaky fixture")
    assert page.evaluate("window.notReloaded") is True
    shoot(page, "board")


def test_a_review_approved_through_the_button_is_stored(page: Page, dashboard: Dashboard, client: GrooveClient) -> None:
    memory = _memory(client, [{"id": "rev-a", "title": "refund policy", "needs_review": True}])
    client.claim_task(memory, "coder-2", lease_ms=60_000)
    client.complete_task("rev-a", "coder-2", "policy drafted")
    assert client.task("rev-a").status == "review"
    page.goto(f"{dashboard.url}/board/{memory}")
    expect(page.locator('[data-action="approved-rev-a"]')).to_be_hidden()  # read-only until logged in
    dashboard.login(page)
    page.goto(f"{dashboard.url}/board/{memory}")
    page.locator('[data-action="approved-rev-a"]').click()
    expect(page.locator(".flash")).to_contain_text("rev-a reviewed (approved)")
    stored = client.task("rev-a")
    assert (stored.status, stored.review_status, stored.reviewed_by) == ("completed", "approved", "dashboard")


def test_unknown_ids_get_a_not_found_page_and_bad_ones_a_clear_refusal(page: Page, dashboard: Dashboard) -> None:
    missing = "01a20000-0000-7000-8000-000000000000"
    for path, status, text in (
        (f"/learnings/{missing}", 404, "no learning"),
        (f"/board/{missing}", 404, "no working memory"),
        ("/learnings/not-an-id", 400, "not a UUIDv7"),
        ("/no/such/page", 404, "nothing at /no/such/page"),
    ):
        response = page.goto(dashboard.url + path)
        assert response is not None
        assert response.status == status, path
        expect(page.locator("main")).to_contain_text(text)
        assert "Traceback" not in page.content()


def test_a_curator_reprioritises_a_task_and_archives_a_learning_from_the_pages(
    page: Page, dashboard: Dashboard, client: GrooveClient
) -> None:
    memory = _memory(client, [{"id": "prio-a", "title": "later"}, {"id": "prio-b", "title": "sooner"}])
    lid = client.learn("global", "solution", "An outdated lesson", "No longer true.")
    dashboard.login(page)
    page.goto(f"{dashboard.url}/board/{memory}")
    page.get_by_label("priority of prio-b").fill("9")
    page.locator('[data-action="prioritize-prio-b"]').click()
    expect(page.locator(".flash")).to_contain_text("prio-b now has priority 9")
    assert client.task("prio-b").priority == 9
    page.goto(f"{dashboard.url}/learnings/{lid}")
    page.get_by_label("reason").fill("superseded")
    page.locator('[data-action="archive"]').click()
    expect(page.locator(".flash")).to_contain_text(f"learning {lid} archived")
    assert client.get(lid).archived
    expect(page.locator("dd", has_text="archived")).to_be_visible()


def test_a_curator_approves_an_organisations_proposal_from_the_learnings_page(
    page: Page, dashboard: Dashboard, client: GrooveClient
) -> None:
    lid = client.learn("project:/srv/shop", "solution", "Pin the toolchain", "rust-toolchain.toml keeps CI stable.")
    review = client.propose(lid, "acme", note="worth sharing").review_id
    dashboard.login(page)
    page.goto(f"{dashboard.url}/learnings?org=acme")
    expect(page.locator("#proposals")).to_contain_text("Pin the toolchain")
    page.locator(f'[data-action="approve-{review}"]').click()
    expect(page.locator(".flash")).to_contain_text(f"review {review}: approved")
    (decided,) = [r for r in client.reviews("acme", status=None) if r.review_id == review]
    assert (decided.status, decided.curator) == ("approved", "dashboard")
    assert decided.learning_id is not None
    assert client.get(decided.learning_id).tier == "enterprise:acme"
