"""Issue 26 item 1, as a maintainer at both sizes: registering a taken name is refused with a
link to that cluster, and a change is an explicit edit that starts from the current values,
shows what changes before storing it, and is audited with the old and new values."""

from __future__ import annotations

import pytest

from dashboard.domain.models import AuditEvent, Cluster
from tests import factories
from tests.chromium import accessibility_problems, log_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
]


def test_a_taken_name_is_refused_and_the_edit_shows_what_changes(sized, maintainer) -> None:
    page, size = sized
    factories.cluster("x", plugin_version="3.28.0", proxier="ipvs", kubernetes_version="1.33.4")
    log_in(page, "maria", "maria-password")

    page.goto("/clusters/new/")
    page.fill("#name", "x")
    page.select_option("#proxier", "iptables")
    page.fill("#kubeconfig_text", "apiVersion: v1\nkind: Config\n")
    page.click("button[type=submit]")
    alert = page.locator("[role=alert]")
    assert "already registered" in alert.inner_text()
    assert alert.locator("a", has_text="x").get_attribute("href") == "/clusters/x/"
    cluster = Cluster.objects.get(name="x")
    assert (cluster.plugin_version, cluster.proxier, cluster.kubernetes_version) == (
        "3.28.0",
        "ipvs",
        "1.33.4",
    )
    assert not AuditEvent.objects.filter(target="cluster x").exists()

    alert.locator("a", has_text="edit form").click()
    assert page.input_value("#plugin_version") == "3.28.0"
    assert page.input_value("#proxier") == "ipvs"
    assert page.input_value("#kubernetes_version") == "1.33.4"
    page.fill("#plugin_version", "3.29.0")
    page.click("text=Show what changes")
    rows = page.locator("#edit-changes tbody tr")
    # The click submits the form: count() does not wait for the page it loads (CI under load
    # counted the old page's 0 rows once); the first row's appearance is awaited first.
    rows.first.wait_for(timeout=15_000)
    assert rows.count() == 1
    assert rows.first.inner_text().split() == ["plugin", "version", "3.28.0", "3.29.0"]
    assert Cluster.objects.get(name="x").plugin_version == "3.28.0"  # nothing stored yet
    assert accessibility_problems(page) == [], size
    page.click("text=Save these changes")
    assert "plugin version 3.28.0 → 3.29.0" in page.locator(".messages").inner_text()
    cluster = Cluster.objects.get(name="x")
    assert (cluster.plugin_version, cluster.proxier, cluster.kubernetes_version) == (
        "3.29.0",
        "ipvs",
        "1.33.4",
    )
    event = AuditEvent.objects.get(action="cluster.update")
    assert event.actor == "maria"
    assert event.detail["changes"] == {"plugin_version": ["3.28.0", "3.29.0"]}
