"""metadata.managedFields as upstream writes them beyond server-side apply (issue 24): a
create's Update entry owns what defaulting filled in (lab/defaulting.py), not what the
registry allocated; the lab's controllers record their own entries, the kubelet's and the
deployment controller's and the load balancer's through the status subresource, the
endpoint-slice controller's as an Update of the main resource. Unit tests of the field sets:
tests/lab/test_server_side_apply.py; through the real kubectl: tests/lab/test_kubectl.py."""

from __future__ import annotations

import json
import time
from typing import Any

from kubernetes import client

from tests.lab.kube import Kube, namespace, pod

PORT = 'k:{"port":5060,"protocol":"TCP"}'


def raw(call: Any, *args: Any) -> dict[str, Any]:
    """The object as the lab sent it (the client's models drop nothing, but rename)."""
    found: dict[str, Any] = json.loads(call(*args, _preload_content=False).data)
    return found


def entries(obj: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {
        (e["manager"], e["operation"], e.get("subresource", "")): e
        for e in obj["metadata"]["managedFields"]
    }


def bare_service(name: str, svc_type: str | None = None) -> dict[str, Any]:
    """A Service as a manifest states it: no type, no protocol, no targetPort."""
    spec: dict[str, Any] = {"selector": {"app": name}, "ports": [{"port": 5060}]}
    if svc_type:
        spec["type"] = svc_type
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


def test_a_create_owns_the_defaulted_fields_not_the_allocated_ones(kube: Kube) -> None:
    ns = namespace(kube, "mf")
    kube.core.create_namespaced_service(ns, bare_service("echo"), field_manager="tests")
    got = raw(kube.core.read_namespaced_service, "echo", ns)
    assert got["spec"]["clusterIP"] and got["spec"]["ipFamilyPolicy"] == "SingleStack"
    (entry,) = got["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"], entry["apiVersion"]) == ("tests", "Update", "v1")
    spec = entry["fieldsV1"]["f:spec"]
    # SetDefaults_Service ran as the body was decoded, before the field manager
    assert {"f:type", "f:sessionAffinity", "f:internalTrafficPolicy"} <= set(spec)
    assert spec["f:ports"] == {
        ".": {},
        PORT: {".": {}, "f:port": {}, "f:protocol": {}, "f:targetPort": {}},
    }
    # the registry's allocations came after it: no one's
    for allocated in ("f:clusterIP", "f:clusterIPs", "f:ipFamilies", "f:ipFamilyPolicy"):
        assert allocated not in spec, allocated


def test_a_pod_create_owns_its_defaults_and_the_kubelet_its_status(kube: Kube) -> None:
    ns = namespace(kube, "mf")
    pod(kube, ns, "p", ["pause"])
    got = raw(kube.core.read_namespaced_pod, "p", ns)
    assert got["status"]["phase"] == "Running"
    found = entries(got)
    assert set(found) == {("OpenAPI-Generator", "Update", ""), ("kubelet", "Update", "status")}
    spec = found["OpenAPI-Generator", "Update", ""]["fieldsV1"]["f:spec"]
    for defaulted in ("f:dnsPolicy", "f:schedulerName", "f:enableServiceLinks"):
        assert defaulted in spec, defaulted
    ctr = spec["f:containers"]['k:{"name":"c"}']
    assert {"f:imagePullPolicy", "f:terminationMessagePath"} <= set(ctr)
    # bound by the scheduler, set by admission: not the creator's
    assert "f:nodeName" not in spec and "f:serviceAccountName" not in spec
    kubelet = found["kubelet", "Update", "status"]
    assert kubelet["apiVersion"] == "v1" and kubelet["fieldsType"] == "FieldsV1"
    assert kubelet["time"]
    assert list(kubelet["fieldsV1"]) == ["f:status"]
    status = kubelet["fieldsV1"]["f:status"]
    for field in ("f:phase", "f:podIP", "f:podIPs", "f:hostIP", "f:startTime"):
        assert field in status, field
    assert status["f:containerStatuses"] == {}  # an atomic list
    assert 'k:{"type":"Ready"}' in status["f:conditions"]
    # what the pod strategy and the binding set, the kubelet did not change
    assert 'k:{"type":"PodScheduled"}' not in status["f:conditions"]
    assert "f:qosClass" not in status
    # a list read twice says the same
    (listed,) = raw(kube.core.list_namespaced_pod, ns)["items"]
    assert listed["metadata"]["managedFields"] == got["metadata"]["managedFields"]


def test_a_pod_bound_to_no_kubelet_has_no_kubelet_entry(kube: Kube) -> None:
    ns = namespace(kube, "mf")
    pod(kube, ns, "lost", ["pause"], node="no-such-node")
    got = raw(kube.core.read_namespaced_pod, "lost", ns)
    assert [e["manager"] for e in got["metadata"]["managedFields"]] == ["OpenAPI-Generator"]


