"""Issue 38, item 3: a criterion never counts a test passed while the newest run of the other
battery (upstream's e2e.test against ours) on the same cluster and release failed it."""

from __future__ import annotations

import pytest

from dashboard.domain.catalog import Outcome
from dashboard.domain.readiness import evaluate
from tests import factories as f

pytestmark = pytest.mark.django_db


def _ipvs_row() -> dict:
    crit = next(
        c
        for t in evaluate()["transitions"]
        for c in t["criteria"]
        if c["key"] == "iptables-and-ipvs"
    )
    return next(r for r in crit["rows"] if r["proxier"] == "ipvs")


def test_our_pass_is_not_counted_while_upstream_failed_it() -> None:
    c = f.cluster(proxier="ipvs")
    ours = f.run(c, days_ago=1)
    upstream = f.run(
        c, f.with_outcome("pod-to-service", Outcome.FAILED), battery="upstream", days_ago=2
    )
    row = _ipvs_row()
    assert row["status"] == "not demonstrated"
    assert f"run {ours.pk}" in row["why"]
    assert "contradicted: upstream's e2e.test failed pod-to-service" in row["why"]
    assert f"(run {upstream.pk})" in row["why"]


def test_upstreams_pass_is_not_counted_while_ours_failed_it() -> None:
    c = f.cluster(proxier="ipvs")
    f.run(c, f.with_outcome("pod-to-service", Outcome.FAILED), days_ago=1)
    upstream = f.run(c, battery="upstream", days_ago=2)
    assert _ipvs_row()["status"] == "not demonstrated"
    crit = next(
        c
        for t in evaluate()["transitions"]
        for c in t["criteria"]
        if c["key"] == "iptables-and-ipvs"
    )
    entry = next(e for e in crit["proxiers"]["ipvs"]["evidence"] if e["id"] == upstream.pk)
    assert not entry["counts"]
    assert "contradicted: the dashboard's battery failed pod-to-service" in entry["why"]


def test_only_the_newest_run_of_the_other_battery_speaks() -> None:
    c = f.cluster(proxier="ipvs")
    f.run(c, f.with_outcome("pod-to-service", Outcome.FAILED), battery="upstream", days_ago=3)
    f.run(c, battery="upstream", days_ago=2)  # fixed since
    f.run(c, days_ago=1)
    assert _ipvs_row()["status"] == "demonstrated"


def test_another_release_does_not_contradict() -> None:
    c = f.cluster(proxier="ipvs")
    f.run(c, f.with_outcome("pod-to-service", Outcome.FAILED), battery="upstream", days_ago=2)
    c.kubernetes_version = "1.35.1"
    c.save()
    f.run(c, days_ago=1)
    assert _ipvs_row()["status"] == "demonstrated"


def test_a_failure_of_a_test_the_criterion_does_not_rely_on_leaves_it() -> None:
    c = f.cluster(proxier="ipvs")
    f.run(c, f.with_outcome("pod-to-pod", Outcome.FAILED), battery="upstream", days_ago=2)
    f.run(c, days_ago=1)
    assert _ipvs_row()["status"] == "demonstrated"  # pod-to-service is what it relies on


def test_the_cluster_page_shows_both_batteries_and_flags_the_disagreement(client) -> None:
    c = f.cluster("calico-ipvs", proxier="ipvs")
    f.run(c, f.with_outcome("pod-to-service", Outcome.FAILED), battery="upstream", days_ago=2)
    ours = f.run(c, days_ago=1)
    body = client.get(f"/clusters/{c.name}/").content.decode()
    assert 'id="side-by-side"' in body and f'href="/runs/{ours.pk}/"' in body
    assert 'data-key="pod-to-service" data-state="disagree"' in body
    assert 'data-key="pod-to-pod" data-state="agree"' in body
    assert 'data-flag="disagree"' in body


def test_no_comparison_without_both_batteries_in_the_window(client) -> None:
    c = f.cluster("calico-ipvs", proxier="ipvs")
    f.run(c, battery="upstream", days_ago=400)
    f.run(c, days_ago=1)
    assert 'id="side-by-side"' not in client.get(f"/clusters/{c.name}/").content.decode()
