"""Issue 39: a fresh install knows KEP-614's history (alpha 1.12, beta 1.19, GA 1.20 with the KEP
PRs), marked as history from the KEP, never as a sign-off made here; this deployment's own
sign-offs are kept apart wherever both are shown."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.domain import kep_history, publication, readiness
from dashboard.domain.kep_report import markdown_report
from dashboard.domain.models import AuditEvent, SignOff

pytestmark = pytest.mark.django_db


def _sign_off_beta(maintainer) -> SignOff:
    signoff = SignOff.objects.create(
        from_stage="alpha",
        to_stage="beta",
        maintainer=maintainer,
        comment="our own evidence",
        kubernetes_release="1.19",
        snapshot=readiness.evaluate(),
    )
    publication.invalidate()
    return signoff


def test_a_fresh_install_says_ga_from_the_kep_and_never_alpha(client: Client) -> None:
    body = client.get("/").content.decode()
    assert "SCTP is <strong>alpha" not in body and "SCTP is alpha" not in body
    assert "SCTP is <strong>stable (GA)</strong> since Kubernetes 1.20" in body
    # the GA criteria watch leads, not a decision long taken upstream
    assert "data-watch=" in body and "Next decision" not in body
    assert not SignOff.objects.exists() and not AuditEvent.objects.filter(action="signoff")


def test_the_history_lists_each_milestone_with_its_release_date_and_kep_prs(
    client: Client,
) -> None:
    body = client.get("/").content.decode()
    history = body[
        body.index("data-kep-history") : body.index("</details>", body.index("data-kep-history"))
    ]
    assert "from the KEP, not sign-offs made here" in history
    for stage, release, day in (
        ("alpha", "1.12", "2018-09-27"),
        ("beta", "1.19", "2020-08-26"),
        ("stable", "1.20", "2020-12-08"),
    ):
        row = history[history.index(f'data-milestone="{stage}"') :].split("</tr>")[0]
        assert f"<td>{release}</td><td>{day}</td>" in row
    for pr in (
        "https://github.com/kubernetes/community/pull/2276",
        "https://github.com/kubernetes/enhancements/pull/1250",
        "https://github.com/kubernetes/enhancements/pull/2073",
    ):
        assert f'href="{pr}"' in history
    assert f'href="{kep_history.KEP_URL}"' in history


def test_the_finished_transitions_say_they_were_reached_upstream_not_signed_off(
    client: Client,
) -> None:
    body = client.get("/").content.decode()
    assert "alpha → beta: reached upstream in Kubernetes 1.19 (2020-08-26, KEP-614)" in body
    assert "signed off —" not in body


def test_the_stage_badge_names_the_kep_as_its_source(client: Client) -> None:
    badge = client.get("/badge/stage.svg").content.decode()
    assert "GA since 1.20 (KEP-614)" in badge


def test_this_dashboards_own_sign_off_is_shown_apart_from_the_kep(
    client: Client, maintainer
) -> None:
    _sign_off_beta(maintainer)
    body = client.get("/").content.decode()
    assert "SCTP is <strong>beta</strong> since Kubernetes 1.19" in body
    assert 'data-stage-source="signoff"' in body
    assert "KEP-614's history says GA since Kubernetes 1.20 (2020-12-08)" in body
    badge = client.get("/badge/stage.svg").content.decode()
    assert "KEP-614" not in badge


def test_the_kep_report_keeps_the_history_apart_from_sign_offs_made_here(maintainer) -> None:
    fresh = markdown_report(readiness.evaluate(), "http://testserver")
    assert "Current stage: **stable** (from KEP-614's history; no sign-off recorded" in fresh
    assert "KEP-614's history (from [the KEP]" in fresh
    assert "- GA: Kubernetes 1.20, released 2020-12-08; [kubernetes/enhancements#2073]" in fresh
    assert "Sign-offs (made on this dashboard" not in fresh

    _sign_off_beta(maintainer)
    report = markdown_report(readiness.evaluate(), "http://testserver")
    assert "Current stage: **beta**" in report and "(this dashboard's own sign-off)" in report
    history, signoffs = report.index("KEP-614's history"), report.index("Sign-offs (made on")
    assert history < signoffs
    assert "alpha → beta by maria" in report[signoffs:]


def test_the_audit_trail_says_the_kep_history_is_not_in_it(client: Client, maintainer) -> None:
    client.force_login(maintainer)
    body = client.get("/audit/").content.decode()
    assert "data-kep-history-apart" in body and "never as an entry of this trail" in body


def test_a_maintainer_still_signs_off_this_dashboards_own_track_from_alpha(
    client: Client, maintainer
) -> None:
    client.force_login(maintainer)
    body = client.get("/review/").content.decode()
    assert "Sign off alpha → beta" in body and 'data-stage-source="kep"' in body
