"""Review: pending submissions, the sign-off that freezes what it saw, the audit log, the KEP report."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.domain import readiness
from dashboard.domain.models import AuditEvent, SignOff
from tests import factories
from tests.web.views.page_data import grow_history, grow_submissions, queries

pytestmark = pytest.mark.django_db


def test_the_page_lists_pending_submissions_and_the_next_transition(
    client: Client, maintainer
) -> None:
    sub = factories.submission("cilium", status="pending_review")
    client.force_login(maintainer)
    body = client.get("/review/").content.decode()
    assert f'data-submission="{sub.id}"' in body
    assert "Sign off alpha → beta" in body and "not every criterion is met" in body


def test_a_sign_off_freezes_the_evaluation_and_moves_the_stage(client: Client, maintainer) -> None:
    client.force_login(maintainer)
    response = client.post(
        "/review/signoff/",
        {
            "from_stage": "alpha",
            "to_stage": "beta",
            "kubernetes_release": "1.19",
            "comment": "periodic job green for a week",
            "override": "confirmed",
            "override_reason": "the lab covers it",
        },
    )
    signoff = SignOff.objects.get()
    assert signoff.kubernetes_release == "1.19"
    assert (
        response.status_code == 302 and response["Location"] == f"/review/signoffs/{signoff.uuid}/"
    )
    # the evaluation it saw: the KEP's stage, nothing signed off here yet (issue 39)
    assert signoff.snapshot["stage_source"] == "kep" and signoff.maintainer == maintainer
    assert {c["key"] for t in signoff.snapshot["transitions"] for c in t["criteria"]} >= {
        "tests-written"
    }
    assert readiness.current_stage() == "beta"
    event = AuditEvent.objects.get(action="signoff")
    assert (event.actor, event.target, event.detail["criteria_met"]) == (
        "maria",
        "alpha → beta",
        False,
    )
    assert event.detail["kubernetes_release"] == "1.19"
    assert event.detail["override_reason"] == "the lab covers it"
    assert "tests-written" in event.detail["unmet_criteria"]
    front = client.get("/").content.decode()
    assert "since Kubernetes 1.19" in front and "signed off over unmet criteria: " in front
    # Later evidence does not change what the sign-off saw.
    factories.run(factories.cluster("calico-a"))
    page = client.get(f"/review/signoffs/{signoff.uuid}/").content.decode()
    assert "periodic job green for a week" in page and "no verdict in counted evidence" in page


def test_signing_off_over_unmet_criteria_needs_its_own_step_naming_them_and_a_reason(
    client: Client, maintainer
) -> None:
    client.force_login(maintainer)
    form = {
        "from_stage": "alpha",
        "to_stage": "beta",
        "kubernetes_release": "1.19",
        "comment": "good enough",
    }
    step = client.post("/review/signoff/", form)
    body = step.content.decode()
    assert step.status_code == 200 and "over unmet criteria?" in body
    assert 'data-criterion="tests-written"' in body and 'name="override_reason"' in body
    assert not SignOff.objects.exists()
    blank = client.post(
        "/review/signoff/", {**form, "override": "confirmed", "override_reason": " "}
    )
    assert blank.status_code == 400 and not SignOff.objects.exists()
    done = client.post(
        "/review/signoff/", {**form, "override": "confirmed", "override_reason": "KEP says so"}
    )
    assert done.status_code == 302
    signoff = SignOff.objects.get()
    assert signoff.snapshot["override"]["reason"] == "KEP says so"
    report = client.get("/review/report.md").content.decode()
    assert "Current stage: **beta** (signed off over unmet criteria: " in report
    assert "reason: KEP says so" in report
    badge = client.get("/badge/stage.svg").content.decode()
    assert "signed off over unmet criteria" in badge and "#9a6700" in badge


def test_a_sign_off_needs_a_comment_and_the_current_stage(client: Client, maintainer) -> None:
    client.force_login(maintainer)
    body = client.post(
        "/review/signoff/", {"from_stage": "alpha", "to_stage": "beta", "comment": " "}, follow=True
    ).content.decode()
    assert "needs a comment" in body
    body = client.post(
        "/review/signoff/",
        {"from_stage": "beta", "to_stage": "stable", "comment": "x"},
        follow=True,
    ).content.decode()
    assert "only alpha → beta can be signed off" in body
    body = client.post(
        "/review/signoff/",
        {"from_stage": "alpha", "to_stage": "beta", "comment": "x", "kubernetes_release": "soon"},
        follow=True,
    ).content.decode()
    assert "names the Kubernetes release" in body
    assert not SignOff.objects.exists()


def test_the_report_is_markdown_with_verdicts_links_and_hashes(client: Client, maintainer) -> None:
    r = factories.run(factories.cluster("calico-a"))
    s = factories.submission("cilium", proxier="ipvs")
    client.force_login(maintainer)
    response = client.get("/review/report.md")
    body = response.content.decode()
    assert response["Content-Type"].startswith("text/markdown")
    assert "| `two-out-of-tree-plugins`" in body and "✅ met" in body
    assert f"[run {r.id}](http://testserver/runs/{r.id}/)" in body
    assert f"sha256 `{s.sha256}`" in body
    assert (
        "Plugins covered by counted evidence: calico, cilium; proxier modes: iptables, ipvs."
        in body
    )
    assert "attachment" in client.get("/review/report.md?download=1")["Content-Disposition"]


def test_the_audit_log_lists_who_did_what(client: Client, maintainer) -> None:
    AuditEvent.record("victor", "submission.create", "submission 7", plugin="calico")
    client.force_login(maintainer)
    body = client.get("/review/").content.decode()
    assert "victor" in body and "submission.create" in body and "plugin: calico" in body


def test_query_counts_do_not_grow_with_history(client: Client, maintainer) -> None:
    c = factories.cluster("calico-a")
    grow_history(c, 3)
    grow_submissions(4)
    client.force_login(maintainer)
    before = (queries(client, "/review/"), queries(client, "/review/report.md"))
    grow_history(c, 42)  # the newest run stays of the same kind, so the verdicts stay the same
    grow_submissions(60)
    for i in range(30):
        AuditEvent.record("maria", "submission.verify", f"submission {i}")
    assert (
        (queries(client, "/review/"), queries(client, "/review/report.md"))
        == before
        == (22, 20)  # +1: agreement.contradictions; the review page +1: the approval queue
    )  # the review page's criteria over time: 2 (snapshots before and in the window); the report:
    # +1, the audit chain's head it quotes; the evaluation itself: a fixed number (readiness)