def test_the_deployment_controller_and_the_endpoint_slice_controller_record_theirs(
    kube: Kube,
) -> None:
    ns = namespace(kube, "mf")
    apps = client.AppsV1Api(kube.api_client)
    labels = {"app": "echo"}
    body: Any = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "echo"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "agnhost:2.53"}]},
            },
        },
    }
    apps.create_namespaced_deployment(ns, body, field_manager="tests")
    kube.core.create_namespaced_service(ns, bare_service("echo"), field_manager="tests")
    got = raw(apps.read_namespaced_deployment, "echo", ns)
    found = entries(got)
    assert set(found) == {("tests", "Update", ""), ("kube-controller-manager", "Update", "status")}
    mine = found["tests", "Update", ""]["fieldsV1"]["f:spec"]
    assert {"f:replicas", "f:revisionHistoryLimit", "f:progressDeadlineSeconds"} <= set(mine)
    assert "f:schedulerName" in mine["f:template"]["f:spec"]
    theirs = found["kube-controller-manager", "Update", "status"]
    assert theirs["apiVersion"] == "apps/v1"
    assert theirs["fieldsV1"]["f:metadata"] == {
        "f:annotations": {".": {}, "f:deployment.kubernetes.io/revision": {}}
    }
    status = theirs["fieldsV1"]["f:status"]
    assert {"f:replicas", "f:readyReplicas", "f:observedGeneration"} <= set(status)
    assert set(status["f:conditions"]) == {
        ".",
        'k:{"type":"Available"}',
        'k:{"type":"Progressing"}',
    }
    # the ReplicaSet controller made the pod: kube-controller-manager's create, then the kubelet
    (made,) = raw(kube.core.list_namespaced_pod, ns)["items"]
    assert {
        (e["manager"], e.get("subresource", "")) for e in made["metadata"]["managedFields"]
    } == {
        ("kube-controller-manager", ""),
        ("kubelet", "status"),
    }
    # the endpoint slice controller's slice: an Update of the main resource
    (piece,) = raw(kube.discovery.list_namespaced_endpoint_slice, ns)["items"]
    (entry,) = piece["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"], entry.get("subresource")) == (
        "kube-controller-manager",
        "Update",
        None,
    )
    assert entry["apiVersion"] == "discovery.k8s.io/v1"
    fields = entry["fieldsV1"]
    assert {"f:addressType", "f:endpoints", "f:ports", "f:metadata"} <= set(fields)
    assert "f:ownerReferences" in fields["f:metadata"]


def test_a_load_balancer_owns_the_ingress_it_published(make_kube: Any) -> None:
    kube = make_kube(load_balancer=True)
    ns = namespace(kube, "mf")
    kube.core.create_namespaced_service(
        ns, bare_service("lb", "LoadBalancer"), field_manager="tests"
    )
    deadline = time.monotonic() + 10
    while True:
        got = raw(kube.core.read_namespaced_service, "lb", ns)
        if got["status"]["loadBalancer"].get("ingress") or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    found = entries(got)
    assert set(found) == {("tests", "Update", ""), ("controller", "Update", "status")}
    spec = found["tests", "Update", ""]["fieldsV1"]["f:spec"]
    assert {"f:allocateLoadBalancerNodePorts", "f:externalTrafficPolicy"} <= set(spec)
    assert "f:nodePort" not in spec["f:ports"][PORT]  # allocated by the registry
    assert found["controller", "Update", "status"]["fieldsV1"] == {
        "f:status": {"f:loadBalancer": {"f:ingress": {}}}
    }


def test_a_controller_entry_is_the_same_answer_whatever_the_metadata_no_field_set_holds() -> None:
    """The answers are cached by the question without the metadata record_update never reads
    (every derived object is rendered again with a new resourceVersion on every change): such a
    rendering hits the cache and gets the same entry; the request's own managedFields, which
    record_update does read, stay part of the question."""
    from lab import managedfields

    def slice_(rv: str, uid: str, **meta: Any) -> dict[str, Any]:
        return {
            "metadata": {"name": "s-abc", "resourceVersion": rv, "uid": uid, **meta},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.244.1.2"], "conditions": {"ready": True}}],
        }

    def ask(obj: dict[str, Any]) -> Any:
        return managedfields.controller_entry(
            "EndpointSlice",
            {},
            obj,
            "kube-controller-manager",
            "2026-12-04T00:00:00Z",
            api_version="discovery.k8s.io/v1",
        )

    first = ask(slice_("10", "u-1"))
    hits = managedfields._controller_entry.cache_info().hits
    assert ask(slice_("11", "u-2")) == first
    assert managedfields._controller_entry.cache_info().hits == hits + 1
    assert first["manager"] == "kube-controller-manager"
    assert "f:endpoints" in first["fieldsV1"] and "f:resourceVersion" not in json.dumps(first)
    # A request's entries are read (the update takes theirs over): a different question.
    theirs = [
        {
            "manager": "someone",
            "operation": "Update",
            "apiVersion": "discovery.k8s.io/v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:addressType": {}},
        }
    ]
    assert managedfields._unstripped(slice_("12", "u-3", managedFields=theirs))["metadata"] == {
        "managedFields": theirs
    }


def test_the_store_s_copies_are_deep_and_keep_every_value() -> None:
    from lab.store import clone

    obj = {"a": [1, 2.5, {"b": None, "c": True}], "d": {"e": "f", "g": []}, "h": (1, [2])}
    copied = clone(obj)
    assert copied == obj
    copied["a"][2]["b"] = "changed"
    copied["d"]["g"].append(1)
    copied["h"][1].append(3)
    assert obj == {"a": [1, 2.5, {"b": None, "c": True}], "d": {"e": "f", "g": []}, "h": (1, [2])}
