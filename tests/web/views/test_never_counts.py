"""Issue 39, item 4: a file that can never count says so before it reaches a maintainer's
decision, and in the same words everywhere: the upload's answer (page and API), its page and
the review queue; a proxier only declared, not shown by the file, is flagged on the page a
maintainer verifies from and in the API's answer, as it is in the message after verifying."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils.timezone import now

from dashboard.domain.models import Submission
from tests import factories as f
from tests.domain.ingest.builders import junit_v2
from tests.junit import SCTP_V130

pytestmark = pytest.mark.django_db
PENDING = Submission.Status.PENDING


def _junit(days_ago: float) -> bytes:
    stamp = (now() - timedelta(days=days_ago)).strftime("%Y-%m-%dT%H:%M:%S")
    return junit_v2([(name, "passed") for name in SCTP_V130], timestamp=stamp)


def _form(data: bytes, **fields: str) -> dict[str, object]:
    return {
        "plugin": "calico",
        "plugin_version": "3.28.0",
        "kubernetes_version": "1.34.1",
        "proxier": "iptables",
        **fields,
        "file": SimpleUploadedFile("junit_01.xml", data, "application/xml"),
    }


def test_an_upload_older_than_the_window_is_marked_at_once(client: Client, vendor_user) -> None:
    client.force_login(vendor_user)
    response = client.post("/submissions/new/", _form(_junit(200)))
    assert response.status_code == 302
    said = str(list(get_messages(response.wsgi_request))[-1])
    assert "can never count: its run (" in said and "is older than 90 days" in said
    page = client.get(response["Location"]).content.decode()
    assert "data-never-counts" in page and "is older than 90 days" in page


def test_a_fresh_upload_is_not_marked(client: Client, vendor_user) -> None:
    client.force_login(vendor_user)
    response = client.post("/submissions/new/", _form(_junit(2)))
    said = str(list(get_messages(response.wsgi_request))[-1])
    assert "waits for a maintainer's review" in said and "never" not in said
    assert "data-never-counts" not in client.get(response["Location"]).content.decode()


def test_the_api_says_the_same_at_upload(client: Client, vendor_token) -> None:
    response = client.post(
        "/api/v1/submissions/",
        _form(_junit(200)),
        HTTP_AUTHORIZATION=f"Token {vendor_token}",
    )
    body = response.json()
    assert response.status_code == 201, body
    assert (
        body["never_counts"].startswith("its run (")
        and "older than 90 days" in body["never_counts"]
    )
    # A JUnit does not show kube-proxy's mode: the flag a verifier gets.
    assert body["proxier_declared_only"].startswith("Its proxier (iptables) is declared only")


def test_the_page_a_maintainer_verifies_from_flags_a_declared_proxier(
    client: Client, maintainer
) -> None:
    declared = f.submission("calico", status=PENDING, proxier="ipvs")
    lab = f.submission("antrea", status=PENDING, emulated=True)
    client.force_login(maintainer)
    page = client.get(f"/submissions/{declared.id}/").content.decode()
    box = page[page.index('class="review-box"') :]
    assert 'data-flag="proxier-declared-only"' in box
    assert "Its proxier (ipvs) is declared only" in box
    assert 'data-flag="never-counts"' not in box
    page = client.get(f"/submissions/{lab.id}/").content.decode()
    assert "It can never count: emulated evidence never counts" in page
    api = client.get(f"/api/v1/submissions/{lab.id}/").json()
    assert api["never_counts"] == "emulated evidence never counts"
    # Once verified, the question is settled: no "can never count" on it any more.
    declared.status = Submission.Status.VERIFIED
    declared.save(update_fields=["status"])
    assert client.get(f"/api/v1/submissions/{declared.id}/").json()["never_counts"] == ""
