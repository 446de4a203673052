"""OpenAPI v3 of each cluster's own release (lab/openapi.py, lab/openapi_trim.py).

The real kubectl explains a field to a cluster of a release that has it and refuses it, in its
own words, to one of a release that does not; `/openapi/v3` names each release's documents by a
hash of their own; a minor the lab stores nothing for gets the nearest older release and says
so; what a cluster serves is what the generator makes of upstream's definitions (excerpts of
them under openapi_definitions/, see the NOTICE there); field ownership follows the release's
schemas.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lab import fields, openapi, openapi_trim
from lab.server import LabServer
from tests.lab.kube import profile
from tests.lab.test_kubeapi import Raw
from tests.lab.test_kubectl import Kubectl
from tests.need import unavailable

DEFINITIONS = Path(__file__).resolve().parent / "openapi_definitions"
# cluster name -> the kubernetes_version of its profile
CLUSTERS = {
    "v120": "1.20.15",
    "v129": "1.29.4",
    "v130": "1.30.2",
    "future": "1.38.0",
    "ancient": "1.17.4",
}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    tmp = tmp_path_factory.mktemp("openapi")
    server = LabServer(
        [profile(name, kubernetes_version=v) for name, v in CLUSTERS.items()],
        state_dir=tmp / "state",
    ).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def kubectl(lab: LabServer, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    binary = shutil.which("kubectl")
    if binary is None:
        unavailable("kubectl is not installed (Debian: apt-get install -y kubernetes-client)")
        raise AssertionError("unreachable")
    tmp = tmp_path_factory.mktemp("kubectl")
    return Kubectl(binary, lab.write_kubeconfig(tmp / "kubeconfig"), tmp)


def test_kubectl_explains_the_fields_of_each_clusters_release(kubectl: Kubectl) -> None:
    # Service spec.trafficDistribution came with v1.30 (upstream's definitions: absent in
    # v1.29's ServiceSpec, present in v1.30's)
    newer = kubectl("v130", "explain", "service.spec.trafficDistribution")
    assert "FIELD: trafficDistribution <string>" in newer.stdout, newer.stdout
    assert "TrafficDistribution offers a way to express preferences" in newer.stdout
    assert "trafficDistribution\t<string>" in kubectl("v130", "explain", "service.spec").stdout

    older = kubectl("v129", "explain", "service.spec.trafficDistribution", ok=False)
    assert older.returncode != 0
    assert 'error: field "trafficDistribution" does not exist' in older.stderr, older.stderr
    spec = kubectl("v129", "explain", "service.spec").stdout
    assert "trafficDistribution" not in spec and "internalTrafficPolicy\t<string>" in spec


def test_openapi_v3_names_each_releases_documents(lab: LabServer) -> None:
    roots = {name: Raw(lab, name)("GET", "/openapi/v3")[1]["paths"] for name in CLUSTERS}
    for doc in ("api/v1", "apis/apps/v1", "apis/networking.k8s.io/v1"):
        urls = {roots[name][doc]["serverRelativeURL"] for name in CLUSTERS}
        assert len(urls) == len(CLUSTERS), urls  # a hash per release: kubectl caches by it
    assert "apis/discovery.k8s.io/v1" not in roots["v120"]  # EndpointSlices from 1.21 on

    def info(name: str) -> dict[str, Any]:
        url = roots[name]["api/v1"]["serverRelativeURL"]
        code, doc, _ = Raw(lab, name)("GET", url)
        assert code == 200
        assert doc["info"]["version"] == f"v{CLUSTERS[name]}"
        return dict(doc["info"])

    assert info("v130")["x-lab-schemas-release"] == "v1.30.0"
    assert "description" not in info("v130")
    future = info("future")
    assert future["x-lab-schemas-release"] == "v1.37.0"
    assert future["description"].startswith(
        "The lab stores no OpenAPI documents for v1.38: these are the schemas of v1.37.0, "
        "the nearest older release it stores"
    )
    ancient = info("ancient")
    assert ancient["x-lab-schemas-release"] == "v1.18.0"
    assert "v1.18.0, the oldest release it stores" in ancient["description"]


def test_the_stored_releases() -> None:
    stored = openapi.stored_releases()
    assert stored == [f"v1.{minor}" for minor in range(18, 38)]
    assert openapi.release_for("1.31.2") == ("v1.31", "")
    assert openapi.release_for("1.33.5+k3s1") == ("v1.33", "")
    assert openapi.release_for("1.40.0")[0] == "v1.37"
    assert openapi.release_for("1.17.4")[0] == "v1.18"


# definition -> the group version whose document the lab serves it in
_DOCUMENT = {
    "io.k8s.api.core.v1.Service": "v1",
    "io.k8s.api.core.v1.ServiceSpec": "v1",
    "io.k8s.api.core.v1.ServicePort": "v1",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "v1",
    "io.k8s.api.networking.v1.NetworkPolicyPort": "networking.k8s.io/v1",
    "io.k8s.api.apps.v1.DeploymentSpec": "apps/v1",
}


@pytest.mark.parametrize(
    ("source", "cluster"),
    [("v1.20.0.json", "v120"), ("v1.29.0.json", "v129"), ("v1.30.0.json", "v130")],
)
def test_served_schemas_are_what_the_generator_makes_of_the_release(
    lab: LabServer, source: str, cluster: str
) -> None:
    defs = openapi_trim.definitions(json.loads((DEFINITIONS / source).read_text()))
    raw = Raw(lab, cluster)
    for name, definition in defs.items():
        gv = _DOCUMENT[name]
        path = "/openapi/v3/api/v1" if gv == "v1" else f"/openapi/v3/apis/{gv}"
        code, doc, _ = raw("GET", path)
        assert code == 200
        top_kind = bool(definition.get("x-kubernetes-group-version-kind"))
        wanted = openapi_trim.schema(defs, name, top_kind=top_kind)
        assert doc["components"]["schemas"][name] == wanted, (source, name)
    spec = openapi_trim.schema(defs, "io.k8s.api.core.v1.ServiceSpec")["properties"]
    assert ("trafficDistribution" in spec) == (source == "v1.30.0.json")


def test_field_ownership_follows_the_release(lab: LabServer) -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "owned"},
        "spec": {"selector": {"app": "x"}, "ports": [{"port": 5060, "protocol": "SCTP"}]},
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "owned"},
        "spec": {
            "selector": {"matchLabels": {"app": "x"}},
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "c", "image": "agnhost"}]},
            },
        },
    }

    def fields(name: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        code, made, _ = Raw(lab, name)("POST", path + "?fieldManager=tester", body)
        assert code == 201, made
        (entry,) = [e for e in made["metadata"]["managedFields"] if e["manager"] == "tester"]
        return dict(entry["fieldsV1"])

    services = "/api/v1/namespaces/default/services"
    deployments = "/apis/apps/v1/namespaces/default/deployments"
    # ServiceSpec.selector is an atomic map from v1.22 on: one leaf; before, a key per label
    assert fields("v120", services, service)["f:spec"]["f:selector"] == {".": {}, "f:app": {}}
    assert fields("v130", services, service)["f:spec"]["f:selector"] == {}
    # a pod's containers are keyed by name in every release: by x-kubernetes-list-map-keys from
    # v1.30 on, by their patch merge key before (as structured-merge-diff reads older schemas)
    for name in ("v129", "v130"):
        template = fields(name, deployments, deployment)["f:spec"]["f:template"]
        assert 'k:{"name":"c"}' in template["f:spec"]["f:containers"], (name, template)


def test_each_release_shows_only_fields_it_has() -> None:
    """What the lab writes on every release (a Service's clusterIPs, v1.20; internalTrafficPolicy,
    v1.22; a pod's status.hostIPs, v1.28) is not in what an older cluster shows: a client that
    copies an object from it (`get -o yaml`, then `create --validate=strict`) is not refused."""
    releases = openapi.stored_releases()
    server = LabServer(
        [profile(f"r{r.replace('.', '')}", kubernetes_version=r[1:] + ".3") for r in releases]
    ).start()
    try:
        for release in releases:
            cluster = server.cluster(f"r{release.replace('.', '')}")
            cluster.create_namespace({"metadata": {"name": "t"}})
            cluster.create(
                "services",
                "t",
                {
                    "metadata": {"name": "lb"},
                    "spec": {
                        "type": "LoadBalancer",
                        "selector": {"app": "x"},
                        "ports": [{"port": 5060, "protocol": "SCTP"}],
                    },
                },
            )
            pod: dict[str, Any] = {"metadata": {"name": "p", "labels": {"app": "x"}}}
            pod["spec"] = {
                "containers": [
                    {
                        "name": "c",
                        "image": "x",
                        "ports": [{"containerPort": 5060, "protocol": "SCTP"}],
                    }
                ]
            }
            cluster.create("pods", "t", pod)
            cluster.create(
                "deployments",
                "t",
                {
                    "metadata": {"name": "d"},
                    "spec": {
                        "selector": {"matchLabels": {"app": "d"}},
                        "template": {
                            "metadata": {"labels": {"app": "d"}},
                            "spec": {"containers": [{"name": "c", "image": "x"}]},
                        },
                    },
                },
            )
            cluster.create(
                "networkpolicies",
                "t",
                {"metadata": {"name": "n"}, "spec": {"podSelector": {}, "ingress": [{}]}},
            )
            cluster.advance()
            for kind, resource, name in (
                ("Service", "services", "lb"),
                ("Pod", "pods", "p"),
                ("Deployment", "deployments", "d"),
                ("NetworkPolicy", "networkpolicies", "n"),
            ):
                shown = cluster.render(resource, ("t", name))
                assert fields.unknown_fields(kind, shown, release) == [], (release, kind)
            service = cluster.render("services", ("t", "lb"))["spec"]
            assert ("clusterIPs" in service) == (release >= "v1.20"), release
    finally:
        server.stop()
