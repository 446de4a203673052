"""Issues 39 and 38 in Chromium at 1280×800 and 390×844: a refused result file leads with one
line, its SCTP tests as a table and the commands as blocks a copy button copies (copy.js under
the CSP, no inline script), the error announced and the file field focused; and the matrix, the
plugin page and `/` show both batteries' outcomes and flag their disagreement, for anonymous
visitors, a vendor and a maintainer, readable (contrast, landmarks) and no wider than the screen."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils.timezone import now

from dashboard.domain.catalog import Outcome
from dashboard.domain.models import Submission
from tests import factories as f
from tests.chromium import accessibility_problems, log_in
from tests.domain.ingest import real_files as rf
from tests.domain.ingest.builders import junit_v2
from tests.junit import SCTP_V130

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
]

WIDTH = """() => ({scrollWidth: document.scrollingElement.scrollWidth, innerWidth: window.innerWidth,
  wide: [...document.querySelectorAll("body *")].filter((el) => el.getBoundingClientRect().right
    > window.innerWidth + 1 && !el.closest(".table-wrap")).slice(0, 5).map((el) => el.tagName + "." + el.className)})"""


def _fits(page, where: str) -> None:
    got = page.evaluate(WIDTH)
    assert got["scrollWidth"] <= got["innerWidth"], f"{where}: {got}"


def test_a_refused_file_reads_in_one_line_with_its_tests_and_commands(
    sized, vendor_user, shot
) -> None:
    page, size = sized
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    log_in(page, "victor", "victor-password")
    page.goto("/submissions/new/")
    page.fill("#plugin_version", "3.28.0")
    page.fill("#kubernetes_version", "1.21.1")
    page.set_input_files(
        "#file",
        {"name": "r.tar.gz", "mimeType": "application/gzip", "buffer": rf.real(rf.V121)},
    )
    page.click("button:has-text('Upload')")
    error = page.locator("#form-error")
    error.wait_for()
    assert error.get_attribute("role") == "alert"
    assert error.inner_text().startswith("A conformance-only run:"), size
    assert "\n" not in error.inner_text().strip()
    assert not Submission.objects.exists()
    # The file field: invalid, described by the line and the details, focused first.
    assert page.evaluate("document.activeElement.id") == "file"
    assert page.get_attribute("#file", "aria-invalid") == "true"
    described = (page.get_attribute("#file", "aria-describedby") or "").split()
    assert described[:2] == ["form-error", "refusal-detail"]
    assert page.input_value("#plugin_version") == "3.28.0"
    rows = page.locator("table.refusal-tests tbody tr")
    assert rows.count() == 17 and rows.first.is_visible()
    # The copy button works (copy.js, loaded as a file: the CSP allows no inline script).
    button = page.locator("button[data-copy='cmd-sonobuoy']")
    assert button.is_visible(), size
    button.click()
    page.locator("#cmd-sonobuoy-status", has_text="Copied").wait_for()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("sonobuoy run --plugin e2e --e2e-focus 'SCTP'")
    assert copied.endswith("sonobuoy retrieve . --filename sctp-sonobuoy.tar.gz")
    assert page.locator("#cmd-hydrophone").inner_text().startswith("hydrophone --focus 'SCTP'")
    _fits(page, f"upload refusal at {size}")
    assert accessibility_problems(page) == [], size
    shot(page, f"upload-refusal-{size}")


def _both_batteries() -> tuple[object, object, object]:
    c = f.cluster("calico-both", approved=True)
    ours = f.run(c, days_ago=1)
    theirs = f.run(
        c,
        f.with_outcome("pod-to-service", Outcome.FAILED),
        battery="upstream",
        days_ago=2,
        detected=None,
    )
    return c, ours, theirs


@pytest.mark.parametrize("role", ["anonymous", "vendor", "maintainer"])
def test_the_batteries_disagreement_shows_on_matrix_plugin_and_criterion(
    sized, role, maintainer, vendor_user, shot
) -> None:
    page, size = sized
    _both_batteries()
    if role == "vendor":
        log_in(page, "victor", "victor-password")
    elif role == "maintainer":
        log_in(page, "maria", "maria-password")
    page.goto("/matrix/")
    cell = page.locator("td.cell[data-key='pod-to-service'][data-disagree='true']")
    assert cell.count() == 1, (role, size)
    assert cell.locator(".upstream-note").is_visible()
    assert "upstream e2e.test: failed" in cell.inner_text()
    assert cell.locator(".disagree-flag").is_visible()
    assert accessibility_problems(page) == [], (role, size, "matrix")
    shot(page, f"matrix-batteries-{role}-{size}")

    page.goto("/plugins/calico/")
    section = page.locator("#batteries")
    assert section.is_visible()
    assert section.locator("[data-flag='disagree']").is_visible()
    assert section.locator("tr[data-key='pod-to-service'][data-state='disagree']").count() == 1
    _fits(page, f"plugin page, {role} at {size}")
    assert accessibility_problems(page) == [], (role, size, "plugin")
    shot(page, f"plugin-batteries-{role}-{size}")

    page.goto("/")
    flags = page.locator("[data-flag='batteries-disagree']")
    assert flags.count() >= 1 and flags.first.is_visible()
    assert "upstream's e2e.test failed pod-to-service" in flags.first.inner_text()
    _fits(page, f"/, {role} at {size}")
    assert accessibility_problems(page) == [], (role, size, "/")


def test_the_page_a_maintainer_verifies_from_flags_the_declared_proxier(sized, maintainer) -> None:
    page, size = sized
    sub = f.submission("calico", status=Submission.Status.PENDING, proxier="ipvs", run_days_ago=200)
    log_in(page, "maria", "maria-password")
    page.goto(f"/submissions/{sub.id}/")
    declared = page.locator("[data-flag='proxier-declared-only']")
    assert declared.is_visible() and "Its proxier (ipvs) is declared only" in declared.inner_text()
    never = page.locator("[data-flag='never-counts']")
    assert never.is_visible() and "older than 90 days" in never.inner_text()
    _fits(page, f"submission page at {size}")
    assert accessibility_problems(page) == [], size


def test_an_upload_that_can_never_count_is_said_at_once(sized, vendor_user) -> None:
    page, size = sized
    stamp = (now() - timedelta(days=200)).strftime("%Y-%m-%dT%H:%M:%S")
    data = junit_v2([(name, "passed") for name in SCTP_V130], timestamp=stamp)
    log_in(page, "victor", "victor-password")
    page.goto("/submissions/new/")
    page.fill("#plugin_version", "3.28.0")
    page.fill("#kubernetes_version", "1.34.1")
    page.set_input_files(
        "#file", {"name": "junit_01.xml", "mimeType": "application/xml", "buffer": data}
    )
    page.click("button:has-text('Upload')")
    said = page.locator(".messages li.warning")
    said.wait_for()
    assert "can never count: its run (" in said.inner_text(), size
    assert page.locator("[data-never-counts]").is_visible()
    _fits(page, f"submission page after upload at {size}")
    assert accessibility_problems(page) == [], size
