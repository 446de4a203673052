"""Issue 26 item 4, as a visitor at both sizes: `/` says what is missing and what to do for each
unmet criterion, groups the evidence that does not count by reason behind a disclosure, names no
setting and breaks no test key mid-word, and on a phone what no longer holds is on the first
screen. After issue 39 a fresh install is GA from the KEP's history: what is missing is what the
GA criteria lack, and the alpha → beta criteria are folded below."""

from __future__ import annotations

import pytest

from dashboard.domain.catalog import Outcome
from dashboard.domain.models import Run
from tests import factories
from tests.chromium import SIZES, accessibility_problems

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
]


def _lab_history() -> None:
    """What the demo has: emulated lab clusters, a periodic job among them, many runs."""
    lab = factories.cluster("calico-iptables", lab=True, emulated=True)
    other = factories.cluster(
        "cilium-ipvs", plugin_slug="cilium", proxier="ipvs", lab=True, emulated=True
    )
    schedule = factories.schedule(lab, interval_minutes=5)
    for i in range(8):
        factories.run(
            lab,
            battery="basic",
            trigger=Run.Trigger.PERIODIC,
            schedule=schedule,
            days_ago=0.01 * (8 - i),
        )
        factories.run(
            other, dict(factories.PASSING, **{"hostport-kubenet": Outcome.SKIPPED}), days_ago=i
        )
    factories.submission("antrea", days_ago=2, kubernetes_version="1.29.3")  # below the floor


def test_the_readiness_page_says_what_is_missing_and_what_to_do(sized) -> None:
    page, size = sized
    _lab_history()
    page.goto("/")
    todo = page.locator(".glance ul.alarms li")
    assert todo.evaluate_all("els => els.map(e => e.dataset.alarm)") == [
        "two-out-of-tree-plugins",
        "iptables-and-ipvs",
    ]
    lines = todo.all_inner_texts()
    assert "To do:" in lines[0] and "register a real cluster" in lines[0]
    assert "To do:" in lines[1]
    page.locator("details.past summary").first.click()  # alpha → beta, reached upstream
    text = page.locator("main").inner_text()
    assert "needs 3 conclusive periodic basic runs in a row: 0 so far" in text
    assert "READINESS_" not in text
    # The 8 emulated periodic runs are one group, not 8 repetitions of the same sentence.
    group = page.locator('[data-criterion="periodic-basic-passing"] details.not-counted-group')
    assert group.count() == 1
    assert (
        group.locator("summary")
        .inner_text()
        .endswith("3 runs on emulated clusters (the lab): never counted")
    )
    assert not group.locator("ul.evidence").is_visible()  # behind the disclosure
    assert text.count("emulated evidence never counts") <= 2, text
    broken = page.evaluate(
        """() => [...document.querySelectorAll('.card header code, ul.todo a')]
             .filter(e => e.getClientRects().length > 1 || e.getBoundingClientRect().height > 2.2 * parseFloat(getComputedStyle(e).fontSize))
             .map(e => e.textContent)"""
    )
    assert broken == [], broken
    if size == "phone":
        top = page.locator(".glance ul.alarms").evaluate(
            "e => e.getBoundingClientRect().top + window.scrollY"
        )
        assert top < SIZES["phone"]["height"], top
    assert accessibility_problems(page) == [], size
