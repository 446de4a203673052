"""Issue 39's known bugs: the plugin page's pass rate counts our battery's runs (and verified
submissions) only, never upstream's e2e.test runs; and upstream, which has no spec for
pod-to-loadbalancer (nor, since v1.34.4, for service-iptables-rules), never shows an outcome
for them anywhere: not in the test factory's upstream runs, not on any page."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from dashboard.domain.catalog import Outcome
from dashboard.domain.models import TestResult
from dashboard.web.views.plugins import pass_rates
from tests import factories as f

pytestmark = pytest.mark.django_db
NO_UPSTREAM_SPEC = ("service-iptables-rules", "pod-to-loadbalancer")


def test_the_factorys_upstream_runs_report_only_keys_upstream_has_a_spec_for() -> None:
    c = f.cluster("calico-both")  # Kubernetes 1.34.2
    upstream = f.run(c, battery="upstream")
    keys = set(TestResult.objects.filter(run=upstream).values_list("test_key", flat=True))
    assert keys and not keys & set(NO_UPSTREAM_SPEC), keys
    assert "pod-to-service" in keys and "declare-sctp-ports" in keys
    # ours reports them (its own checks)
    ours = f.run(c)
    assert set(NO_UPSTREAM_SPEC) <= set(
        TestResult.objects.filter(run=ours).values_list("test_key", flat=True)
    )
    # the old ClusterIP spec existed upstream at v1.23: there upstream does feed that key
    old = f.cluster("calico-old", kubernetes_version="1.23.4")
    fed = set(
        TestResult.objects.filter(run=f.run(old, battery="upstream")).values_list(
            "test_key", flat=True
        )
    )
    assert "pod-to-loadbalancer" not in fed


def test_the_pass_rate_counts_our_battery_only(client: Client) -> None:
    c = f.cluster("calico-both")
    f.run(c, days_ago=1)  # ours: every connectivity test passed
    f.run(
        c,
        {"pod-to-pod": Outcome.FAILED, "pod-to-service": Outcome.FAILED},
        battery="upstream",
        days_ago=2,
    )
    (rate,) = pass_rates(c.plugin)
    assert rate["minor"] == "1.34" and rate["rate"] == 1.0, rate  # upstream's failures not in it
    assert (
        rate["verdicts"]
        == TestResult.objects.filter(
            run__battery="all", test_key__in=f.CONNECTIVITY_KEYS, outcome__in=("passed", "failed")
        ).count()
    )
    page = client.get("/plugins/calico/").content.decode()
    assert "upstream's <code>e2e.test</code> runs are not counted here" in page


def test_no_page_shows_an_upstream_outcome_for_a_key_upstream_has_no_spec_for(
    client: Client,
) -> None:
    c = f.cluster("calico-both")
    f.run(c, days_ago=1)
    upstream = f.run(c, battery="upstream", days_ago=2, detected=None)
    matrix = client.get("/matrix/").content.decode()
    assert 'data-upstream="passed"' in matrix  # upstream is shown where it has a spec
    for key in NO_UPSTREAM_SPEC:
        cells = re.findall(rf'<td[^>]*data-key="{key}"[^>]*>.*?</td>', matrix, re.S)
        assert cells, key
        assert not [cell for cell in cells if "data-upstream" in cell], key
    shown = 0
    for url in ("/plugins/calico/", f"/clusters/{c.name}/", f"/runs/{upstream.id}/"):
        body = client.get(url).content.decode()
        for key in NO_UPSTREAM_SPEC:
            for row in re.findall(rf'<tr data-key="{key}"[^>]*>.*?</tr>', body, re.S):
                shown += 1
                # the side-by-side table: upstream's column is empty ("— no spec")
                if 'data-state="' in row:
                    assert 'data-state="no upstream spec"' in row and "— no spec" in row, row
                    assert re.findall(r'<td data-outcome="([^"]*)"', row)[1] == "", row
                # the run grid: upstream's run has a dash, not an outcome
                marks = re.findall(rf'<a [^>]*href="/runs/{upstream.id}/"[^>]*class="([^"]*)"', row)
                assert all(m == "o o-missing" for m in marks), (url, key, row)
                assert "upstream e2e.test: " not in row
    assert shown >= 4  # the plugin page's and the cluster page's side by side, the grid
    # upstream's run page lists no outcome for them, and says why they are not there
    run_page = client.get(f"/runs/{upstream.id}/").content.decode()
    for key in NO_UPSTREAM_SPEC:
        assert f'<tr data-key="{key}"' not in run_page, key
    note = run_page[run_page.index("data-no-upstream-spec") :].split("</p>")[0]
    assert "<code>service-iptables-rules</code>, <code>pod-to-loadbalancer</code>" in note
    assert "has no spec for them" in note
    # the API neither
    api = client.get(f"/api/v1/runs/{upstream.id}/").json()
    assert not set(NO_UPSTREAM_SPEC) & set(api["results"]), api["results"]


def test_a_real_upstream_runs_not_run_for_a_key_without_spec_is_not_shown(
    client: Client,
) -> None:
    """The worker's upstream battery records the ingest's not_run for every catalog key
    (workers/upstream.py): even so, no page shows it as upstream's outcome."""
    c = f.cluster("calico-both")
    f.run(c, days_ago=1)
    upstream = f.run(c, battery="upstream", days_ago=2, detected=None)
    for key in NO_UPSTREAM_SPEC:
        TestResult.objects.create(
            run=upstream, test_key=key, outcome=Outcome.NOT_RUN, reason="no upstream test"
        )
    matrix = client.get("/matrix/").content.decode()
    for key in NO_UPSTREAM_SPEC:
        for cell in re.findall(rf'<td[^>]*data-key="{key}"[^>]*>.*?</td>', matrix, re.S):
            assert "data-upstream" not in cell and "upstream e2e.test: " not in cell
    assert (
        '<tr data-key="pod-to-loadbalancer"'
        not in client.get(f"/runs/{upstream.id}/").content.decode()
    )
    sbs = client.get(f"/clusters/{c.name}/").content.decode()
    row = sbs[sbs.index('data-state="no upstream spec"') :].split("</tr>")[0]
    assert 'data-outcome=""' in row
