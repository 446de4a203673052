"""TLS to the cluster: the server's certificate is verified against the kubeconfig's CA.

The lab serves HTTPS with a CA of its own (lab/tls.py). A kubeconfig that carries another CA,
a server whose certificate expired, or one whose certificate names another host are refused
with the reason in words, by the registration (API and form) and by a run of the battery;
a kind-style kubeconfig with a client certificate in system:masters runs the battery.
"""

from __future__ import annotations

import base64
import datetime
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile

from kernel.battery import run_battery
from kernel.kubeconfig import KubeconfigError, api_client_from_kubeconfig, validate_kubeconfig
from lab.server import LabServer
from lab.tls import LabCA
from tests.battery_specs import FAST, profile, spec_for
from tests.conftest import auth

WRONG_CA = "not signed by the kubeconfig's certificate authority"
EXPIRED = "the server's certificate has expired"
OTHER_HOST = "the server's certificate is for another host: it is not valid for 127.0.0.1"


def _lab(**kw: Any) -> LabServer:
    return LabServer([profile()], **kw).start()


@pytest.fixture
def labs() -> Iterator[Any]:
    started: list[LabServer] = []

    def start(**kw: Any) -> LabServer:
        server = _lab(**kw)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def _with_ca(config: dict[str, Any], ca: LabCA) -> dict[str, Any]:
    config["clusters"][0]["cluster"]["certificate-authority-data"] = base64.b64encode(
        ca.cert_pem
    ).decode()
    return config


def _expired(ca: LabCA) -> Any:
    now = datetime.datetime.now(datetime.UTC)
    return ca.server_certificate(
        ("127.0.0.1", "localhost"),
        not_before=now - datetime.timedelta(days=30),
        not_after=now - datetime.timedelta(days=1),
    )


def _bad_kubeconfigs(labs: Any) -> dict[str, tuple[str, str]]:
    """(kubeconfig text, the words the refusal must carry) for each kind of bad certificate."""
    right = labs()
    other_ca = LabCA.generate("someone else's CA")
    ca = LabCA.ephemeral()
    expired = labs(server_cert=_expired(ca))
    elsewhere = labs(server_cert=ca.server_certificate(("lab.example.org",)))
    return {
        "wrong CA": (yaml.safe_dump(_with_ca(right.kubeconfig("lab"), other_ca)), WRONG_CA),
        "expired": (yaml.safe_dump(expired.kubeconfig("lab")), EXPIRED),
        "another host": (yaml.safe_dump(elsewhere.kubeconfig("lab")), OTHER_HOST),
    }


def test_the_lab_serves_https_and_its_kubeconfig_carries_the_ca(labs: Any) -> None:
    lab = labs()
    config = lab.kubeconfig("lab")
    cluster = config["clusters"][0]["cluster"]
    assert cluster["server"].startswith("https://127.0.0.1:")
    assert base64.b64decode(cluster["certificate-authority-data"]) == LabCA.ephemeral().cert_pem
    summary = validate_kubeconfig(yaml.safe_dump(config))
    assert summary["kubernetes_version"] == "v1.31.2" and summary["emulated"] is True


def test_each_bad_certificate_is_refused_at_registration_in_words(labs: Any) -> None:
    for case, (text, words) in _bad_kubeconfigs(labs).items():
        with pytest.raises(KubeconfigError) as caught:
            validate_kubeconfig(text)
        message = str(caught.value)
        assert words in message, (case, message)
        assert "cannot be trusted" in message


def test_a_plain_http_kubeconfig_against_the_https_lab_is_refused(labs: Any) -> None:
    lab = labs()
    config = lab.kubeconfig("lab")
    config["clusters"][0]["cluster"]["server"] = lab.cluster_url("lab").replace("https", "http")
    with pytest.raises(KubeconfigError, match="did not answer GET /version"):
        validate_kubeconfig(yaml.safe_dump(config))


def test_a_run_on_a_server_with_a_bad_certificate_stops_at_once_and_says_why(labs: Any) -> None:
    for case, (text, words) in _bad_kubeconfigs(labs).items():
        api = api_client_from_kubeconfig(text, request_timeout=FAST.request)
        started = time.monotonic()
        try:
            report = run_battery(api, spec_for(profile()), "basic", f"run-{case}")
        finally:
            api.close()
        # Not retried: a certificate does not fix itself between two tries.
        assert time.monotonic() - started < 10, case
        # A run's errors are public: they say what is wrong, without the server's address.
        words = words.split(": it is not valid for")[0]
        assert any(words in error for error in report.errors), (case, report.errors)
        assert not any("127.0.0.1" in error for error in report.errors)
        assert all(r.outcome != "passed" for r in report.results.values())


def test_the_battery_runs_with_a_kind_style_client_certificate(labs: Any) -> None:
    lab = labs()
    config = lab.kubeconfig("lab", auth="client-certificate")
    user = config["users"][0]["user"]
    assert "token" not in user and {"client-certificate-data", "client-key-data"} <= set(user)
    api = api_client_from_kubeconfig(yaml.safe_dump(config), request_timeout=FAST.request)
    try:
        report = run_battery(api, spec_for(profile()), "basic", "run-cert")
    finally:
        api.close()
    assert report.errors == []
    outcomes = {key: r.outcome for key, r in report.results.items()}
    assert outcomes and "passed" in outcomes.values(), outcomes
    assert "error" not in outcomes.values(), outcomes


def test_a_client_certificate_of_another_ca_is_refused(labs: Any) -> None:
    lab = labs()
    config = lab.kubeconfig("lab", auth="client-certificate")
    stranger = LabCA.generate("stranger").client_certificate()
    config["users"][0]["user"] = {
        "client-certificate-data": base64.b64encode(stranger.cert_pem).decode(),
        "client-key-data": base64.b64encode(stranger.key_pem).decode(),
    }
    with pytest.raises(KubeconfigError) as caught:
        validate_kubeconfig(yaml.safe_dump(config))
    message = str(caught.value)
    assert "the kubeconfig's client certificate" in message, message


@pytest.mark.django_db
def test_the_registration_api_and_form_refuse_bad_certificates_in_words(
    client: Any, vendor_token: str, vendor_user: Any, labs: Any
) -> None:
    from dashboard.domain.models import Cluster

    client.force_login(vendor_user)
    for case, (text, words) in _bad_kubeconfigs(labs).items():
        data = {
            "name": "calico-prod",
            "plugin": "calico",
            "plugin_version": "3.28.0",
            "proxier": "iptables",
            "node_access": "true",
            "kubeconfig": text,
        }
        resp = client.post("/api/v1/clusters/", data, **auth(vendor_token))
        assert resp.status_code == 400, (case, resp.content)
        assert words in resp.json()["error"], (case, resp.json())
        upload = SimpleUploadedFile("config", text.encode())
        page = client.post("/clusters/new/", {**data, "kubeconfig": upload})
        assert page.status_code == 400, case
        assert words.replace("'", "&#x27;") in page.content.decode(), case
    assert not Cluster.objects.exists()
