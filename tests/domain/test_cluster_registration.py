"""Registering clusters with a kubeconfig: validated before anything is stored, never shown back."""

from __future__ import annotations

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile

from dashboard.domain.models import AuditEvent, Cluster
from tests.conftest import auth
from tests.labtools import profile

pytestmark = pytest.mark.django_db


@pytest.fixture
def lab():
    from lab.server import LabServer

    server = LabServer([profile(name="vendor-lab")]).start()
    yield server
    server.stop()


def form(lab, **overrides):
    data = {
        "name": "calico-prod",
        "plugin": "calico",
        "plugin_version": "3.28.0",
        "proxier": "iptables",
        "node_access": "true",
        "kubeconfig": yaml.safe_dump(lab.kubeconfig("vendor-lab")),
    }
    data.update(overrides)
    return data


def test_a_vendor_registers_a_cluster_through_the_api(client, vendor_token, lab):
    resp = client.post("/api/v1/clusters/", form(lab), **auth(vendor_token))
    assert resp.status_code == 201, resp.content
    body = resp.json()
    assert body["name"] == "calico-prod" and body["owner"] == "Calico vendor"
    assert body["kubernetes_version"] == "1.31.2"  # read from the server
    assert "kubeconfig" not in body and "lab-vendor-lab-token" not in resp.content.decode()
    cluster = Cluster.objects.get(name="calico-prod")
    assert "lab-vendor-lab-token" in cluster.kubeconfig
    event = AuditEvent.objects.get(action="cluster.register")
    assert "token" not in str(event.detail)


@pytest.mark.parametrize(
    "change, words",
    [
        ({"kubeconfig": "not: [valid"}, "kubeconfig"),
        (
            {"kubeconfig": "apiVersion: v1\nkind: Config\ncurrent-context: nope\ncontexts: []\n"},
            "context",
        ),
        ({"name": "Bad Name"}, "DNS label"),
        ({"proxier": "userspace"}, "proxier"),
        ({"plugin": "cilium"}, "may not register"),
    ],
)
def test_bad_registrations_are_refused_with_a_clear_error_and_store_nothing(
    client, vendor_token, lab, change, words
):
    resp = client.post("/api/v1/clusters/", form(lab, **change), **auth(vendor_token))
    assert resp.status_code in (400, 403)
    assert words in resp.json()["error"]
    assert not Cluster.objects.exists()


def test_an_unreachable_server_is_refused(client, vendor_token, lab):
    config = lab.kubeconfig("vendor-lab")
    config["clusters"][0]["cluster"]["server"] = "http://127.0.0.1:9/clusters/x"
    resp = client.post(
        "/api/v1/clusters/", form(lab, kubeconfig=yaml.safe_dump(config)), **auth(vendor_token)
    )
    assert resp.status_code == 400 and "not reachable" in resp.json()["error"]
    assert not Cluster.objects.exists()


def test_an_exec_plugin_kubeconfig_is_refused(client, vendor_token, lab):
    config = lab.kubeconfig("vendor-lab")
    config["users"][0]["user"] = {
        "exec": {
            "command": "/bin/sh",
            "args": ["-c", "touch /tmp/pwned"],
            "apiVersion": "client.authentication.k8s.io/v1",
        }
    }
    resp = client.post(
        "/api/v1/clusters/", form(lab, kubeconfig=yaml.safe_dump(config)), **auth(vendor_token)
    )
    assert resp.status_code == 400 and "exec" in resp.json()["error"]
    assert not Cluster.objects.exists()


def test_another_vendor_cannot_take_over_a_registered_name(
    client, vendor_token, other_vendor_token, lab
):
    assert client.post("/api/v1/clusters/", form(lab), **auth(vendor_token)).status_code == 201
    resp = client.post("/api/v1/clusters/", form(lab, plugin="cilium"), **auth(other_vendor_token))
    assert resp.status_code == 409
    assert Cluster.objects.get().plugin.slug == "calico"


def test_the_registration_page_uploads_a_kubeconfig_file(client, vendor_user, lab):
    client.force_login(vendor_user)
    assert client.get("/clusters/new/").status_code == 200
    data = form(lab)
    upload = SimpleUploadedFile("config", data.pop("kubeconfig").encode())
    resp = client.post("/clusters/new/", {**data, "kubeconfig": upload})
    assert resp.status_code == 302 and resp["Location"] == "/clusters/calico-prod/"
    page = client.get("/clusters/calico-prod/").content.decode()
    assert "lab-vendor-lab-token" not in page


def test_the_registration_page_shows_the_validation_error(client, vendor_user, lab):
    client.force_login(vendor_user)
    resp = client.post("/clusters/new/", form(lab, kubeconfig_text="users: [", kubeconfig=""))
    assert resp.status_code == 400
    assert "kubeconfig" in resp.content.decode()
    # The pasted text stays in the form to be fixed (only for the one who pasted it, never cached).
    assert ">users: [</textarea>" in resp.content.decode() and "no-store" in resp["Cache-Control"]
    assert not Cluster.objects.exists()


def test_anonymous_visitors_are_sent_to_log_in_and_viewers_are_refused(client, lab):
    resp = client.get("/clusters/new/")
    assert resp.status_code == 302 and resp["Location"].startswith("/login/")
    from django.contrib.auth import get_user_model

    client.force_login(get_user_model().objects.create_user("nobody"))
    assert client.get("/clusters/new/").status_code == 403
