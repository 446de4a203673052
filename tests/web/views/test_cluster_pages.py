"""Clusters: the list, one cluster's history grid, fingerprint, schedule, staleness and "Run now"."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.domain.catalog import Outcome
from dashboard.domain.models import AuditEvent, Run
from dashboard.web.views.history import rolling_pass_rate, stats
from tests import factories
from tests.web.views.page_data import grow_history, queries

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_broker(monkeypatch):
    # "Run now" creates the row; dispatching to Celery is the runs module's business, not the page's.
    monkeypatch.setattr("dashboard.domain.runs.dispatch", lambda run_id: True)


def test_flakiness_counts_flips_between_pass_and_fail_and_ignores_skips() -> None:
    st = stats(["passed", "failed", "skipped", "error", "passed", "passed", "failed"])
    assert (st.decided, st.passed, st.flips, st.skipped, st.errors) == (5, 3, 3, 1, 1)
    assert st.pass_rate == 0.6 and st.flakiness == pytest.approx(3 / 4)
    # Fewer than 5 verdicts: no percentage; harness errors are never flips
    assert stats(["passed", "failed", "passed", "passed"]).flakiness is None
    assert (
        stats(["passed", "error", "passed", "error", "passed", "passed", "passed"]).flakiness == 0
    )
    assert stats(["skipped", "not_run"]).pass_rate is None
    assert rolling_pass_rate(["passed", "failed", "passed"], width=2) == [1.0, 0.5, 0.5]


def test_the_list_shows_each_cluster_with_its_last_run_and_freshness(client: Client) -> None:
    c = factories.cluster("calico-a")
    r = factories.run(c, days_ago=0.1)
    factories.schedule(c)
    factories.cluster("never-ran")
    body = client.get("/clusters/").content.decode()
    assert f'href="/runs/{r.id}/"' in body and "on schedule" in body and "never ran" in body
    assert "kubeconfig" not in body.replace("The kubeconfig of a cluster is stored encrypted", "")


def test_the_cluster_page_draws_the_history_grid_with_pass_rate_and_flakiness(
    client: Client,
) -> None:
    c = factories.cluster("calico-a")
    grow_history(c, 6)
    body = client.get("/clusters/calico-a/").content.decode()
    assert body.count('<tr data-key="') == 8
    assert 'class="spark"' in body
    # pod-to-pod has 4 verdicts in six runs (two "all", two "connectivity"): too few for a share
    assert '<span class="flaky">' not in body and 'data-flaky-needs="1"' in body
    grow_history(c, 6)  # now 8 verdicts, failing in runs 0, 3, 6 and 9
    body = client.get("/clusters/calico-a/").content.decode()
    assert '<span class="flaky">' in body
    assert "↷" in body  # the skipped hostport test is drawn as skipped, not as a pass or a gap


def test_the_cluster_page_shows_the_fingerprint_of_the_newest_run(client: Client) -> None:
    c = factories.cluster("calico-a", kubeconfig="apiVersion: v1\nclusters: [secret-token-xyz]")
    r = factories.run(c)
    Run.objects.filter(pk=r.pk).update(
        fingerprint={"proxier_detected": "iptables", "node_access": True}
    )
    body = client.get("/clusters/calico-a/").content.decode()
    assert "proxier_detected" in body and "✔ yes" in body
    assert "secret-token-xyz" not in body


def test_the_stale_cluster_says_so(client: Client) -> None:
    c = factories.cluster("calico-a")
    factories.schedule(c, interval_minutes=60)
    factories.run(c, days_ago=1)
    assert (
        "stale: no finished run for over twice the 60-minute interval"
        in client.get("/clusters/calico-a/").content.decode()
    )


def test_run_now_queues_a_run_for_the_owner_and_redirects_to_it(
    client: Client, vendor_user
) -> None:
    c = factories.cluster("calico-a", owner=factories.vendor("Calico vendor", ("calico",)))
    client.force_login(vendor_user)
    assert "Run now" in client.get("/clusters/calico-a/").content.decode()
    response = client.post("/clusters/calico-a/run/", {"battery": "basic"})
    run = Run.objects.get(cluster=c)
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.id}/"
    assert (run.battery, run.trigger, run.requested_by) == ("basic", "manual", vendor_user)
    assert AuditEvent.objects.filter(action="run.request", actor="victor").exists()


def test_run_now_is_refused_to_another_vendor_and_hidden_from_them(
    client: Client, other_vendor_user
) -> None:
    factories.cluster("calico-a", owner=factories.vendor("Calico vendor", ("calico",)))
    client.force_login(other_vendor_user)
    assert "Run now" not in client.get("/clusters/calico-a/").content.decode()
    assert client.post("/clusters/calico-a/run/", {"battery": "basic"}).status_code == 403
    assert not Run.objects.exists()


def test_run_now_on_a_disabled_cluster_explains_why(client: Client, maintainer) -> None:
    factories.cluster("calico-a", enabled=False)
    client.force_login(maintainer)
    response = client.post("/clusters/calico-a/run/", {"battery": "all"}, follow=True)
    assert "is disabled" in response.content.decode() and not Run.objects.exists()


def test_query_counts_do_not_grow_with_history(client: Client) -> None:
    a = factories.cluster("calico-a")
    b = factories.cluster("cilium-b", plugin_slug="cilium")
    factories.schedule(a)
    grow_history(a, 3)
    grow_history(b, 3)
    before = (queries(client, "/clusters/"), queries(client, "/clusters/calico-a/"))
    grow_history(a, 50)
    grow_history(b, 20)
    # the cluster page adds periodic_conflict (3 indexed lookups) when it hosts a schedule
    assert (
        (queries(client, "/clusters/"), queries(client, "/clusters/calico-a/")) == before == (4, 7)
    )


def test_the_grid_is_bounded_to_the_last_thirty_runs(client: Client) -> None:
    c = factories.cluster("calico-a")
    grow_history(c, 35)
    body = client.get("/clusters/calico-a/").content.decode()
    assert body.count('<th class="run">') == 30


def test_a_failed_outcome_has_a_symbol_not_only_a_colour(client: Client) -> None:
    factories.run(
        factories.cluster("calico-a"), factories.with_outcome("pod-to-service", Outcome.FAILED)
    )
    assert (
        'class="o o-failed" title="failed: pod-to-service failed">✘</a>'
        in client.get("/clusters/calico-a/").content.decode()
    )
