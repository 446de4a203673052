"""Issue 26 item 2, as a maintainer at both sizes: signing off over unmet criteria takes its own
step that names each unmet criterion and requires a reason; afterwards `/`, the stage badge and
the report say "signed off over unmet criteria: …" in the colour of a warning, at once."""

from __future__ import annotations

import pytest

from dashboard.domain.models import AuditEvent, SignOff
from tests.chromium import accessibility_problems, log_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
]

GREEN = "rgb(26, 127, 55)"


def test_an_override_is_confirmed_with_a_reason_and_shown_as_a_warning(sized, maintainer) -> None:
    page, size = sized
    log_in(page, "maria", "maria-password")
    page.goto("/")  # the publication is made before the sign-off: it must not linger after it
    assert (
        page.locator(".glance h2")
        .inner_text()
        .startswith("SCTP is stable (GA) since Kubernetes 1.20")
    )

    page.goto("/review/")
    page.fill("#kubernetes_release", "1.36")
    page.fill("#comment", "the lab runs are convincing")
    page.click("text=Sign off alpha → beta")
    # One click is not enough: the next step names each unmet criterion.
    assert "over unmet criteria?" in page.locator("h1").inner_text()
    named = page.locator(".unmet-criteria li").evaluate_all(
        "els => els.map(e => e.dataset.criterion)"
    )
    assert set(named) == {"tests-written", "periodic-basic-passing"}
    assert not SignOff.objects.exists()
    assert accessibility_problems(page) == [], size
    page.click("button.danger")  # the reason is required: the browser keeps the form
    assert not SignOff.objects.exists()
    page.fill("#override_reason", "the periodic job is being set up; KEP review agreed")
    page.click("button.danger")
    assert "over unmet criteria" in page.locator(".messages").inner_text()
    event = AuditEvent.objects.get(action="signoff")
    assert event.detail["override_reason"].startswith("the periodic job")

    page.goto("/")
    assert page.locator(".glance h2").inner_text().startswith("SCTP is beta since Kubernetes 1.36")
    warning = page.locator(".glance [data-override]")
    assert warning.inner_text() == (
        "⚠ signed off over unmet criteria: tests-written, periodic-basic-passing"
    )
    assert warning.evaluate("e => getComputedStyle(e).color") != GREEN
    beta = page.locator('.stage[data-stage="beta"]')
    assert "⚠" in beta.inner_text()
    assert beta.evaluate("e => getComputedStyle(e).color") != GREEN
    assert "✔" not in page.locator(".stage-track").inner_text().split("alpha")[1]
    assert accessibility_problems(page) == [], size

    badge = page.request.get("/badge/stage.svg").text()
    assert "signed off over unmet criteria: tests-written, periodic-basic-passing" in badge
    report = page.request.get("/review/report.md").text()
    assert "Current stage: **beta** (signed off over unmet criteria: tests-written" in report
