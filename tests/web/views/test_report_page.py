"""The KEP report page (/review/report/): the report's Markdown as inert HTML."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.domain.kep_report import _cell
from dashboard.web.views.md import to_html

pytestmark = pytest.mark.django_db


def test_markdown_becomes_html_and_what_anyone_typed_stays_text() -> None:
    typed = "<script>alert(1)</script> [x](javascript:alert(1)) **b** | pipe"
    html = to_html(
        "## Title\n\n| a | b |\n|---|---|\n| `k` | "
        + _cell(typed)
        + " …[^1] |\n\n- [run 1](https://example.org/runs/1/): **counted**\n\n[^1]: long reason"
    )
    assert "<h2>Title</h2>" in html and "<code>k</code>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'href="javascript' not in html
    assert '<a href="https://example.org/runs/1/">run 1</a>' in html
    assert "<strong>counted</strong>" in html and "| pipe" in html
    assert 'href="#fn-1"' in html and '<li id="fn-1">long reason' in html


def test_only_maintainers_open_the_report_page(client: Client, maintainer, vendor_user) -> None:
    assert client.get("/review/report/").status_code == 302
    client.force_login(vendor_user)
    assert client.get("/review/report/").status_code == 403
    client.force_login(maintainer)
    body = client.get("/review/report/").content.decode()
    assert '<article class="report" id="report"><h2>KEP-614 SCTP support' in body
