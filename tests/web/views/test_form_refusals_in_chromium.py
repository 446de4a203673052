"""Issue 39 at 1280×800 and 390×844: a file over the upload limit is refused inside the form
before it is sent; the error is announced, the field marked and focused, the values kept."""

from __future__ import annotations

import pytest

from dashboard.domain.models import Submission
from tests.chromium import accessibility_problems, log_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
]


def test_an_over_size_file_is_refused_in_the_form(sized, vendor_user, settings) -> None:
    page, size = sized
    settings.SUBMISSION_MAX_BYTES = 1000
    log_in(page, "victor", "victor-password")
    page.goto("/submissions/new/")
    assert "at most 1000\xa0bytes" in page.locator("[data-limit]").inner_text()
    page.fill("#plugin_version", "3.28.0")
    page.fill("#kubernetes_version", "1.34.2")
    page.set_input_files(
        "#file", {"name": "junit_01.xml", "mimeType": "application/xml", "buffer": b"x" * 5000}
    )
    page.click("button:has-text('Upload')")
    error = page.locator("#form-error")
    assert error.is_visible() and "larger than the" in error.inner_text(), size
    assert error.get_attribute("role") == "alert"
    assert page.url.endswith("/submissions/new/") and not Submission.objects.exists()
    assert page.evaluate("document.activeElement.id") == "file"
    assert page.get_attribute("#file", "aria-invalid") == "true"
    assert "form-error" in (page.get_attribute("#file", "aria-describedby") or "")
    assert page.input_value("#plugin_version") == "3.28.0"
    assert accessibility_problems(page) == [], size
