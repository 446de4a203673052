"""A Content-Security-Policy without inline script on every answer, and templates that need none
(issue 12: no Content-Security-Policy)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client

from tests import factories

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def policy(resp) -> dict[str, list[str]]:
    header = resp["Content-Security-Policy"]
    return {d.split()[0]: d.split()[1:] for d in header.split(";") if d.strip()}


def test_every_kind_of_answer_carries_a_strict_policy(maintainer):
    c = factories.cluster("calico-a")
    run = factories.run(c)
    anonymous, signed_in = Client(), Client()
    signed_in.force_login(maintainer)
    answers = [
        anonymous.get(p)
        for p in (
            "/",
            "/matrix/",
            "/clusters/",
            f"/clusters/{c.name}/",
            f"/runs/{run.id}/",
            "/login/",
            "/admin/login/",
            "/api/v1/readiness/",
            "/badge/calico.svg",
            "/no-such-page/",
        )
    ]
    answers += [signed_in.get(p) for p in ("/review/", "/clusters/new/", "/admin/", "/schedules/")]
    for resp in answers:
        csp = policy(resp)
        assert csp["script-src"] == ["'self'"], resp
        assert "'unsafe-inline'" not in resp["Content-Security-Policy"]
        assert "'unsafe-eval'" not in resp["Content-Security-Policy"]
        assert csp["frame-ancestors"] == ["'none'"] and csp["object-src"] == ["'none'"]
        assert csp["base-uri"] == ["'none'"] and csp["form-action"] == ["'self'"]
        assert resp["X-Frame-Options"] == "DENY" and resp["X-Content-Type-Options"] == "nosniff"
        assert resp["Referrer-Policy"] == "same-origin"


INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I)
INLINE_HANDLER = re.compile(r"\son[a-z]+\s*=", re.I)


def test_no_template_has_inline_script_handlers_or_styles():
    templates = sorted((ROOT / "templates").rglob("*.html")) + sorted(
        (ROOT / "dashboard").rglob("templates/**/*.html")
    )
    assert templates
    for path in templates:
        text = path.read_text()
        assert not INLINE_SCRIPT.search(text), f"{path}: inline <script>"
        assert not INLINE_HANDLER.search(text), f"{path}: inline event handler"
        assert "javascript:" not in text.lower(), f"{path}: javascript: URL"
        assert 'style="' not in text and "<style" not in text, f"{path}: inline style"


def test_robots_txt_is_a_constant_answer_through_every_middleware(client: Client) -> None:
    # The load benchmark's baseline: a real view behind the whole stack, unlike /healthz.
    resp = client.get("/robots.txt")
    assert resp.status_code == 200
    assert resp["Content-Type"] == "text/plain; charset=utf-8"
    assert resp.content.decode().splitlines() == [
        "User-agent: *",
        "Disallow: /admin/",
        "Disallow: /api/",
    ]
    assert "default-src" in policy(resp) and resp["X-Frame-Options"] == "DENY"
    assert client.post("/robots.txt").status_code in (403, 405)  # GET only (CSRF may answer first)
