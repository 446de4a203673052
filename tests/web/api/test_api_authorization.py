"""Every API endpoint against every role: anonymous, vendor A, vendor B, maintainer.

Vendor A (calico) owns cluster calico-a, vendor B (cilium) owns cilium-b. Nobody ever sees a
kubeconfig, and the API never takes a session cookie for a token.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from dashboard.domain.models import ApiToken, Run, Submission
from tests import factories
from tests.conftest import auth
from tests.domain.ingest import builders as b

pytestmark = pytest.mark.django_db

SECRET = "kubeconfig-secret-marker-7f3a"
KUBECONFIG = f"apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: {SECRET}\n"
ROLES = ["anonymous", "vendor_a", "vendor_b", "maintainer"]
_salt = itertools.count()


@pytest.fixture
def world(maintainer) -> dict[str, Any]:
    a = factories.vendor("Calico vendor", ("calico",))
    b_ = factories.vendor("Cilium vendor", ("cilium",))
    calico = factories.cluster("calico-a", plugin_slug="calico", owner=a, kubeconfig=KUBECONFIG)
    cilium = factories.cluster("cilium-b", plugin_slug="cilium", owner=b_, kubeconfig=KUBECONFIG)
    calico.refresh_from_db()
    assert calico.kubeconfig == KUBECONFIG  # the secret is really there to leak
    runs = {"calico": factories.run(calico), "cilium": factories.run(cilium)}
    subs = {
        "calico": factories.submission("calico", status=Submission.Status.PENDING),
        "cilium": factories.submission("cilium", status=Submission.Status.PENDING),
    }
    tokens = {
        "anonymous": None,
        "vendor_a": ApiToken.issue(role=ApiToken.Role.VENDOR, vendor=a)[1],
        "vendor_b": ApiToken.issue(role=ApiToken.Role.VENDOR, vendor=b_)[1],
        "maintainer": ApiToken.issue(role=ApiToken.Role.MAINTAINER, user=maintainer)[1],
    }
    return {"runs": runs, "subs": subs, "tokens": tokens}


def call(world: dict[str, Any], role: str, method: str, path: str, **kw: Any):
    token = world["tokens"][role]
    headers = auth(token) if token else {}
    client = Client()
    return getattr(client, method)(path, **kw, **headers)


def junit() -> bytes:
    name = (
        "[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: sctp "
        "[LinuxOnly] [Feature:SCTPConnectivity]"
    )
    return b.junit_v2([(name, "passed"), (f"[sig-node] unrelated {next(_salt)}", "passed")])


def submit(world: dict[str, Any], role: str, plugin: str):
    form = {
        "plugin": plugin,
        "plugin_version": "1.0",
        "kubernetes_version": "1.30.2",
        "proxier": "iptables",
        "file": SimpleUploadedFile("junit_01.xml", junit()),
    }
    return call(world, role, "post", "/api/v1/submissions/", data=form)


GETS = [
    "/api/v1/catalog/",
    "/api/v1/readiness/",
    "/api/v1/schema/",
    "/api/v1/clusters/",
    "/api/v1/submissions/",
    "RUN calico",
    "RUN cilium",
    "SUB calico",
    "SUB cilium",
]


def resolve(world: dict[str, Any], path: str) -> str:
    kind, _, plugin = path.partition(" ")
    if kind == "RUN":
        return f"/api/v1/runs/{world['runs'][plugin].pk}/"
    if kind == "SUB":
        return f"/api/v1/submissions/{world['subs'][plugin].pk}/"
    return path


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("path", GETS)
def test_every_read_is_open_to_every_role_and_never_shows_a_kubeconfig(
    world, role: str, path: str
) -> None:
    response = call(world, role, "get", resolve(world, path))
    assert response.status_code == 200
    body = response.content.decode()
    assert SECRET not in body
    if path != "/api/v1/schema/":  # the schema names the upload field; no answer carries one
        assert '"kubeconfig"' not in body


# (what, role) -> expected status
RUN_EXPECTED = {
    ("calico-a", "anonymous"): 401,
    ("calico-a", "vendor_a"): 202,
    ("calico-a", "vendor_b"): 403,
    ("calico-a", "maintainer"): 202,
    ("cilium-b", "anonymous"): 401,
    ("cilium-b", "vendor_a"): 403,
    ("cilium-b", "vendor_b"): 202,
    ("cilium-b", "maintainer"): 202,
}


@pytest.mark.parametrize(("cluster", "role"), list(RUN_EXPECTED))
def test_only_the_owner_or_a_maintainer_triggers_runs(world, cluster: str, role: str) -> None:
    before = Run.objects.count()
    response = call(
        world,
        role,
        "post",
        f"/api/v1/clusters/{cluster}/runs/",
        data={"battery": "basic"},
        content_type="application/json",
    )
    expected = RUN_EXPECTED[(cluster, role)]
    assert response.status_code == expected, response.content
    assert Run.objects.count() == before + (1 if expected == 202 else 0)
    assert SECRET not in response.content.decode()


SUBMIT_EXPECTED = {
    ("calico", "anonymous"): 401,
    ("calico", "vendor_a"): 201,
    ("calico", "vendor_b"): 403,
    ("calico", "maintainer"): 403,
    ("cilium", "anonymous"): 401,
    ("cilium", "vendor_a"): 403,
    ("cilium", "vendor_b"): 201,
    ("cilium", "maintainer"): 403,
}


@pytest.mark.parametrize(("plugin", "role"), list(SUBMIT_EXPECTED))
def test_only_the_plugins_vendor_submits_for_it(world, plugin: str, role: str) -> None:
    before = Submission.objects.count()
    response = submit(world, role, plugin)
    expected = SUBMIT_EXPECTED[(plugin, role)]
    assert response.status_code == expected, response.content
    assert Submission.objects.count() == before + (1 if expected == 201 else 0)


REVIEW_EXPECTED = {"anonymous": 401, "vendor_a": 403, "vendor_b": 403, "maintainer": 200}


@pytest.mark.parametrize("action", ["verify", "reject"])
@pytest.mark.parametrize("role", ROLES)
def test_only_maintainers_verify_or_reject_even_a_vendors_own_submission(
    world, role: str, action: str
) -> None:
    sub = world["subs"]["calico"]  # vendor A's own
    response = call(
        world,
        role,
        "post",
        f"/api/v1/submissions/{sub.pk}/{action}/",
        data=json.dumps({"reason": "checked"}),
        content_type="application/json",
    )
    assert response.status_code == REVIEW_EXPECTED[role], response.content
    sub.refresh_from_db()
    expected = (
        {"verify": "verified", "reject": "rejected"}[action]
        if role == "maintainer"
        else "pending_review"
    )
    assert sub.status == expected


def test_a_logged_in_maintainer_session_does_not_authorize_api_writes(world, maintainer) -> None:
    client = Client()
    client.force_login(maintainer)
    sub = world["subs"]["cilium"]
    assert client.post(f"/api/v1/submissions/{sub.pk}/verify/").status_code == 401
    assert client.post("/api/v1/clusters/cilium-b/runs/", {"battery": "basic"}).status_code == 401
    sub.refresh_from_db()
    assert sub.status == "pending_review"


def test_a_revoked_token_is_refused(world) -> None:
    ApiToken.objects.filter(role="maintainer").update(revoked=True)
    response = call(
        world, "maintainer", "post", f"/api/v1/submissions/{world['subs']['calico'].pk}/verify/"
    )
    assert response.status_code == 401
