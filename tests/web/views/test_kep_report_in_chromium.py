"""Issue 26 item 7, as a maintainer at both sizes: the KEP report is a page (the Markdown
rendered as HTML) with a copy button and a download of the .md; table cells stay short, the
long reasons are footnotes."""

from __future__ import annotations

import pytest

from dashboard.domain.models import Run
from tests import factories
from tests.chromium import accessibility_problems, log_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
]


def test_the_report_is_a_page_with_copy_download_and_footnotes(sized, maintainer) -> None:
    page, size = sized
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    for name in ("calico-iptables", "calico-ipvs", "cilium-iptables"):
        lab = factories.cluster(name, lab=True, emulated=True)
        schedule = factories.schedule(lab, interval_minutes=5)
        for i in range(3):
            factories.run(
                lab,
                battery="basic",
                trigger=Run.Trigger.PERIODIC,
                schedule=schedule,
                days_ago=i * 0.1,
            )
    log_in(page, "maria", "maria-password")
    page.goto("/review/")
    page.click("text=The KEP report")
    report = page.locator("article.report")
    assert report.locator("h2").first.inner_text().startswith("KEP-614 SCTP support")
    assert report.locator("table").count() >= 2
    assert "|---|" not in report.inner_text() and "\\|" not in report.inner_text()
    longest = max(len(t.split()) for t in report.locator("td").all_inner_texts())
    assert longest <= 30, longest
    assert report.locator("sup.fnref a").count() >= 1
    note = report.locator("sup.fnref a").first.get_attribute("href")
    assert report.locator(f"section.footnotes li{note}").count() == 1
    assert accessibility_problems(page) == [], size

    page.click("#copy-report")
    # The clipboard write is a promise: the status says so once it resolves.
    page.locator("#copy-status", has_text="Copied").wait_for(timeout=10_000)
    assert page.locator("#copy-status").inner_text().startswith("Copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("## KEP-614 SCTP support") and "[^1]:" in copied
    download = page.request.get(page.locator("a[download]").get_attribute("href"))
    assert "attachment" in download.headers["content-disposition"]
    # The same report, but for the moment of its evaluation (line 3 says when).
    assert download.text().splitlines()[3:] == copied.splitlines()[3:]
