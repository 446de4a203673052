"""What a reviewer reads at a glance (issue 14): the stage and next decision, the watch after
GA, fingerprints as labelled facts, labelled cluster outcomes, matrix rows per release."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.utils.timezone import now

from dashboard.domain import publication, readiness
from dashboard.domain.models import Run, SignOff, TestResult
from dashboard.web.views.matrix import build_matrix
from tests import factories

pytestmark = pytest.mark.django_db

FINGERPRINT = {
    "proxier_detected": "iptables",
    "node_access": True,
    "load_balancer": None,
    "kubernetes_version": "1.31.2",
    "sctp_module_before": {"node-a": False, "node-b": False},
    "sctp_module_after": {"node-a": True, "node-b": False},
    "node_names": ["node-a", "node-b"],
    "battery_nodes": ["node-a"],
    "worker_sctp": {"available": False, "reason": "kernel has no SCTP", "pysctp_version": "0.7.3"},
}


def test_a_fresh_install_opens_on_the_kep_stage_marked_as_history(client: Client) -> None:
    body = client.get("/").content.decode()
    glance = body[body.index('class="glance') : body.index("</section>")]
    # issue 39: SCTP went GA in 1.20 upstream; nothing was signed off here, and the page says so
    assert "SCTP is <strong>stable (GA)</strong> since Kubernetes 1.20" in glance
    assert 'data-stage-source="kep"' in glance and "not a sign-off made here" in glance
    assert "SCTP is <strong>alpha" not in body and "Next decision" not in glance
    assert 'data-stage="stable" data-state="current"' in body
    assert 'class="edge kep">KEP-614: Kubernetes 1.19 (2020-08-26)<' in body


def test_the_page_opens_on_the_next_decision_of_this_dashboards_own_sign_offs(
    client: Client, maintainer
) -> None:
    SignOff.objects.create(
        from_stage="alpha",
        to_stage="beta",
        maintainer=maintainer,
        comment="ok",
        kubernetes_release="1.19",
        snapshot=readiness.evaluate(),
    )
    publication.invalidate()
    body = client.get("/").content.decode()
    glance = body[body.index('class="glance') : body.index("</section>")]
    assert "SCTP is <strong>beta</strong>" in glance and 'data-next="beta-stable"' in glance
    # the KEP's stage is named beside this dashboard's, never merged into it
    assert "KEP-614's history says GA since Kubernetes 1.20 (2020-12-08)" in glance
    # only the next transition is judged; nothing beyond it is ticked
    assert 'data-stage="stable" data-state="later"' in body


def test_after_ga_the_page_watches_the_ga_criteria(client: Client, maintainer) -> None:
    for frm, to, release in (("alpha", "beta", "1.19"), ("beta", "stable", "1.20")):
        SignOff.objects.create(
            from_stage=frm,
            to_stage=to,
            maintainer=maintainer,
            comment="ok",
            kubernetes_release=release,
            snapshot=readiness.evaluate(),
        )
    publication.invalidate()
    body = client.get("/").content.decode()
    assert "since Kubernetes 1.20" in body and 'data-watch="alarm"' in body
    # they never held here (no evidence): "no longer" would claim a past that did not happen
    assert "The GA criteria do not all hold</strong> (they never have on this dashboard)" in body
    assert "no longer all hold" not in body and "Next decision" not in body
    assert "Why they do not hold" in body
    assert 'href="#criterion-two-out-of-tree-plugins"' in body or "two-out-of-tree-plugins" in body


def test_the_fingerprint_is_labelled_facts_per_node_and_the_workers_apart(client: Client) -> None:
    r = factories.run(factories.cluster("calico-a"))
    Run.objects.filter(pk=r.pk).update(fingerprint=FINGERPRINT)
    for url in ("/clusters/calico-a/", f"/runs/{r.id}/"):
        body = client.get(url).content.decode()
        assert "{'" not in body and "[True" not in body and "True" not in body, url
        assert "Proxier demonstrated" in body and "<code>node-a</code>" in body
        assert "sctp.ko loaded after the tests" in body and "The worker host" in body
        assert "Kernel SCTP on the worker host" in body and "not tried in this run" in body


def test_a_manual_run_shows_no_empty_dispatch_time(client: Client) -> None:
    r = factories.run(factories.cluster("calico-a"))
    body = client.get(f"/runs/{r.id}/").content.decode()
    assert (
        "dispatched" not in body
        and "sent to a worker" not in body
        and "requested by the system" in body
    )
    visible = re.sub(r"<[^>]+>", "", body.split("Timings")[1][:1200])
    assert "+00:00" not in visible and " UTC (" in visible  # human times; ISO only in datetime=""


def test_the_clusters_list_labels_catalog_outcomes_and_tells_manual_freshness_apart(
    client: Client,
) -> None:
    c = factories.cluster("calico-a")
    r = factories.run(c, days_ago=0.1)
    TestResult.objects.create(
        run=r, test_key="conformance-tcp-pod-to-service", outcome="passed", finished=now()
    )
    scheduled = factories.cluster("calico-b")
    factories.schedule(scheduled, interval_minutes=60)
    factories.run(scheduled, days_ago=0.01)
    body = client.get("/clusters/").content.decode()
    assert "conformance-tcp" not in body  # only the catalog's tests
    assert "pod→svc" in body and '<span class="group-name">connectivity</span>' in body
    assert (
        'fresh-manual">fresh (no periodic schedule)' in body and 'fresh-fresh">on schedule' in body
    )


def test_one_or_two_runs_draw_no_trend_and_tests_outside_the_battery_show_not_run(
    client: Client,
) -> None:
    c = factories.cluster("calico-a")
    factories.run(c, battery="basic")
    body = client.get("/clusters/calico-a/").content.decode()
    assert 'svg class="spark"' not in body and "A trend needs at least 3 runs" in body
    assert 'title="not run: not in the basic battery"' in body


def test_matrix_rows_never_mix_releases_and_cells_name_their_cluster(client: Client) -> None:
    factories.run(factories.cluster("calico-new", kubernetes_version="1.31.2"))
    factories.run(factories.cluster("calico-old", kubernetes_version="1.18.20"), battery="basic")
    rows = [r for r in build_matrix()["rows"] if r["plugin"]["slug"] == "calico"]
    assert [(r["proxier"], r["minor"]) for r in rows] == [
        ("iptables", "1.31"),
        ("iptables", "1.18"),
    ]
    body = client.get("/matrix/").content.decode()
    assert '<a href="/runs/' in body and '>calico-old</a> <span class="rel">1.18.20</span>' in body
    assert 'data-minor="1.18"' in body
