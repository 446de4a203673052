"""Submissions: list with filters, the validation report, upload by vendors, verify/reject by maintainers."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from dashboard.domain.models import AuditEvent, Submission
from tests import factories
from tests.junit import sctp_junit
from tests.web.views.page_data import grow_submissions, queries

pytestmark = pytest.mark.django_db


def _upload(client: Client, data: bytes, **fields: str):
    form = {
        "plugin": "calico",
        "plugin_version": "3.28.0",
        "kubernetes_version": "1.30.1",
        "proxier": "iptables",
        "cluster": "",
        **fields,
        "file": SimpleUploadedFile("junit_01.xml", data, "application/xml"),
    }
    return client.post("/submissions/new/", form)


def test_a_vendor_uploads_a_junit_file_and_lands_on_its_report(client: Client, vendor_user) -> None:
    client.force_login(vendor_user)
    assert 'value="calico" selected' in client.get("/submissions/new/").content.decode()
    response = _upload(client, sctp_junit())
    sub = Submission.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/submissions/{sub.id}/"
    assert (sub.status, sub.uploaded_by, sub.vendor.name) == (
        "pending_review",
        "victor",
        "Calico vendor",
    )
    body = client.get(response["Location"]).content.decode()
    assert 'data-key="pod-to-pod" data-outcome="passed"' in body
    assert 'data-key="hostport-kubenet" data-outcome="skipped"' in body
    assert (
        'data-key="pod-to-loadbalancer" data-outcome="not_run"' in body
        and "missing from the file" in body
    )
    # Kubernetes 1.30 is below the release floor: one state, said once, and no "Qualifies".
    assert sub.sha256 in body and 'data-state="does-not-count"' in body
    assert "older than 1.34, the oldest release that counts" in body
    assert "verifying it would not change that" in body and "Qualifies" not in body
    assert "Download the original file" in body  # its own upload
    download = client.get(f"/submissions/{sub.id}/download/")
    assert download.status_code == 200 and download.content == sctp_junit()


def test_the_same_file_twice_is_refused_with_a_link_to_the_first(
    client: Client, vendor_user
) -> None:
    client.force_login(vendor_user)
    _upload(client, sctp_junit())
    again = _upload(client, sctp_junit())
    first = Submission.objects.get()
    assert (
        again.status_code == 409
        and f'<a href="/submissions/{first.id}/">open submission {first.id}</a>'
        in again.content.decode()
    )


def test_a_bad_field_re_renders_the_form_with_the_reason(client: Client, vendor_user) -> None:
    client.force_login(vendor_user)
    response = _upload(client, sctp_junit(), kubernetes_version="latest")
    assert (
        response.status_code == 400 and "is not a version like 1.31.2" in response.content.decode()
    )
    assert 'value="3.28.0"' in response.content.decode()  # what the vendor typed is kept
    assert not Submission.objects.exists()


def test_a_vendor_cannot_upload_for_another_vendors_plugin(client: Client, vendor_user) -> None:
    client.force_login(vendor_user)
    assert _upload(client, sctp_junit(), plugin="cilium").status_code == 403
    assert not Submission.objects.exists()


def test_a_maintainer_verifies_and_the_audit_log_says_so(client: Client, maintainer) -> None:
    sub = factories.submission("calico", status="pending_review")
    client.force_login(maintainer)
    response = client.post(
        f"/submissions/{sub.id}/review/", {"action": "verify", "reason": "looks right"}
    )
    assert response.status_code == 302
    sub.refresh_from_db()
    assert (sub.status, sub.reviewed_by) == ("verified", maintainer)
    assert AuditEvent.objects.filter(
        action="submission.verify", actor="maria", target=f"submission {sub.id}"
    ).exists()


def test_a_rejection_needs_a_reason(client: Client, maintainer) -> None:
    sub = factories.submission("calico", status="pending_review")
    client.force_login(maintainer)
    body = client.post(
        f"/submissions/{sub.id}/review/", {"action": "reject"}, follow=True
    ).content.decode()
    assert "a rejection needs a reason" in body
    sub.refresh_from_db()
    assert sub.status == "pending_review"


def test_a_maintainer_downloads_the_original_file(client: Client, maintainer) -> None:
    sub = factories.submission("calico")
    client.force_login(maintainer)
    response = client.get(f"/submissions/{sub.id}/download/")
    assert response.status_code == 200 and response.content == bytes(sub.content)
    assert response["Content-Disposition"].startswith("attachment")


def test_another_vendor_may_not_download_the_file(client: Client, other_vendor_user) -> None:
    sub = factories.submission("calico")
    client.force_login(other_vendor_user)
    response = client.get(f"/submissions/{sub.id}/download/")
    assert response.status_code == 403 and b"Not allowed" in response.content
    assert (
        "Download the original file" not in client.get(f"/submissions/{sub.id}/").content.decode()
    )


def test_a_rejected_submission_says_it_does_not_count(client: Client, maintainer) -> None:
    sub = factories.submission("calico", status="rejected")
    body = client.get(f"/submissions/{sub.id}/").content.decode()
    assert 'data-state="does-not-count"' in body and "A maintainer rejected it" in body
    assert "once a maintainer verifies it" not in body and "Counted" not in body


def test_anonymous_visitors_learn_how_vendors_submit(client: Client) -> None:
    body = client.get("/submissions/").content.decode()
    assert (
        "How vendors submit" in body
        and 'href="/api/v1/docs/"' in body
        and 'href="/submissions/new/"' in body
    )


def test_the_list_filters_by_plugin_and_status_and_marks_the_vendors_own(
    client: Client, vendor_user
) -> None:
    mine = factories.submission("calico", status="pending_review")
    Submission.objects.filter(pk=mine.pk).update(vendor=vendor_user.vendors.get())
    verified = factories.submission("cilium")
    client.force_login(vendor_user)
    body = client.get("/submissions/?plugin=calico").content.decode()
    assert (
        f'data-submission="{mine.id}" class="own"' in body
        and f'data-submission="{verified.id}"' not in body
    )
    body = client.get("/submissions/?status=verified").content.decode()
    assert f'data-submission="{verified.id}"' in body and f'data-submission="{mine.id}"' not in body
    assert (
        f'data-submission="{verified.id}"'
        not in client.get("/submissions/?mine=1").content.decode()
    )


def test_query_counts_do_not_grow_with_history(client: Client) -> None:
    grow_submissions(3)
    sub = Submission.objects.first()
    assert sub is not None
    before = (queries(client, "/submissions/"), queries(client, f"/submissions/{sub.id}/"))
    grow_submissions(80)
    assert (
        (queries(client, "/submissions/"), queries(client, f"/submissions/{sub.id}/"))
        == before
        == (3, 1)
    )
