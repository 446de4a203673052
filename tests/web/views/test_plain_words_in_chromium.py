"""Issue 26 item 8, as a maintainer at both sizes: audit actions read as sentences, fingerprint
facts are labelled in words (no "cni mismatch: unknown" when the answer is no), flakiness needs
a minimum number of verdicts and never counts harness errors, passed periodic runs get no ✘, and
"Beat" is explained."""

from __future__ import annotations

import pytest

from dashboard.domain.catalog import Outcome
from dashboard.domain.models import Run
from tests import factories
from tests.chromium import accessibility_problems, log_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
]


def test_the_pages_speak_in_words(sized, maintainer) -> None:
    page, size = sized
    cluster = factories.cluster("calico-ipvs", proxier="ipvs", approved=False)
    schedule = factories.schedule(cluster, interval_minutes=5)
    runs = []
    for i, outcome in enumerate([Outcome.PASSED, Outcome.ERROR, Outcome.PASSED]):
        runs.append(
            factories.run(
                cluster,
                dict(factories.PASSING, **{"declare-sctp-ports": outcome}),
                battery="basic",
                trigger=Run.Trigger.PERIODIC,
                schedule=schedule,
                days_ago=0.01 * (3 - i),
                emulated=True,
            )
        )
    Run.objects.filter(pk=runs[-1].pk).update(
        fingerprint={
            "proxier_detected": "ipvs",
            "kube_proxy_mode": "ipvs",
            "proxier_source": "proxyMode",
            "cni_detected": "calico",
            "cni_mismatch": None,
            "emulated": True,
        }
    )
    log_in(page, "maria", "maria-password")

    page.goto("/clusters/calico-ipvs/")
    page.click("button:has-text('Approve')")
    facts = page.locator("dl.fingerprint").first.inner_text()
    assert "kube-proxy mode, read from /proxyMode" in facts  # kube-proxy's word, apart
    assert "Proxier demonstrated" in facts
    assert "CNI differs from the registered plugin\n✘ no" in facts
    assert "cni mismatch" not in facts and "unknown" not in facts
    flaky = page.locator('table.grid tr[data-key="declare-sctp-ports"] td').nth(1)
    assert "%" not in flaky.inner_text()  # 2 verdicts (the error is none): too few for a share
    assert accessibility_problems(page) == [], size

    page.goto("/audit/")
    row = page.locator('tr[data-action="cluster.approve"]')
    assert row.locator(".audit-sentence").inner_text() == "approved cluster calico-ipvs"
    assert "cluster.approve" not in page.locator("table.audit").inner_text()

    page.goto("/")
    # GA from the KEP's history (issue 39): the alpha → beta criteria are folded below
    page.locator("details.past summary").first.click()
    periodic = page.locator('[data-criterion="periodic-basic-passing"] details.rows')
    periodic.locator("summary").click()
    assert "✘" not in periodic.inner_text()  # passed runs, not counted (emulated): no ✘

    page.goto("/schedules/")
    assert "Beat " not in page.locator("main").inner_text()
