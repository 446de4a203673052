"""Issue 26 item 10 at both sizes: server-drawn SVG pictures: each criterion's status by day on
/review/ (a maintainer), and a plugin's pass rate per Kubernetes release on its page (anyone)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils.timezone import now

from dashboard.domain.catalog import Outcome
from dashboard.domain.models import ReadinessSnapshot
from tests import factories
from tests.chromium import accessibility_problems, log_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
]


def test_the_criteria_over_time_and_the_pass_rate_per_release(sized, maintainer) -> None:
    page, size = sized
    statuses = {
        "tests-written": "met",
        "periodic-basic-passing": "unmet",
        "two-out-of-tree-plugins": "unmet",
        "iptables-and-ipvs": "unmet",
    }
    old = ReadinessSnapshot.objects.create(statuses=statuses, data={}, reason="test")
    ReadinessSnapshot.objects.filter(pk=old.pk).update(created=now() - timedelta(days=10))
    calico = factories.cluster("calico-a", kubernetes_version="1.33.2")
    newer = factories.cluster("calico-b", kubernetes_version="1.34.1")
    factories.run(calico, dict(factories.PASSING, **{"pod-to-pod": Outcome.FAILED}))
    factories.run(newer)
    factories.run(newer, dict(factories.PASSING, **{"pod-to-service": Outcome.ERROR}))

    page.goto("/plugins/calico/")
    bars = page.locator("svg.pass-rate g[data-release]")
    assert bars.evaluate_all("els => els.map(e => e.dataset.release)") == ["1.33", "1.34"]
    titles = bars.locator("title").all_text_contents()
    # 1.33: pod-to-pod failed, 3 of 4 passed; 1.34: 4 + 3 passed (the error is no verdict)
    assert titles[0] == "Kubernetes 1.33: 3 of 4 connectivity verdicts passed (75%)"
    assert titles[1] == "Kubernetes 1.34: 7 of 7 connectivity verdicts passed (100%)"
    assert accessibility_problems(page) == [], size

    log_in(page, "maria", "maria-password")
    page.goto("/review/")
    rows = page.locator("svg.criterion-history g[data-criterion]")
    assert rows.count() == 4
    written = page.locator('svg.criterion-history g[data-criterion="tests-written"] title')
    days = written.all_text_contents()
    assert len(days) == 30
    assert days[-11].endswith("met") and days[0].endswith("not evaluated yet")
    assert days[-1].endswith(": met")  # today: the evaluation now (the runs above count)
    periodic = page.locator(
        'svg.criterion-history g[data-criterion="periodic-basic-passing"] title'
    )
    assert periodic.all_text_contents()[-1].endswith(": unmet")
    assert accessibility_problems(page) == [], size
