"""Issue 39, item 6: a refused result file leads with one line saying what is wrong, lists the
SCTP tests it holds with their states as a table, and gives the Sonobuoy and Hydrophone commands
that produce a file that counts as copyable blocks (copy.js: the CSP forbids inline script);
the API's 422 answer carries the same line and the same steps."""

from __future__ import annotations

import html
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from dashboard.domain.models import Submission
from tests.domain.ingest import real_files as rf
from tests.domain.ingest.builders import junit_v2

pytestmark = pytest.mark.django_db


def _upload(client: Client, data: bytes, name: str = "r.tar.gz", **fields: str):
    form = {
        "plugin": "calico",
        "plugin_version": "3.28.0",
        "kubernetes_version": "1.21.1",
        "proxier": "iptables",
        "cluster": "",
        **fields,
        "file": SimpleUploadedFile(name, data, "application/gzip"),
    }
    return client.post("/submissions/new/", form)


def _tag(body: str, element_id: str) -> str:
    at = body.index(f'id="{element_id}"')
    return body[body.rindex("<", 0, at) : body.index(">", at) + 1]


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", fragment)).strip())


def test_a_conformance_only_file_is_refused_with_one_line_a_table_and_the_commands(
    client: Client, vendor_user
) -> None:
    client.force_login(vendor_user)
    response = _upload(client, rf.real(rf.V121))
    body = response.content.decode()
    assert response.status_code == 422 and Submission.objects.count() == 0
    error = body[body.index('id="form-error"') : body.index("</p>", body.index('id="form-error"'))]
    line = _text(error.split(">", 1)[1])
    # One line, in words: which kind of file and why it can never count.
    assert line.startswith("A conformance-only run:")
    assert "none of its 17 SCTP tests ran" in line and "\n" not in line and len(line) < 200
    assert 'role="alert"' in _tag(body, "form-error")
    # The SCTP tests as a table: one row each, with its state.
    table = body[body.index('class="stack refusal-tests"') : body.index("</table>")]
    rows = table.split("<tr>")[2:]
    assert len(rows) == 17
    assert all('data-state="not selected"' in r for r in rows)
    assert "<code>pod-to-service</code>" in table
    # The commands as copyable blocks, with the focus on every SCTP spec and no [Disruptive]
    # skip (v1.21's connectivity tests carry it), and the step that writes the file to upload.
    sonobuoy = _text(
        body[
            body.index('id="cmd-sonobuoy"') : body.index("</code>", body.index('id="cmd-sonobuoy"'))
        ].split(">", 1)[1]
    )
    assert (
        "sonobuoy run --plugin e2e --e2e-focus 'SCTP' --e2e-skip '\\[Flaky\\]' --wait" in sonobuoy
    )
    assert "sonobuoy retrieve . --filename sctp-sonobuoy.tar.gz" in sonobuoy
    hydrophone = body[
        body.index('id="cmd-hydrophone"') : body.index("</code>", body.index('id="cmd-hydrophone"'))
    ]
    assert "hydrophone --focus &#x27;SCTP&#x27;" in hydrophone and "tar -czf" in hydrophone
    assert 'data-copy="cmd-sonobuoy"' in body and 'data-copy="cmd-hydrophone"' in body
    assert "js/copy.js" in body and "<script>" not in body  # no inline script
    # The file field is the invalid one, described by the line and the detail, focused first.
    file_input = _tag(body, "file")
    assert 'aria-invalid="true"' in file_input and "autofocus" in file_input
    assert 'aria-describedby="form-error refusal-detail file-limit"' in file_input
    assert 'value="3.28.0"' in _tag(body, "plugin_version")  # the values are kept


def test_a_file_without_any_sctp_test_says_so_in_one_line(client: Client, vendor_user) -> None:
    client.force_login(vendor_user)
    data = junit_v2([("[sig-node] Pods should be submitted and removed", "passed")])
    response = _upload(client, data, name="junit_01.xml")
    body = response.content.decode()
    assert response.status_code == 422
    assert "This file has none of upstream&#x27;s SCTP tests, so it can never count." in body
    assert "No SCTP test in this file" in body and 'id="cmd-sonobuoy"' in body


def test_the_api_refusal_carries_the_same_line_and_steps(client: Client, vendor_token) -> None:
    response = client.post(
        "/api/v1/submissions/",
        {
            "plugin": "calico",
            "plugin_version": "3.28.0",
            "kubernetes_version": "1.21.1",
            "proxier": "iptables",
            "file": SimpleUploadedFile("r.tar.gz", rf.real(rf.V121)),
        },
        HTTP_AUTHORIZATION=f"Token {vendor_token}",
    )
    body = response.json()
    assert response.status_code == 422
    assert body["summary"].startswith("A conformance-only run:")
    assert body["conformance_only"] is True
    assert body["steps"]["sonobuoy"][-1] == "sonobuoy retrieve . --filename sctp-sonobuoy.tar.gz"
    assert body["steps"]["hydrophone"][0] == body["commands"]["hydrophone"]
    assert len(body["sctp_testcases"]) == 17


def test_the_schema_documents_the_refusals_line_and_steps(client: Client) -> None:
    schema = client.get("/api/v1/schema/?format=json").json()
    error = schema["components"]["schemas"]["Error"]["properties"]
    assert {"summary", "conformance_only", "steps", "sctp_testcases", "commands"} <= set(error)
    assert "one line" in error["summary"]["description"]
    submission = schema["components"]["schemas"]["Submission"]["properties"]
    assert {"never_counts", "proxier_declared_only"} <= set(submission)
