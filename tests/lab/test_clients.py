"""Other Python clients against the lab over TLS: `kubernetes.dynamic.DynamicClient` (which
finds every kind through discovery) and lightkube (its own HTTP stack, httpx)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import config
from kubernetes.dynamic import DynamicClient

from lab.server import LabServer
from tests.lab.kube import profile


@pytest.fixture(scope="module")
def lab() -> Iterator[LabServer]:
    server = LabServer([profile("c1", faults={"pod_start_delay_s": 0})]).start()
    yield server
    server.stop()


SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "echo"},
    "spec": {
        "selector": {"app": "echo"},
        "ports": [{"name": "sctp", "port": 5060, "protocol": "SCTP"}],
    },
}
DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "echo"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "echo"}},
        "template": {
            "metadata": {"labels": {"app": "echo"}},
            "spec": {
                "containers": [
                    {
                        "name": "echo",
                        "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                        "args": ["porter"],
                        "ports": [{"containerPort": 5060, "protocol": "SCTP"}],
                    }
                ]
            },
        },
    },
}


def test_the_dynamic_client_discovers_and_uses_every_kind(lab: LabServer) -> None:
    api = config.new_client_from_config_dict(lab.kubeconfig("c1"))
    dyn = DynamicClient(api)
    namespaces = dyn.resources.get(api_version="v1", kind="Namespace")
    namespaces.create(body={"metadata": {"name": "dyn"}})
    services = dyn.resources.get(api_version="v1", kind="Service")
    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    pods = dyn.resources.get(api_version="v1", kind="Pod")
    policies = dyn.resources.get(api_version="networking.k8s.io/v1", kind="NetworkPolicy")
    assert services.namespaced and not namespaces.namespaced
    assert "svc" in services.short_names and policies.group == "networking.k8s.io"

    created = services.create(body=SERVICE, namespace="dyn")
    assert created.spec.ports[0].protocol == "SCTP" and created.spec.clusterIP
    deployments.create(body=DEPLOYMENT, namespace="dyn")
    listed = pods.get(namespace="dyn", label_selector="app=echo")
    assert len(listed.items) == 2
    assert all(p.metadata.ownerReferences[0].kind == "ReplicaSet" for p in listed.items)

    # A strategic merge patch keyed by port, then a JSON merge patch of a label.
    patched = services.patch(
        name="echo",
        namespace="dyn",
        body={"spec": {"ports": [{"name": "sctp-2", "port": 5061, "protocol": "SCTP"}]}},
        content_type="application/strategic-merge-patch+json",
    )
    assert sorted(p.port for p in patched.spec.ports) == [5060, 5061]
    assert patched.spec.clusterIP == created.spec.clusterIP
    services.patch(
        name="echo",
        namespace="dyn",
        body={"metadata": {"labels": {"seen": "yes"}}},
        content_type="application/merge-patch+json",
    )

    # A watch from the list's resourceVersion sees the next change, then a bookmark-free end.
    rv = services.get(namespace="dyn").metadata.resourceVersion
    deployments.patch(
        name="echo",
        namespace="dyn",
        body=[{"op": "replace", "path": "/spec/replicas", "value": 1}],
        content_type="application/json-patch+json",
    )
    assert len(pods.get(namespace="dyn", label_selector="app=echo").items) == 1
    services.patch(
        name="echo",
        namespace="dyn",
        body={"metadata": {"labels": {"again": "yes"}}},
        content_type="application/merge-patch+json",
    )
    events = list(services.watch(namespace="dyn", resource_version=rv, timeout=1))
    assert [e["type"] for e in events] == ["MODIFIED"]
    assert events[0]["object"].metadata.labels["again"] == "yes"

    # Foreground deletion takes the Deployment's pods along; Orphan would leave them.
    deployments.delete(name="echo", namespace="dyn", body={"propagationPolicy": "Foreground"})
    assert pods.get(namespace="dyn", label_selector="app=echo").items == []


def test_lightkube_talks_to_the_lab_over_tls_with_the_kubeconfig_ca(lab: LabServer) -> None:
    from lightkube import ApiError, Client, KubeConfig
    from lightkube.models.meta_v1 import ObjectMeta
    from lightkube.resources.apps_v1 import Deployment
    from lightkube.resources.core_v1 import Namespace, Node, Pod, Service
    from lightkube.types import PatchType

    client: Any = Client(config=KubeConfig.from_dict(lab.kubeconfig("c1")))
    try:
        client.create(Namespace(metadata=ObjectMeta(name="lk")))
        nodes = list(client.list(Node))
        assert [n.metadata.name for n in nodes] == ["c1-control-plane", "c1-worker"]
        client.create(Service.from_dict(SERVICE), namespace="lk")
        client.create(Deployment.from_dict(DEPLOYMENT), namespace="lk")
        pods = list(client.list(Pod, namespace="lk", labels={"app": "echo"}))
        assert len(pods) == 2 and all(p.status.phase == "Running" for p in pods)
        client.patch(
            Service,
            "echo",
            {"spec": {"ports": [{"port": 5060, "protocol": "SCTP", "name": "sctp-main"}]}},
            namespace="lk",
            patch_type=PatchType.STRATEGIC,
        )
        got = client.get(Service, "echo", namespace="lk")
        assert [(p.port, p.name) for p in got.spec.ports] == [(5060, "sctp-main")]
        with pytest.raises(ApiError) as refused:
            bad = Service.from_dict(
                {
                    **SERVICE,
                    "metadata": {"name": "bad"},
                    "spec": {"ports": [{"port": 1, "protocol": "sctp"}]},
                }
            )
            client.create(bad, namespace="lk")
        assert refused.value.status.code == 422
        assert refused.value.status.message == (
            'Service "bad" is invalid: spec.ports[0].protocol: Unsupported value: "sctp": '
            'supported values: "SCTP", "TCP", "UDP"'
        )
        client.delete(Deployment, "echo", namespace="lk")
        assert list(client.list(Pod, namespace="lk")) == []
    finally:
        client.close()
