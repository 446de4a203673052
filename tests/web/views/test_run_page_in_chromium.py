"""Issue 26 item 5 at both sizes: a run's page leads with its result (passed, failed, error,
inconclusive), whether it counts and why; while it runs it names the active test and how long
it has been running; the "queued" notice goes once the run starts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils.timezone import now

from dashboard.domain.catalog import Outcome
from dashboard.domain.models import Run, TestResult
from tests import factories
from tests.chromium import SIZES, accessibility_problems, log_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
]


def _on_first_screen(page, selector: str, size: str) -> bool:
    top = page.locator(selector).evaluate("e => e.getBoundingClientRect().top")
    return top < SIZES[size]["height"]


def test_a_run_leads_with_its_result_and_whether_it_counts(sized) -> None:
    page, size = sized
    lab = factories.cluster("calico-lab", lab=True, emulated=True)
    errored = factories.run(
        lab, dict(factories.PASSING, **{"pod-to-service": Outcome.ERROR}), emulated=True
    )
    page.goto(f"/runs/{errored.id}/")
    lead = page.locator(".run-result")
    assert lead.get_attribute("data-result") == "error"
    assert lead.locator("h2").inner_text().endswith("Error")
    assert "The harness could not decide: pod-to-service" in lead.inner_text()
    assert "Does not count" in lead.inner_text() and "emulated" in lead.inner_text()
    assert _on_first_screen(page, ".run-result .run-counts", size)
    assert "8 of 8 tests have an outcome" not in page.locator("main").inner_text()
    assert accessibility_problems(page) == [], size

    real = factories.cluster("cilium-prod", plugin_slug="cilium")
    good = factories.run(real)
    page.goto(f"/runs/{good.id}/")
    lead = page.locator(".run-result")
    assert lead.get_attribute("data-result") == "passed"
    assert lead.locator(".run-counts").get_attribute("data-counts") == "counted"
    assert "two-out-of-tree-plugins" in lead.inner_text()

    skipped = factories.run(real, dict.fromkeys(factories.PASSING, Outcome.SKIPPED))
    page.goto(f"/runs/{skipped.id}/")
    assert page.locator(".run-result").get_attribute("data-result") == "inconclusive"


def test_a_running_run_names_its_active_test_and_the_queued_notice_goes(
    sized, maintainer, monkeypatch
) -> None:
    page, size = sized
    monkeypatch.setattr("dashboard.domain.runs.dispatch", lambda run_id: True)
    cluster = factories.cluster("calico-a")
    log_in(page, "maria", "maria-password")
    page.goto("/clusters/calico-a/")
    page.select_option("#battery", "basic")
    page.click("text=Run now")
    notice = page.locator(".messages li.run-queued")
    assert "queued" in notice.inner_text()
    run = Run.objects.get(cluster=cluster)
    started = now() - timedelta(seconds=90)
    Run.objects.filter(pk=run.pk).update(state=Run.State.RUNNING, started=started)
    TestResult.objects.create(
        run=run,
        test_key="declare-sctp-ports",
        outcome=Outcome.PASSED,
        finished=started + timedelta(seconds=30),
    )
    page.wait_for_selector('.run-result[data-result="running"]')
    assert notice.count() == 0  # gone once the run started
    active = page.locator(".active-test")
    assert active.get_attribute("data-test") == "hostport-kubenet"
    assert "for 6" in active.inner_text()  # about 60 s since the first test finished
    assert _on_first_screen(page, ".active-test", size)
