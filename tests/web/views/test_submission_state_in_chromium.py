"""Issue 26 item 3, as a maintainer at both sizes: a submission's page says one state, once
(would count once verified; counted; does not count, and why), and verifying it says what
changed on the readiness page."""

from __future__ import annotations

import pytest

from dashboard.domain.models import Submission
from tests import factories
from tests.chromium import accessibility_problems, log_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
]

PENDING = Submission.Status.PENDING


def _state(page) -> tuple[str, str]:
    card = page.locator(".submission-state")
    assert card.count() == 1
    return card.get_attribute("data-state") or "", card.inner_text()


def test_one_state_said_once_and_the_readiness_change_after_verifying(sized, maintainer) -> None:
    page, size = sized
    factories.submission("cilium", proxier="ipvs")  # verified: one plugin passes already
    lab = factories.submission("antrea", status=PENDING, emulated=True)
    real = factories.submission("calico", status=PENDING)
    log_in(page, "maria", "maria-password")

    page.goto(f"/submissions/{lab.id}/")
    kind, text = _state(page)
    assert kind == "does-not-count"
    assert "emulated" in text and "verifying it would not change that" in text
    body = page.locator("main").inner_text()
    assert "Qualifies" not in body and "counts once a maintainer verifies" not in body
    page.click("button:has-text('Verify')")
    assert "Readiness: no change: emulated evidence." in page.locator(".messages").inner_text()
    assert _state(page)[0] == "does-not-count"

    page.goto(f"/submissions/{real.id}/")
    kind, text = _state(page)
    assert kind == "would-count" and "Would count once a maintainer verifies it" in text
    assert "two-out-of-tree-plugins" in text
    assert "Does not count" not in page.locator("main").inner_text()
    assert accessibility_problems(page) == [], size
    page.click("button:has-text('Verify')")
    said = page.locator(".messages").inner_text()
    assert "two-out-of-tree-plugins: unmet → met" in said, said
    kind, text = _state(page)
    assert kind == "counted" and text.count("Counted") == 1
