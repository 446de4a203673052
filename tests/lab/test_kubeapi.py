"""The API-server behaviours kubectl and other clients rely on, asked for over raw HTTPS.

Discovery (legacy and aggregated), tables, fieldValidation, dryRun, updates with their
conflicts and immutable fields, deletion propagation, watch bookmarks and
SelfSubjectAccessReview under a limited role.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lab import fields, watch
from lab.server import LabServer
from tests.lab.kube import profile
from tests.lab.test_kubectl import Kubectl, kubectl_on

ROOT = Path(__file__).resolve().parents[2]
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
AGGREGATED = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
)


class Raw:
    def __init__(self, lab: LabServer, name: str, token: str | None = None) -> None:
        self.lab, self.name = lab, name
        self.token = token or lab.cluster(name).profile["token"]

    def __call__(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> tuple[int, Any, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.lab.cluster_url(self.name)}{path}",
            method=method,
            data=data,
            headers={
                "Authorization": f"Bearer {self.token}",
                "Content-Type": content_type,
                "Accept": accept,
            },
        )
        try:
            with urllib.request.urlopen(
                request, timeout=10, context=self.lab.client_context()
            ) as a:
                return a.status, json.loads(a.read() or b"null"), a.headers
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"null"), err.headers


@pytest.fixture
def lab() -> Iterator[LabServer]:
    server = LabServer(
        [
            profile("c1", faults={"pod_start_delay_s": 0}),
            profile("old", kubernetes_version="1.20.15"),
            profile("limited", rbac=str(ROOT / "deploy" / "rbac")),
        ]
    ).start()
    yield server
    server.stop()


SVC: dict[str, Any] = {
    "metadata": {"name": "s"},
    "spec": {"ports": [{"port": 5060, "protocol": "SCTP"}]},
}
DEPLOY: dict[str, Any] = {
    "metadata": {"name": "d"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "d"}},
        "template": {
            "metadata": {"labels": {"app": "d"}},
            "spec": {"containers": [{"name": "c", "image": "agnhost", "args": ["porter"]}]},
        },
    },
}


def test_discovery_lists_what_is_served_legacy_and_aggregated(lab: LabServer) -> None:
    raw = Raw(lab, "c1")
    code, core, _ = raw("GET", "/api/v1")
    assert code == 200 and core["groupVersion"] == "v1"
    services = next(r for r in core["resources"] if r["name"] == "services")
    assert services == {
        "name": "services",
        "singularName": "service",
        "namespaced": True,
        "kind": "Service",
        "verbs": [
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ],
        "shortNames": ["svc"],
        "categories": ["all"],
    }
    assert any(r["name"] == "pods/log" for r in core["resources"])
    code, groups, _ = raw("GET", "/apis")
    names = [g["name"] for g in groups["groups"]]
    assert {"apps", "networking.k8s.io", "discovery.k8s.io", "authorization.k8s.io"} <= set(names)
    code, apps, _ = raw("GET", "/apis/apps/v1")
    assert {r["name"] for r in apps["resources"]} >= {"deployments", "daemonsets"}
    assert raw("GET", "/apis/batch/v1")[0] == 404

    code, aggregated, headers = raw("GET", "/apis", accept=AGGREGATED)
    assert headers["Content-Type"] == (
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    )
    assert aggregated["kind"] == "APIGroupDiscoveryList"
    netpol = next(i for i in aggregated["items"] if i["metadata"]["name"] == "networking.k8s.io")
    resource = netpol["versions"][0]["resources"][0]
    assert resource["resource"] == "networkpolicies" and resource["scope"] == "Namespaced"
    assert resource["responseKind"] == {
        "group": "networking.k8s.io",
        "version": "v1",
        "kind": "NetworkPolicy",
    }
    # EndpointSlices came with 1.21: an older cluster does not list them.
    _, old_groups, _ = Raw(lab, "old")("GET", "/apis")
    assert "discovery.k8s.io" not in [g["name"] for g in old_groups["groups"]]


def test_openapi_v3_points_at_each_group_version_document(lab: LabServer) -> None:
    raw = Raw(lab, "c1")
    _, root, _ = raw("GET", "/openapi/v3")
    url = root["paths"]["api/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/api/v1?hash=")
    _, doc, _ = raw("GET", url.split("?")[0])
    schema = doc["components"]["schemas"]["io.k8s.api.core.v1.ServiceSpec"]
    assert schema["properties"]["ports"]["x-kubernetes-patch-merge-key"] == "port"
    patch = doc["paths"]["/api/v1/namespaces/{namespace}/services/{name}"]["patch"]
    assert any(p["name"] == "fieldValidation" for p in patch["parameters"])
    assert patch["x-kubernetes-group-version-kind"]["kind"] == "Service"
    assert raw("GET", "/openapi/v3/apis/batch/v1")[0] == 404


def test_lists_and_objects_come_as_tables_when_asked(lab: LabServer) -> None:
    raw = Raw(lab, "c1")
    raw("POST", "/api/v1/namespaces/default/services", SVC)
    _, table, _ = raw("GET", "/api/v1/namespaces/default/services", accept=TABLE)
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]][:5] == [
        "Name",
        "Type",
        "Cluster-IP",
        "External-IP",
        "Port(s)",
    ]
    row = next(r for r in table["rows"] if r["cells"][0] == "s")
    assert row["cells"][4] == "5060/SCTP"
    assert row["object"]["kind"] == "PartialObjectMetadata"
    _, one, _ = raw("GET", "/api/v1/nodes/c1-worker", accept=TABLE)
    assert one["rows"][0]["cells"][:3] == ["c1-worker", "Ready", "<none>"]


def test_field_validation_strict_warn_and_dry_run(lab: LabServer) -> None:
    raw = Raw(lab, "c1")
    typo = {**SVC, "spec": {**SVC["spec"], "prots": []}}
    code, status, _ = raw(
        "POST", "/api/v1/namespaces/default/services?fieldValidation=Strict", typo
    )
    assert code == 400
    assert status["message"] == (
        'Service in version "v1" cannot be handled as a Service: '
        'strict decoding error: unknown field "spec.prots"'
    )
    code, _, headers = raw("POST", "/api/v1/namespaces/default/services", typo)
    assert code == 201
    assert headers["Warning"] == '299 - "unknown field \\"spec.prots\\""'
    dry = {"metadata": {"name": "dry"}, "spec": SVC["spec"]}
    code, made, _ = raw("POST", "/api/v1/namespaces/default/services?dryRun=All", dry)
    assert code == 201 and made["metadata"]["name"] == "dry"
    assert raw("GET", "/api/v1/namespaces/default/services/dry")[0] == 404


def test_an_old_release_shows_no_field_it_lacks_and_takes_back_what_it_showed(
    lab: LabServer,
) -> None:
    # A 1.20 API server has no Service spec.internalTrafficPolicy (1.21): the lab keeps it on
    # every release but does not show it there, so an object read back and sent again, or
    # copied into a new one, passes strict validation; an unknown field the caller adds
    # (spec.trafficDistribution came with 1.30) does not.
    raw = Raw(lab, "old")
    path = "/api/v1/namespaces/default/services"
    assert raw("POST", f"{path}?fieldValidation=Strict", SVC)[0] == 201
    code, read_back, _ = raw("GET", f"{path}/s")
    assert code == 200
    assert fields.unknown_fields("Service", read_back, "v1.20") == []
    assert "internalTrafficPolicy" not in read_back["spec"] and "clusterIPs" in read_back["spec"]
    copy = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s-copy"},
        "spec": {
            k: v for k, v in read_back["spec"].items() if k not in ("clusterIP", "clusterIPs")
        },
    }
    code, made, _ = raw("POST", f"{path}?fieldValidation=Strict", copy)
    assert code == 201, made
    code, replaced, headers = raw("PUT", f"{path}/s?fieldValidation=Strict", read_back)
    assert code == 200, replaced
    code, _, headers = raw("PUT", f"{path}/s", replaced)
    assert code == 200 and headers["Warning"] is None
    merge = "application/merge-patch+json"
    code, patched, headers = raw(
        "PATCH",
        f"{path}/s?fieldValidation=Strict",
        {"metadata": {"labels": {"a": "b"}}},
        content_type=merge,
    )
    assert code == 200 and patched["metadata"]["labels"] == {"a": "b"}
    again = {**patched, "spec": {**patched["spec"], "trafficDistribution": "PreferClose"}}
    code, status, _ = raw("PUT", f"{path}/s?fieldValidation=Strict", again)
    assert code == 400
    assert status["message"] == (
        'Service in version "v1" cannot be handled as a Service: '
        'strict decoding error: unknown field "spec.trafficDistribution"'
    )
    code, status, _ = raw(
        "PATCH",
        f"{path}/s?fieldValidation=Strict",
        {"spec": {"trafficDistribution": "PreferClose"}},
        content_type=merge,
    )
    assert code == 400
    assert status["message"] == 'strict decoding error: unknown field "spec.trafficDistribution"'
    # the same check, unit by unit: the lab's fields pass when the live object has them
    assert fields.check("Service", read_back, "Strict", decoded=True, live=read_back) == []
    assert fields.check("Service", read_back, "Warn") == []  # on the current release


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    profiles = [
        profile("v119", kubernetes_version="1.19.16"),
        profile("v129", kubernetes_version="1.29.4"),
        profile("v130", kubernetes_version="1.30.2"),
    ]
    with kubectl_on(profiles, tmp_path_factory.mktemp("releases")) as tool:
        yield tool


TRAFFIC = """apiVersion: v1
kind: Service
metadata:
  name: {name}
