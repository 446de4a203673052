from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from dashboard.domain.crypto import token_digest
from dashboard.domain.models import ApiToken, Plugin, Vendor
from tests.conftest import auth

pytestmark = pytest.mark.django_db


def issue(*args: str) -> str:
    out = io.StringIO()
    call_command("issue_token", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue().strip().splitlines()[-1]


def test_issue_token_prints_a_token_as_the_last_line_and_stores_only_its_digest():
    token = issue("--vendor", "Tigera", "--plugins", "calico")
    stored = ApiToken.objects.get()
    assert token.startswith("sctp_") and len(token) > 40
    assert stored.digest == token_digest(token)
    assert token not in (stored.digest, stored.hint)
    # The hint is the token's public id, never a character of its secret part.
    assert stored.hint == token[:11] and token[11] == "_" and token[12:] not in stored.hint


def test_issue_token_creates_unknown_plugins_out_of_tree_with_network_policy():
    issue("--vendor", "Acme", "--plugins", "acme-cni,calico")
    acme = Plugin.objects.get(slug="acme-cni")
    assert not acme.in_tree and acme.implements_network_policy
    assert set(Vendor.objects.get(name="Acme").plugins.values_list("slug", flat=True)) == {
        "acme-cni",
        "calico",
    }


def test_issue_token_for_a_maintainer_creates_a_user_in_the_maintainers_group():
    issue("--maintainer", "danwinship")
    token = ApiToken.objects.get()
    assert token.role == "maintainer" and token.user.groups.filter(name="maintainers").exists()


def test_issued_tokens_are_accepted_by_the_api(client):
    token = issue("--maintainer", "thockin")
    resp = client.post("/api/v1/submissions/1/verify", **auth(token))
    assert resp.status_code == 404  # authenticated and authorized; the submission does not exist


def test_a_wrong_token_is_refused(client):
    issue("--vendor", "Tigera", "--plugins", "calico")
    resp = client.post(
        "/api/v1/submissions/", {"plugin": "calico"}, **auth("sctp_not-a-real-token")
    )
    assert resp.status_code == 401
    assert resp.json()["error"] == "invalid or revoked token"


def test_a_missing_token_is_refused(client):
    resp = client.post("/api/v1/submissions/", {"plugin": "calico"})
    assert resp.status_code == 401
    assert "Authorization: Token" in resp.json()["error"]


def test_a_revoked_token_is_refused(client):
    token = issue("--maintainer", "m")
    ApiToken.objects.update(revoked=True)
    assert client.post("/api/v1/submissions/1/verify", **auth(token)).status_code == 401


def test_a_vendor_token_names_only_its_plugins(client):
    token = issue("--vendor", "Tigera", "--plugins", "calico")
    resp = client.post(
        "/api/v1/submissions/",
        {
            "plugin": "cilium",
            "plugin_version": "1",
            "kubernetes_version": "1.31",
            "proxier": "iptables",
        },
        **auth(token),
    )
    assert resp.status_code == 403
    assert "cilium" in resp.json()["error"]


def test_a_vendor_token_cannot_verify(client):
    token = issue("--vendor", "Tigera", "--plugins", "calico")
    assert client.post("/api/v1/submissions/1/verify", **auth(token)).status_code == 403


def test_issue_token_refuses_bad_slugs():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="invalid plugin slug"):
        issue("--vendor", "X", "--plugins", "Bad Slug!")
    assert not ApiToken.objects.exists()
