"""Issue 39: verifying or rejecting a submission tells the maintainer what it did to each
criterion ("tests-written: 8 → 1 missing; ipvs: now demonstrated"), compared evaluation to
evaluation, and says "no change" only when the readiness page did not change."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.test import Client

from dashboard.domain.models import AuditEvent, Submission
from dashboard.domain.submission_state import evaluation_change
from tests import factories as f

pytestmark = pytest.mark.django_db
PENDING = Submission.Status.PENDING


def _said(client: Client, sub: Submission, action: str) -> str:
    response = client.post(f"/submissions/{sub.id}/review/", {"action": action, "reason": "ok"})
    assert response.status_code == 302
    return str(list(get_messages(response.wsgi_request))[-1])  # this decision's message


def test_verifying_says_what_it_did_to_each_criterion(client: Client, maintainer) -> None:
    sub = f.submission("calico", status=PENDING, proxier="ipvs")
    client.force_login(maintainer)
    said = _said(client, sub, "verify")
    # 8 catalog tests without a verdict before; pod-to-loadbalancer (no upstream test) after
    assert "tests-written: 8 → 1 missing" in said, said
    assert "ipvs: now demonstrated" in said
    assert "calico: not counted → counted" in said  # shown while pending, never counted
    assert "no change" not in said


def test_each_plugin_and_proxier_change_is_said_beside_the_status(
    client: Client, maintainer
) -> None:
    f.submission("cilium", proxier="iptables")  # two-out-of-tree-plugins stays unmet
    sub = f.submission("calico", status=PENDING, proxier="nftables")
    client.force_login(maintainer)
    said = _said(client, sub, "verify")
    assert "nftables: now demonstrated" in said and "calico: not counted → counted" in said
    assert "two-out-of-tree-plugins: unmet → met" in said  # two plugins now


def test_a_decision_that_changes_nothing_says_no_change_and_why(client: Client, maintainer) -> None:
    sub = f.submission("antrea", status=PENDING, emulated=True)
    client.force_login(maintainer)
    assert "Readiness: no change: emulated evidence." in _said(client, sub, "verify")


def test_rejecting_a_verified_file_says_what_it_undid(client: Client, maintainer) -> None:
    sub = f.submission("calico", proxier="ipvs")
    client.force_login(maintainer)
    said = _said(client, sub, "reject")
    assert "tests-written: 1 → 8 missing" in said and "ipvs: no longer demonstrated" in said


def test_the_comparison_names_each_proxier_and_plugin_change() -> None:
    before = {
        "transitions": [
            {
                "criteria": [
                    {
                        "key": "iptables-and-ipvs",
                        "status": "unmet",
                        "detail": "x",
                        "proxiers": {"ipvs": {"status": "unmet"}, "iptables": {"status": "met"}},
                    }
                ]
            }
        ]
    }
    after = {
        "transitions": [
            {
                "criteria": [
                    {
                        "key": "iptables-and-ipvs",
                        "status": "met",
                        "detail": "y",
                        "proxiers": {"ipvs": {"status": "met"}, "iptables": {"status": "met"}},
                    }
                ]
            }
        ]
    }
    assert evaluation_change(before, after) == [
        "iptables-and-ipvs: unmet → met",
        "ipvs: now demonstrated",
    ]
    assert evaluation_change(after, after) == []


def test_a_proxier_only_declared_is_flagged_in_the_queue_and_at_verify_time(
    client: Client, maintainer
) -> None:
    declared = f.submission("calico", status=PENDING, proxier="ipvs")
    shown = f.submission("cilium", status=PENDING, proxier="ipvs")
    Submission.objects.filter(pk=shown.pk).update(report={"proxier_detected": "ipvs"})
    client.force_login(maintainer)
    queue = client.get("/review/").content.decode()
    row = queue[queue.index(f'data-submission="{declared.id}"') :].split("</tr>")[0]
    assert "data-declared-only" in row
    row = queue[queue.index(f'data-submission="{shown.id}"') :].split("</tr>")[0]
    assert "data-declared-only" not in row
    assert "Its proxier (ipvs) is declared only" in _said(client, declared, "verify")
    assert "declared only" not in _said(client, shown, "verify")


def test_a_file_that_can_never_count_is_marked_in_the_queue(client: Client, maintainer) -> None:
    old = f.submission("calico", status=PENDING, run_days_ago=200)
    below = f.submission("cilium", status=PENDING, kubernetes_version="1.25.3")
    lab = f.submission("antrea", status=PENDING, emulated=True)
    fine = f.submission("kube-router", status=PENDING)
    client.force_login(maintainer)
    queue = client.get("/review/").content.decode()

    def row(sub: Submission) -> str:
        return queue[queue.index(f'data-submission="{sub.id}"') :].split("</tr>")[0]

    assert "data-never-counts" in row(old) and "is older than 90 days" in row(old)
    assert "Kubernetes 1.25 is older than 1.34" in row(below)
    assert "emulated evidence never counts" in row(lab)
    assert "data-never-counts" not in row(fine)


def test_a_change_only_on_the_watch_is_said_not_no_change(client: Client, maintainer) -> None:
    """Every criterion keeps its status (calico already counts on ipvs, on 1.36), yet `/`'s
    per-release watch changes: ipvs is now demonstrated on 1.35 too (the watch follows 1.37, 1.36, 1.35). Before, "no change"."""
    f.submission("calico", proxier="ipvs", kubernetes_version="1.36.1")
    sub = f.submission("calico", status=PENDING, proxier="ipvs", kubernetes_version="1.35.2")
    client.force_login(maintainer)
    said = _said(client, sub, "verify")
    assert "no change" not in said, said
    assert "ipvs on 1.35: now demonstrated" in said, said
    assert "calico on ipvs, 1.35: not counted → holds" in said, said  # shown while pending
    assert "tests-written" not in said and "iptables-and-ipvs" not in said  # statuses kept


def test_the_effect_is_written_to_the_audit_trail_apart_from_the_kep_history(
    client: Client, maintainer
) -> None:
    sub = f.submission("calico", status=PENDING, proxier="ipvs")
    nothing = f.submission("antrea", status=PENDING, emulated=True)
    client.force_login(maintainer)
    said = _said(client, sub, "verify")
    _said(client, nothing, "verify")
    verify = AuditEvent.objects.get(action="submission.verify", target=f"submission {sub.id}")
    assert verify.detail["effect"] in said  # the message's words, kept
    assert "tests-written: 8 → 1 missing" in verify.detail["effect"]
    assert "ipvs: now demonstrated" in verify.detail["effect"]
    same = AuditEvent.objects.get(action="submission.verify", target=f"submission {nothing.id}")
    assert same.detail["effect"] == "no change"  # emulated: not counted before or after
    page = client.get("/audit/").content.decode()
    assert "what it changed on the readiness page: tests-written: 8 → 1 missing" in page
    # KEP-614's milestones are history from the KEP, never entries of this trail; a review is
    # not a sign-off either
    assert not AuditEvent.objects.filter(action="signoff").exists()
    assert not [e for e in AuditEvent.objects.all() if "kep" in e.action.lower()]
    assert "data-kep-history-apart" in page
