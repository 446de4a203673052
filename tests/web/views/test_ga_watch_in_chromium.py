"""Issue 39 at 1280×800 and 390×844: a fresh install's `/` says GA from the KEP (never "alpha"),
and the post-GA watch, with what regressed, is in the first screen, readable and within the width."""

from __future__ import annotations

import pytest

from dashboard.domain import publication
from tests import factories as f
from tests.chromium import accessibility_problems

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
]


def test_the_first_screen_answers_todays_question(sized, shot) -> None:
    page, size = sized
    f.run(f.cluster("calico-ipt", kubernetes_version="1.35.0"), days_ago=3)
    cilium = f.cluster(
        "cilium-ipvs", plugin_slug="cilium", proxier="ipvs", kubernetes_version="1.35.0"
    )
    f.run(cilium, days_ago=3)
    f.run(cilium, f.with_outcome("pod-to-service", "failed", dict(f.PASSING)), days_ago=1)
    publication.invalidate()
    page.goto("/")
    glance = page.locator(".glance").inner_text()
    assert glance.startswith("SCTP is stable (GA) since Kubernetes 1.20"), size
    assert "SCTP is alpha" not in page.locator("main").inner_text()
    assert "not a sign-off made here" in glance
    # the answer (the GA criteria do not all hold) and the regression are on the first screen
    viewport = page.viewport_size or {"height": 800}
    answer = page.locator("[data-watch]").bounding_box()
    assert answer is not None and answer["y"] < viewport["height"], size
    regression = page.locator('[data-regression="cilium-ipvs-1.35"]')
    assert "pod-to-service failed" in regression.inner_text()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.evaluate("window.innerWidth"), (size, width)
    assert accessibility_problems(page) == [], size
    shot(page, f"ga-watch-{size}")