spec:
  selector: {{app: x}}
  ports: [{{port: 80}}]
  trafficDistribution: PreferClose
"""


def test_kubectl_validates_fields_against_the_clusters_release(releases: Kubectl) -> None:
    # Service spec.trafficDistribution came with v1.30: a 1.29 API server refuses it under
    # Strict (kubectl's default) and warns under Warn, a 1.30 one takes it
    refused = releases(
        "v129", "apply", "--validate=strict", "-f", "-", stdin=TRAFFIC.format(name="t"), ok=False
    )
    assert refused.returncode != 0
    assert (
        'Service in version "v1" cannot be handled as a Service: strict decoding error: '
        'unknown field "spec.trafficDistribution"'
    ) in refused.stderr, refused.stderr
    assert releases("v129", "get", "service", "t", ok=False).returncode != 0
    created = releases(
        "v129", "create", "--validate=strict", "-f", "-", stdin=TRAFFIC.format(name="t"), ok=False
    )
    assert 'strict decoding error: unknown field "spec.trafficDistribution"' in created.stderr

    warned = releases("v129", "apply", "--validate=warn", "-f", "-", stdin=TRAFFIC.format(name="w"))
    assert 'Warning: unknown field "spec.trafficDistribution"' in warned.stderr, warned.stderr
    assert "service/w created" in warned.stdout

    taken = releases(
        "v130", "apply", "--validate=strict", "-f", "-", stdin=TRAFFIC.format(name="t")
    )
    assert "service/t created" in taken.stdout and not taken.stderr, taken.stderr
    got = json.loads(releases("v130", "get", "service", "t", "-o", "json").stdout)
    assert got["spec"]["trafficDistribution"] == "PreferClose"

    # what the lab keeps on every release (clusterIPs, ipFamilies, ipFamilyPolicy,
    # internalTrafficPolicy: none of them a 1.19 field) a 1.19 cluster does not show, so kubectl
    # sends back what it read, whole (replace: a PUT) or as a patch (apply, label)
    plain = TRAFFIC.format(name="p").replace("  trafficDistribution: PreferClose\n", "")
    releases("v119", "apply", "--validate=strict", "-f", "-", stdin=plain)
    read_back = releases("v119", "get", "service", "p", "-o", "json").stdout
    assert "ipFamilyPolicy" not in read_back and "internalTrafficPolicy" not in read_back
    replaced = releases("v119", "replace", "--validate=strict", "-f", "-", stdin=read_back)
    assert "service/p replaced" in replaced.stdout and not replaced.stderr, replaced.stderr
    labelled = releases("v119", "label", "service", "p", "a=b")
    assert not labelled.stderr, labelled.stderr
    reapplied = releases(
        "v119", "apply", "--validate=strict", "-f", "-", stdin=plain.replace("80", "81")
    )
    assert "service/p configured" in reapplied.stdout and not reapplied.stderr


def test_updates_keep_allocations_refuse_stale_versions_and_immutable_fields(
    lab: LabServer,
) -> None:
    raw = Raw(lab, "c1")
    _, made, _ = raw("POST", "/api/v1/namespaces/default/services", SVC)
    ip = made["spec"]["clusterIP"]
    stale = {**made, "metadata": {**made["metadata"], "resourceVersion": "1"}}
    code, status, _ = raw("PUT", "/api/v1/namespaces/default/services/s", stale)
    assert (code, status["reason"]) == (409, "Conflict")
    assert status["message"] == (
        'Operation cannot be fulfilled on services "s": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    moved = {
        **made,
        "spec": {**made["spec"], "clusterIP": "10.96.9.9", "clusterIPs": ["10.96.9.9"]},
    }
    code, status, _ = raw("PUT", "/api/v1/namespaces/default/services/s", moved)
    assert code == 422
    assert status["message"] == (
        'Service "s" is invalid: spec.clusterIPs[0]: Invalid value: "10.96.9.9": '
        "may not change once set"
    )
    # A PUT without the allocated IP keeps it (PrepareForUpdate).
    bare = {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 5061, "protocol": "SCTP"}]}}
    code, updated, _ = raw("PUT", "/api/v1/namespaces/default/services/s", bare)
    assert code == 200 and updated["spec"]["clusterIP"] == ip
    assert updated["metadata"]["uid"] == made["metadata"]["uid"]
    # A pod's spec does not change, but for its images.
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "a"}]}}
    assert raw("POST", "/api/v1/namespaces/default/pods", pod)[0] == 201
    code, status, _ = raw(
        "PATCH",
        "/api/v1/namespaces/default/pods/p",
        {"spec": {"restartPolicy": "Never"}},
        content_type="application/merge-patch+json",
    )
    assert code == 422 and "pod updates may not change fields other than" in status["message"]
    code, patched, _ = raw(
        "PATCH",
        "/api/v1/namespaces/default/pods/p",
        {"spec": {"containers": [{"name": "c", "image": "b"}]}},
        content_type="application/strategic-merge-patch+json",
    )
    assert code == 200 and patched["spec"]["containers"][0]["image"] == "b"
    # Server-side apply: a field manager is required; a missing object is created, a live one
    # gets the applied configuration merged in.
    ports: list[dict[str, Any]] = [{"port": 5060, "protocol": "SCTP"}]
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "ssa"},
        "spec": {"ports": ports},
    }
    url = "/api/v1/namespaces/default/services/ssa"
    apply = "application/apply-patch+yaml"
    code, status, _ = raw("PATCH", url, svc, content_type=apply)
    assert code == 400 and status["message"] == "PATCH: fieldManager is required for apply requests"
    code, made, _ = raw("PATCH", url + "?fieldManager=t", svc, content_type=apply)
    assert code == 201 and made["spec"]["ports"][0]["port"] == 5060
    ports[0]["port"] = 5062
    code, applied, _ = raw("PATCH", url + "?fieldManager=t", svc, content_type=apply)
    assert code == 200 and [p["port"] for p in applied["spec"]["ports"]] == [5062]
    assert applied["metadata"]["uid"] == made["metadata"]["uid"]
    code, status, _ = raw(
        "PATCH", url + "?fieldManager=t", {**svc, "kind": "Pod"}, content_type=apply
    )
    assert code == 400 and "is not Service" in status["message"]


def test_deletion_propagates_to_a_deployments_pods_unless_orphaned(lab: LabServer) -> None:
    raw = Raw(lab, "c1")
    for name in ("keep", "drop"):
        body = {**DEPLOY, "metadata": {"name": name}}
        assert raw("POST", "/apis/apps/v1/namespaces/default/deployments", body)[0] == 201
    _, pods, _ = raw("GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Dd")
    assert len(pods["items"]) == 4
    raw(
        "DELETE",
        "/apis/apps/v1/namespaces/default/deployments/keep",
        {"propagationPolicy": "Orphan"},
    )
    raw("DELETE", "/apis/apps/v1/namespaces/default/deployments/drop?propagationPolicy=Background")
    _, pods, _ = raw("GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Dd")
    assert sorted(p["metadata"]["name"].split("-")[0] for p in pods["items"]) == ["keep", "keep"]
    code, status, _ = raw(
        "DELETE",
        "/api/v1/namespaces/default/pods/" + pods["items"][0]["metadata"]["name"],
        {"propagationPolicy": "Sometimes"},
    )
    assert code == 422 and 'Unsupported value: "Sometimes"' in status["message"]


def test_a_watch_with_bookmarks_sends_them_when_quiet(
    lab: LabServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watch, "BOOKMARK_S", 0.2)
    raw = Raw(lab, "c1")
    _, listed, _ = raw("GET", "/api/v1/namespaces/default/services")
    rv = listed["metadata"]["resourceVersion"]
    request = urllib.request.Request(
        f"{lab.cluster_url('c1')}/api/v1/namespaces/default/services?watch=true"
        f"&allowWatchBookmarks=true&resourceVersion={rv}&timeoutSeconds=1",
        headers={"Authorization": f"Bearer {raw.token}"},
    )
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=10, context=lab.client_context()) as answer:
        events = [json.loads(line) for line in answer if line.strip()]
    assert time.monotonic() - started < 5
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert bookmarks and bookmarks[0]["object"]["kind"] == "Service"
    assert int(bookmarks[0]["object"]["metadata"]["resourceVersion"]) >= int(rv)


def test_self_subject_access_review_answers_from_the_lab_rbac(lab: LabServer) -> None:
    def review(name: str, verb: str, resource: str, namespace: str = "default") -> bool:
        code, answer, _ = Raw(lab, name)(
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {
                    "resourceAttributes": {
                        "namespace": namespace,
                        "verb": verb,
                        "resource": resource,
                    }
                },
            },
        )
        assert code == 201, answer
        return bool(answer["status"]["allowed"])

    assert review("c1", "delete", "nodes")  # the profile token is cluster-admin
    # The shipped least-privilege role: pods yes, nodes never deleted, secrets never read.
    assert review("limited", "create", "pods")
    assert not review("limited", "delete", "nodes")
    assert not review("limited", "get", "secrets")
