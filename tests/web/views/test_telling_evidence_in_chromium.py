"""Issue 26 item 6, as a visitor at both sizes: the plugin page and the plugin table on `/` show
the newest *conclusive* evidence first and the newest attempt beside it (an all-skipped legacy
run never hides a real result); a matrix cell shows our run and a vendor's file side by side,
and never blames a file for a test it did not contain."""

from __future__ import annotations

import pytest

from dashboard.domain.catalog import Outcome
from tests import factories
from tests.chromium import accessibility_problems

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
]


def test_the_most_telling_evidence_comes_first(sized) -> None:
    page, size = sized
    good_cluster = factories.cluster("calico-ipvs", proxier="ipvs", approved=False)
    good = factories.run(good_cluster, days_ago=3)
    legacy = factories.run(
        factories.cluster("legacy-1-18", kubernetes_version="1.18.20"),
        dict.fromkeys(factories.PASSING, Outcome.SKIPPED),
        days_ago=1,
    )
    file_outcomes = {k: str(v) for k, v in factories.PASSING.items() if k != "netpol-allow-deny"}
    vendor_file = factories.submission("calico", file_outcomes, proxier="ipvs", days_ago=5)

    page.goto("/plugins/calico/")
    assert page.locator(".newest-conclusive a").first.get_attribute("href") == f"/runs/{good.id}/"
    assert page.locator(".newest-attempt a").first.get_attribute("href") == f"/runs/{legacy.id}/"
    assert accessibility_problems(page) == [], size

    page.goto("/")
    row = page.locator('[data-criterion="two-out-of-tree-plugins"] details.rows')
    row.locator("summary").click()
    calico = row.locator("tr", has_text="Calico")
    assert calico.locator("a[data-conclusive]").get_attribute("href") == f"/runs/{good.id}/"
    assert "newest attempt" in calico.inner_text()

    page.goto("/matrix/")
    line = page.locator('tr[data-plugin="calico"][data-proxier="ipvs"][data-minor="1.34"]')
    both = line.locator('td[data-key="pod-to-pod"]')
    assert both.locator(f'a[href="/runs/{good.id}/"]').count() >= 1
    assert both.locator(f'.beside-note[href="/submissions/{vendor_file.id}/"]').count() == 1
    missing = line.locator('td[data-key="netpol-allow-deny"]')
    assert missing.locator(f'a[href="/submissions/{vendor_file.id}/"]').count() == 0
    assert missing.get_attribute("data-outcome") == "passed"  # our run's, not the file's "not run"
