"""The KEP report quotes what vendors wrote as text (issue 12: Markdown/HTML injection)."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.domain.models import Submission
from tests.conftest import auth

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "hostile, absent, present",
    [
        (
            "<script>x</script>[ok](https://ev.il)",
            ["<script>", "[ok](https://ev.il)"],
            ["script", "\\[ok\\]"],
        ),
        (
            "**LGTM** `x` | cell\n# heading",
            ["**LGTM**", "\n# heading", " `x` "],
            ["\\*\\*LGTM\\*\\*", "\\`x\\`", "\\| cell"],
        ),
        (
            "<img src=x onerror=alert(1)>",
            ["<img src=x onerror=alert(1)>"],
            ["img src=x onerror=alert"],
        ),
    ],
)
def test_vendor_text_in_the_report_is_escaped(
    client: Client, vendor_token, maintainer_token, maintainer, hostile, absent, present
):
    from tests.uploads import connectivity_junit, post

    resp = post(client, vendor_token, connectivity_junit(), plugin_version=hostile)
    assert resp.status_code == 201, resp.content
    sub_id = resp.json()["id"]
    assert (
        client.post(f"/api/v1/submissions/{sub_id}/verify", **auth(maintainer_token)).status_code
        == 200
    )
    assert Submission.objects.get(pk=sub_id).plugin_version == hostile.strip()  # stored as written
    page = Client()
    page.force_login(maintainer)
    body = page.get("/review/report.md").content.decode()
    line = next(line for line in body.splitlines() if f"[submission {sub_id}]" in line)
    for text in absent:
        assert text not in body, text
    for text in present:
        assert text in line, (text, line)
