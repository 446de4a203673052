"""Issue 39: refusals you can read. The upload and kubeconfig forms show their limit beforehand,
refuse inside the form with the values kept, announce the error (role=alert), mark the field it
names (aria-invalid, aria-describedby, autofocus); an over-size body is a page, not a line."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from dashboard.domain.submissions import SubmissionError
from dashboard.web.views.submissions import refused_field
from tests.junit import sctp_junit

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


def _tag(body: str, element_id: str) -> str:
    at = body.index(f'id="{element_id}"')
    return body[body.rindex("<", 0, at) : body.index(">", at) + 1]


def test_the_upload_form_shows_its_limit_beforehand(client: Client, vendor_user, settings) -> None:
    settings.SUBMISSION_MAX_BYTES = 50 * 1024 * 1024
    client.force_login(vendor_user)
    body = client.get("/submissions/new/").content.decode()
    assert "at most 50.0\xa0MB" in body
    file_input = _tag(body, "file")
    assert f'data-max-bytes="{50 * 1024 * 1024}"' in file_input
    assert 'aria-describedby="file-limit"' in file_input and "aria-invalid" not in file_input
    assert "js/forms.js" in body and "data-refusals" in body
    assert 'role="alert"' in body and "hidden" in _tag(body, "form-error")  # empty, ready


def test_a_refused_file_is_said_inside_the_form_on_the_file_field(
    client: Client, vendor_user
) -> None:
    client.force_login(vendor_user)
    response = _upload(client, b"this is not a result file")
    body = response.content.decode()
    assert response.status_code in (400, 422)
    error = _tag(body, "form-error")
    assert 'role="alert"' in error and "hidden" not in error
    start = body.index('class="stack upload"')
    form = body[start : body.index("</form>", start)]
    assert 'id="form-error"' in form  # inside the form
    file_input = _tag(body, "file")
    assert 'aria-invalid="true"' in file_input and "autofocus" in file_input
    assert 'aria-describedby="form-error file-limit"' in file_input
    assert 'value="3.28.0"' in body and "Your other values are kept" in body


def test_a_refused_field_is_the_one_marked(client: Client, vendor_user) -> None:
    client.force_login(vendor_user)
    body = _upload(client, sctp_junit(), kubernetes_version="latest").content.decode()
    version = _tag(body, "kubernetes_version")
    assert 'aria-invalid="true"' in version and 'aria-describedby="form-error"' in version
    assert "aria-invalid" not in _tag(body, "file") and body.count('aria-invalid="true"') == 1


def test_the_refused_field_is_read_from_the_refusal() -> None:
    assert refused_field(SubmissionError(400, "missing field: plugin_version")) == "plugin_version"
    assert refused_field(SubmissionError(413, "the file is larger than 50 MB")) == "file"
    assert refused_field(SubmissionError(422, "no SCTP test ran in this file")) == "file"
    assert refused_field(SubmissionError(400, "proxier must be one of …")) == "proxier"


def test_an_over_size_upload_is_a_page_with_the_limit(
    client: Client, vendor_user, settings
) -> None:
    settings.SUBMISSION_MAX_BYTES = 1000
    client.force_login(vendor_user)
    response = _upload(client, b"x" * (2 * 1024 * 1024))
    body = response.content.decode()
    assert response.status_code == 413 and response["Content-Type"].startswith("text/html")
    assert 'role="alert"' in body and "nothing was read or stored" in body
    assert "Back button" in body and 'href="/submissions/new/"' in body


def test_the_kubeconfig_form_shows_its_limit_and_refuses_inside_the_form(
    client: Client, vendor_user
) -> None:
    client.force_login(vendor_user)
    body = client.get("/clusters/new/").content.decode()
    assert "at most 256.0\xa0KB" in body and 'data-max-bytes="262144"' in _tag(body, "kubeconfig")
    response = client.post(
        "/clusters/new/",
        {
            "name": "calico-big",
            "plugin": "calico",
            "plugin_version": "3.28.0",
            "proxier": "iptables",
            "kubeconfig": SimpleUploadedFile("kubeconfig", b"a: b\n" * 60_000),
        },
    )
    body = response.content.decode()
    assert response.status_code == 400
    error = _tag(body, "form-error")
    assert 'role="alert"' in error and "hidden" not in error
    assert "larger than the 256 KB allowed" in body and "your other values are kept" in body
    kubeconfig = _tag(body, "kubeconfig")
    assert 'aria-invalid="true"' in kubeconfig and "autofocus" in kubeconfig
    assert 'value="calico-big"' in body and 'value="3.28.0"' in body


def test_a_refused_pasted_kubeconfig_marks_the_text(client: Client, vendor_user) -> None:
    client.force_login(vendor_user)
    response = client.post(
        "/clusters/new/",
        {"name": "calico-x", "plugin": "calico", "proxier": "iptables", "kubeconfig_text": ": :"},
    )
    body = response.content.decode()
    assert response.status_code == 400
    text = _tag(body, "kubeconfig_text")
    assert 'aria-invalid="true"' in text and "form-error" in text
    assert "aria-invalid" not in _tag(body, "kubeconfig")
