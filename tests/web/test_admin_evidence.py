"""Issue 22, finding 4: in /admin/ a submission's status, `emulated`, run time and release, a
run's outcomes and a token's role and revoked flag could be changed, and runs and submissions
deleted, with no audit entry. Now evidence, results and tokens are read-only there; corrections
are actions with a reason, audited; deleting evidence is a withdrawal that keeps the row."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils.timezone import now

from dashboard.domain.models import ApiToken, AuditEvent, Run, Submission, TestResult
from dashboard.domain.readiness import Context
from dashboard.domain.readiness.criteria import tests_written, two_out_of_tree_plugins
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(admin_user) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


def verdict(module):
    return module.evaluate(Context(now=now()))


def test_evidence_and_tokens_cannot_be_changed_in_the_admin(admin_client, maintainer) -> None:
    run = factories.run(factories.cluster(plugin_slug="calico"))
    sub = factories.submission("cilium", status=Submission.Status.PENDING)
    token, _ = ApiToken.issue(role=ApiToken.Role.VENDOR, vendor=factories.vendor("V", ("calico",)))
    result = run.results.first()
    assert result is not None
    audit_before = AuditEvent.objects.count()
    attempts = [
        (
            f"/admin/dashboard/submission/{sub.id}/change/",
            {"status": "verified", "emulated": "", "kubernetes_version": "1.35.0"},
        ),
        (f"/admin/dashboard/run/{run.id}/change/", {"state": "error", "battery": "basic"}),
        (f"/admin/dashboard/testresult/{result.id}/change/", {"outcome": "failed"}),
        (
            f"/admin/dashboard/apitoken/{token.id}/change/",
            {"role": "maintainer", "revoked": "on", "user": maintainer.id},
        ),
    ]
    for url, data in attempts:
        assert admin_client.post(url, data).status_code == 403, url
    sub.refresh_from_db()
    run.refresh_from_db()
    token.refresh_from_db()
    assert sub.status == Submission.Status.PENDING and run.state == Run.State.FINISHED
    assert TestResult.objects.get(pk=result.pk).outcome == result.outcome
    assert token.role == ApiToken.Role.VENDOR and not token.revoked
    for url in ("/admin/dashboard/run/add/", "/admin/dashboard/submission/add/"):
        assert admin_client.get(url).status_code == 403
    # still readable
    assert admin_client.get(f"/admin/dashboard/run/{run.id}/change/").status_code == 200
    assert AuditEvent.objects.count() == audit_before


def test_evidence_cannot_be_deleted_not_even_through_its_cluster(admin_client) -> None:
    cluster = factories.cluster(plugin_slug="calico")
    run = factories.run(cluster)
    sub = factories.submission("cilium")
    for url in (
        f"/admin/dashboard/run/{run.id}/delete/",
        f"/admin/dashboard/submission/{sub.id}/delete/",
        f"/admin/dashboard/cluster/{cluster.id}/delete/",  # would cascade to its runs
    ):
        admin_client.post(url, {"post": "yes"})
    admin_client.post(
        "/admin/dashboard/run/",
        {"action": "delete_selected", "_selected_action": [run.id], "post": "yes"},
    )
    assert Run.objects.filter(pk=run.pk).exists() and Submission.objects.filter(pk=sub.pk).exists()


def test_withdrawal_asks_a_reason_keeps_the_row_is_audited_and_stops_counting(
    admin_client,
) -> None:
    calico = factories.run(factories.cluster(plugin_slug="calico"))
    factories.run(factories.cluster(plugin_slug="cilium"))
    assert verdict(two_out_of_tree_plugins).status == "met"
    select = {"action": "withdraw_evidence", "_selected_action": [calico.id]}
    form = admin_client.post("/admin/dashboard/run/", select)
    assert form.status_code == 200 and 'name="reason"' in form.content.decode()
    blank = admin_client.post("/admin/dashboard/run/", {**select, "apply": "1", "reason": "  "})
    assert blank.status_code == 200 and not Run.objects.get(pk=calico.pk).withdrawn_at
    done = admin_client.post(
        "/admin/dashboard/run/",
        {**select, "apply": "1", "reason": "the cluster ran a patched kube-proxy"},
    )
    assert done.status_code == 302
    calico.refresh_from_db()
    assert calico.withdrawn_at and calico.withdrawn_by == "admin"
    entry = AuditEvent.objects.get(action="evidence.withdraw")
    assert entry.actor == "admin" and entry.target == f"run {calico.id}"
    assert entry.detail["reason"] == "the cluster ran a patched kube-proxy"
    v = verdict(two_out_of_tree_plugins)
    assert v.status == "unmet"
    assert not any(e["id"] == calico.id and e["counts"] for e in v.evidence)
    assert not any(
        e["kind"] == "run" and e["id"] == calico.id and e["counts"]
        for e in verdict(tests_written).evidence
    )
    page = admin_client.get(f"/runs/{calico.id}/").content.decode()
    assert "withdrawn" in page and "patched kube-proxy" in page
    # reinstating is a correction too: with a reason, audited
    admin_client.post(
        "/admin/dashboard/run/",
        {
            "action": "reinstate_evidence",
            "_selected_action": [calico.id],
            "apply": "1",
            "reason": "wrong cluster",
        },
    )
    assert AuditEvent.objects.filter(action="evidence.reinstate", actor="admin").exists()
    assert verdict(two_out_of_tree_plugins).status == "met"


def test_a_withdrawn_submission_stops_counting(admin_client) -> None:
    factories.run(factories.cluster(plugin_slug="calico"))
    sub = factories.submission("cilium")
    assert verdict(two_out_of_tree_plugins).status == "met"
    admin_client.post(
        "/admin/dashboard/submission/",
        {
            "action": "withdraw_evidence",
            "_selected_action": [sub.id],
            "apply": "1",
            "reason": "the same run as submission 3",
        },
    )
    assert Submission.objects.get(pk=sub.pk).withdrawn_at is not None
    assert verdict(two_out_of_tree_plugins).status == "unmet"
    assert "withdrawn" in admin_client.get(f"/submissions/{sub.id}/").content.decode()


def test_tokens_are_revoked_by_an_action_with_a_reason(admin_client) -> None:
    token, _ = ApiToken.issue(role=ApiToken.Role.VENDOR, vendor=factories.vendor("V", ("calico",)))
    admin_client.post(
        "/admin/dashboard/apitoken/",
        {
            "action": "revoke_tokens",
            "_selected_action": [token.id],
            "apply": "1",
            "reason": "leaked in a CI log",
        },
    )
    token.refresh_from_db()
    assert token.revoked
    entry = AuditEvent.objects.get(action="token.revoke")
    assert entry.actor == "admin" and entry.detail["reason"] == "leaked in a CI log"


def test_deactivating_a_user_in_the_admin_names_the_admin(admin_client, maintainer) -> None:
    ApiToken.issue(role=ApiToken.Role.MAINTAINER, user=maintainer)
    page = admin_client.get(f"/admin/auth/user/{maintainer.id}/change/")
    form = page.context["adminform"].form
    data = {k: v for k, v in form.initial.items() if v is not None and k != "password"}
    data.update(
        {
            "username": maintainer.username,
            "is_active": "",
            "groups": [g.id for g in maintainer.groups.all()],
            "date_joined_0": maintainer.date_joined.strftime("%Y-%m-%d"),
            "date_joined_1": maintainer.date_joined.strftime("%H:%M:%S"),
        }
    )
    data = {
        k: v for k, v in data.items() if k not in ("last_login", "date_joined", "user_permissions")
    }
    response = admin_client.post(f"/admin/auth/user/{maintainer.id}/change/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert not get_user_model().objects.get(pk=maintainer.pk).is_active
    entry = AuditEvent.objects.get(action="token.revoke")
    assert entry.actor == "admin" and "deactivated" in entry.detail["reason"]


def test_a_withdrawn_newer_run_does_not_hide_an_older_standing_one(admin_user) -> None:
    from dashboard.domain.readiness import evaluate
    from dashboard.domain.withdrawals import CorrectionError, withdraw

    cluster = factories.cluster(plugin_slug="calico")
    older = factories.run(cluster, days_ago=3)
    newer = factories.run(cluster, days_ago=1)
    factories.run(factories.cluster(plugin_slug="cilium"))
    with pytest.raises(CorrectionError):
        withdraw(newer, actor=admin_user, reason=" ")
    assert withdraw(newer, actor=admin_user, reason="ran on a patched build")
    assert not withdraw(newer, actor=admin_user, reason="again")  # once
    v = verdict(two_out_of_tree_plugins)
    assert v.status == "met"
    counted = {e["id"] for e in v.evidence if e["kind"] == "run" and e["counts"]}
    assert older.id in counted and newer.id not in counted
    # the published evaluation (what the page and the API serve) agrees
    published = evaluate()
    evidence = [
        e
        for t in published["transitions"]
        for c in t["criteria"]
        for e in c["evidence"]
        if e["kind"] == "run" and e["id"] == newer.id
    ]
    assert all(not e["counts"] for e in evidence)
