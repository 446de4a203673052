"""Issue 26 item 9 at both sizes: the log-in page says why (and shows no form to a logged-in
user), the admin refuses non-staff maintainers with the styled page, the API docs lead back,
the navigation marks the current page, a skip link leads to the content, maintainers see no
dead upload link, and the schema answers `Accept: application/json`."""

from __future__ import annotations

import json
from urllib.parse import urlparse

import pytest

from dashboard.domain.models import Submission
from tests import factories
from tests.chromium import accessibility_problems, log_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
]


def test_a_visitor_is_told_why_to_log_in_and_the_ways_around_work(sized) -> None:
    page, size = sized
    page.goto("/review/")
    assert page.url.endswith("/login/?next=/review/")
    assert "for maintainers" in page.locator("#why").inner_text()
    assert accessibility_problems(page) == [], size

    page.goto("/matrix/")
    current = page.locator("header nav a[aria-current=page]")
    assert current.count() == 1 and current.inner_text() == "Matrix"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip-link"
    assert page.evaluate("document.activeElement.getBoundingClientRect().top") >= 0  # visible
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "content"

    page.goto("/api/v1/docs/")
    page.click("text=SCTP readiness dashboard")
    assert urlparse(page.url).path == "/"
    assert page.locator("h1").inner_text() == "Is SCTP ready to graduate?"

    answer = page.request.get("/api/v1/schema/", headers={"Accept": "application/json"})
    assert answer.status == 200 and answer.headers["content-type"].startswith("application/json")
    assert json.loads(answer.text())["openapi"].startswith("3.")


def test_logged_in_users_get_no_form_and_non_staff_maintainers_a_styled_admin_refusal(
    sized, maintainer, vendor_user
) -> None:
    page, size = sized
    mine = factories.submission("calico", status=Submission.Status.PENDING)
    Submission.objects.filter(pk=mine.pk).update(vendor=vendor_user.vendors.get())
    log_in(page, "victor", "victor-password")
    page.goto("/login/?next=/review/")
    assert "already logged in as victor" in page.locator("#already").inner_text()
    assert page.locator("#id_password").count() == 0
    page.goto("/submissions/")  # the own row is highlighted: its grey text still reads
    assert page.locator("tr.own").count() == 1
    assert accessibility_problems(page) == [], size
    page.context.clear_cookies()

    log_in(page, "maria", "maria-password")
    response = page.goto("/admin/")
    assert response.status == 403
    assert page.locator('.error-page[data-status="403"]').count() == 1
    assert "The Django admin is for operators" in page.locator("main").inner_text()
    page.goto("/submissions/")
    assert page.locator('main a[href="/submissions/new/"]').count() == 0  # no dead link
    current = page.locator("header nav a[aria-current=page]")
    assert current.inner_text() == "Submissions"
