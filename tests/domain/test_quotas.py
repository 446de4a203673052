"""Per-vendor upload quotas (issue 22, finding 10): pending submissions and bytes per day.

A flood of uploads from one token is refused with words naming the quota, and a refused upload
stores nothing, through the API and the upload page alike.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils.timezone import now

from dashboard.domain.models import AuditEvent, Submission
from tests.uploads import connectivity_junit, post

pytestmark = pytest.mark.django_db
URL = "/submissions/new/"


def test_a_vendor_with_too_many_pending_submissions_gets_429_and_nothing_is_stored(
    client, vendor_token, other_vendor_token, settings
):
    settings.SUBMISSION_MAX_PENDING = 2
    for salt in ("a", "b"):
        assert post(client, vendor_token, connectivity_junit(salt=salt)).status_code == 201
    resp = post(client, vendor_token, connectivity_junit(salt="c"))
    assert resp.status_code == 429, resp.content
    body = resp.json()
    assert "2 submissions pending review" in body["error"]
    assert "SUBMISSION_MAX_PENDING" in body["error"]
    assert (body["quota"], body["limit"]) == ("pending", 2)
    assert Submission.objects.count() == 2
    assert AuditEvent.objects.filter(action="submission.create").count() == 2
    # Another vendor's quota is its own.
    other = post(client, other_vendor_token, connectivity_junit(salt="c"), plugin="cilium")
    assert other.status_code == 201, other.content
    # Once a maintainer has reviewed one, the vendor may send again.
    Submission.objects.filter(plugin__slug="calico").update(status=Submission.Status.REJECTED)
    assert post(client, vendor_token, connectivity_junit(salt="d")).status_code == 201


def test_a_vendor_past_its_daily_bytes_gets_413_naming_the_quota(client, vendor_token, settings):
    first = connectivity_junit(salt="a")
    settings.SUBMISSION_MAX_BYTES_PER_DAY = len(first) + 100
    assert post(client, vendor_token, first).status_code == 201
    resp = post(client, vendor_token, connectivity_junit(salt="b"))
    assert resp.status_code == 413, resp.content
    body = resp.json()
    assert "daily quota" in body["error"] and "SUBMISSION_MAX_BYTES_PER_DAY" in body["error"]
    assert (body["quota"], body["sent"]) == ("bytes_per_day", len(first))
    assert Submission.objects.count() == 1
    # Bytes older than a day no longer count.
    Submission.objects.update(created=now() - timedelta(days=1, minutes=1))
    assert post(client, vendor_token, connectivity_junit(salt="b")).status_code == 201


def test_the_upload_page_tells_the_vendor_the_quota_was_reached(client, vendor_user, settings):
    settings.SUBMISSION_MAX_PENDING = 1
    client.force_login(vendor_user)
    form = {
        "plugin": "calico",
        "plugin_version": "3.28.0",
        "kubernetes_version": "1.34.2",
        "proxier": "iptables",
    }
    codes = []
    for salt in ("a", "b"):
        resp = client.post(
            URL,
            {**form, "file": SimpleUploadedFile("junit.xml", connectivity_junit(salt=salt))},
        )
        codes.append(resp.status_code)
    assert codes[1] == 429 and "quota reached" in resp.content.decode()
    assert Submission.objects.count() == 1


def test_quotas_off_with_zero(client, vendor_token, settings):
    settings.SUBMISSION_MAX_PENDING = 0
    settings.SUBMISSION_MAX_BYTES_PER_DAY = 0
    for salt in ("a", "b", "c"):
        assert post(client, vendor_token, connectivity_junit(salt=salt)).status_code == 201
