"""Request bodies refused from their headers, unread (issue 12: bodies spooled before a 403).

The body is a stream that counts what is read from it: a refusal must read nothing (nothing
spooled to disk, nothing parsed). One test speaks raw HTTP to the live server: a client that
announces 500 MB and sends a few bytes is answered at once.
"""

from __future__ import annotations

import io
import socket
import time
from typing import Any

import pytest
from django.test import Client

from dashboard.domain.models import Cluster, Submission
from tests.conftest import auth

pytestmark = pytest.mark.django_db

BOUNDARY = "hardening-boundary"


class CountingStream(io.RawIOBase):
    """A request body of `size` bytes that records how much of it anyone read."""

    def __init__(self, size: int) -> None:
        self.size, self.read_bytes = size, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = min(len(buffer), self.size - self.read_bytes)
        buffer[:n] = b"x" * n
        self.read_bytes += n
        return n


def post_unread(client: Client, path: str, size: int, **headers):
    body = CountingStream(size)
    extra: dict[str, Any] = {"wsgi.input": body, **headers}
    resp = client.generic(
        "POST",
        path,
        b"",
        content_type=f"multipart/form-data; boundary={BOUNDARY}",
        CONTENT_LENGTH=str(size),
        **extra,
    )
    return resp, body


def test_an_oversized_api_upload_is_refused_413_before_it_is_read(vendor_token, settings):
    settings.SUBMISSION_MAX_BYTES = 1024 * 1024
    resp, body = post_unread(
        Client(), "/api/v1/submissions/", 400 * 1024 * 1024, **auth(vendor_token)
    )
    assert resp.status_code == 413 and "larger than" in resp.json()["error"]
    assert body.read_bytes == 0
    assert not Submission.objects.exists()


def test_an_oversized_body_elsewhere_is_refused_before_it_is_read(vendor_token, vendor_user):
    resp, body = post_unread(Client(), "/api/v1/clusters/", 50 * 1024 * 1024, **auth(vendor_token))
    assert resp.status_code == 413 and body.read_bytes == 0
    page = Client()
    page.force_login(vendor_user)
    resp, body = post_unread(page, "/clusters/new/", 50 * 1024 * 1024)
    assert resp.status_code == 413 and body.read_bytes == 0
    assert not Cluster.objects.exists()


def test_an_anonymous_api_upload_is_refused_401_before_it_is_read():
    for headers in ({}, {"HTTP_AUTHORIZATION": "Token sctp_not-a-real-token"}):
        resp, body = post_unread(Client(), "/api/v1/submissions/", 10 * 1024 * 1024, **headers)
        assert resp.status_code == 401 and "token" in resp.json()["error"]
        assert body.read_bytes == 0
    assert not Submission.objects.exists()


def test_an_anonymous_page_upload_is_refused_401_before_it_is_read():
    resp, body = post_unread(Client(), "/submissions/new/", 10 * 1024 * 1024)
    assert resp.status_code == 401 and body.read_bytes == 0
    resp, body = post_unread(Client(), "/clusters/new/", 200 * 1024)
    assert resp.status_code == 401 and body.read_bytes == 0


def test_a_content_length_that_is_not_a_number_is_a_400(vendor_token):
    resp = Client().generic(
        "POST", "/api/v1/submissions/", b"", CONTENT_LENGTH="12abc", **auth(vendor_token)
    )
    assert resp.status_code == 400


def test_uploads_within_the_limit_still_work(client, vendor_token):
    from tests.uploads import connectivity_junit, post

    assert post(client, vendor_token, connectivity_junit()).status_code == 201


@pytest.mark.django_db(transaction=True)
def test_over_http_a_500_mb_announcement_is_answered_at_once(live_server, vendor_token):
    host, port = live_server.thread.host, live_server.thread.port
    with socket.create_connection((host, port), timeout=5) as sock:
        started = time.monotonic()
        sock.sendall(
            (
                f"POST /api/v1/submissions/ HTTP/1.1\r\nHost: {host}\r\n"
                f"Authorization: Token {vendor_token}\r\n"
                f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
                f"Content-Length: {500 * 1024 * 1024}\r\n\r\n--{BOUNDARY}\r\n"
            ).encode()
        )
        answer = sock.recv(4096).decode("latin-1")
        took = time.monotonic() - started
    assert answer.startswith("HTTP/1.1 413"), answer[:200]
    assert took < 2
    assert not Submission.objects.exists()
