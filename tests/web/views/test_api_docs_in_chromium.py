"""Swagger UI of /api/v1/docs/ in a real Chromium, under the site's own Content-Security-Policy
(dashboard/web/headers.py: scripts and styles from this site only): it renders the generated
schema, asks nothing of another host, and the browser reports no policy violation."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_swagger_ui_renders_the_schema_under_a_strict_script_policy(
    page, live_server, shot
) -> None:
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    hosts: set[str] = set()
    page.on("request", lambda r: hosts.add(urlsplit(r.url).netloc))

    policy = page.goto("/api/v1/docs/").headers.get("content-security-policy", "")
    assert (
        "script-src 'self'" in policy
        and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
    )
    page.wait_for_selector(".swagger-ui .info .title")
    assert "SCTP readiness dashboard API" in page.inner_text(".swagger-ui .info .title")
    page.get_by_text("/api/v1/submissions/{id}/verify", exact=True).wait_for()
    shot(page, "api-docs")
    assert hosts == {urlsplit(live_server.url).netloc}  # no CDN
    assert not [p for p in problems if "Content Security Policy" in p or "Refused" in p], problems
