"""`?watch=true` through the real client's `watch.Watch().stream(...)`, and list resourceVersion."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from kubernetes import watch
from kubernetes.client.rest import ApiException

from tests.lab.kube import Kube, namespace, sctp_server, service

IMAGE = "registry.k8s.io/e2e-test-images/agnhost:2.53"


def pause_pod(kube: Kube, ns: str, name: str, labels: dict[str, str] | None = None) -> None:
    kube.core.create_namespaced_pod(
        ns,
        {
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "image": IMAGE, "args": ["pause"]}]},
        },
    )


def later(seconds: float, action: Any) -> threading.Thread:
    def run() -> None:
        time.sleep(seconds)
        action()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_watch_from_the_lists_version_sees_added_modified_deleted(make_kube: Any) -> None:
    kube = make_kube(faults={"pod_start_delay_s": 0.2})
    ns = namespace(kube, "w")
    listed = kube.core.list_namespaced_pod(ns)

    def churn() -> None:
        pause_pod(kube, ns, "p")
        time.sleep(0.4)  # long enough for the pod to start
        kube.core.delete_namespaced_pod("p", ns)

    worker = later(0.1, churn)
    seen = []
    for event in watch.Watch().stream(
        kube.core.list_namespaced_pod,
        ns,
        resource_version=listed.metadata.resource_version,
        timeout_seconds=2,
    ):
        pod = event["object"]
        seen.append(
            (event["type"], pod.metadata.name, pod.status.phase, int(pod.metadata.resource_version))
        )
        if event["type"] == "DELETED":
            break
    worker.join()
    assert [(t, n, p) for t, n, p, _rv in seen] == [
        ("ADDED", "p", "Pending"),
        ("MODIFIED", "p", "Running"),
        ("DELETED", "p", "Running"),
    ]
    versions = [rv for *_rest, rv in seen]
    assert versions == sorted(versions) and len(set(versions)) == 3
    assert versions[0] > int(listed.metadata.resource_version)


def test_a_watch_without_a_version_starts_with_the_current_objects(kube: Kube) -> None:
    ns = namespace(kube, "w")
    pause_pod(kube, ns, "a", {"app": "x"})
    pause_pod(kube, ns, "b", {"app": "y"})
    events = list(
        watch.Watch().stream(
            kube.core.list_namespaced_pod, ns, label_selector="app=x", timeout_seconds=1
        )
    )
    assert [(e["type"], e["object"].metadata.name) for e in events] == [("ADDED", "a")]


def test_the_stream_ends_after_timeout_seconds(kube: Kube) -> None:
    ns = namespace(kube, "w")
    started = time.monotonic()
    assert (
        list(watch.Watch().stream(kube.core.list_namespaced_service, ns, timeout_seconds=1)) == []
    )
    assert 0.9 <= time.monotonic() - started < 3


def test_events_are_newline_delimited_json_with_resource_versions(kube: Kube) -> None:
    ns = namespace(kube, "w")
    listed = kube.core.list_namespaced_pod(ns)
    pause_pod(kube, ns, "p")
    raw = kube.core.list_namespaced_pod(
        ns,
        watch=True,
        resource_version=listed.metadata.resource_version,
        timeout_seconds=1,
        _preload_content=False,
    )
    assert raw.status == 200 and raw.headers["Content-Type"] == "application/json"
    lines = raw.data.decode().splitlines()
    first = json.loads(lines[0])
    assert first["type"] == "ADDED"
    assert first["object"]["kind"] == "Pod" and first["object"]["apiVersion"] == "v1"
    assert int(first["object"]["metadata"]["resourceVersion"]) > int(
        listed.metadata.resource_version
    )


def test_a_field_selector_watches_one_object(kube: Kube) -> None:
    ns = namespace(kube, "w")
    pause_pod(kube, ns, "a")
    pause_pod(kube, ns, "b")
    events = list(
        watch.Watch().stream(
            kube.core.list_namespaced_pod, ns, field_selector="metadata.name=b", timeout_seconds=1
        )
    )
    assert [e["object"].metadata.name for e in events] == ["b"]


def test_endpoints_and_slices_are_watched_as_pods_come_and_go(kube: Kube) -> None:
    ns = namespace(kube, "w")
    service(kube, ns, "svc", {"app": "srv"})
    listed = kube.core.list_namespaced_endpoints(ns)
    sctp_server(kube, ns, "srv", labels={"app": "srv"})
    kube.core.read_namespaced_pod("srv", ns)  # the pod starts
    kube.core.delete_namespaced_pod("srv", ns)
    events = list(
        watch.Watch().stream(
            kube.core.list_namespaced_endpoints,
            ns,
            resource_version=listed.metadata.resource_version,
            timeout_seconds=1,
        )
    )
    subsets = [
        (e["type"], [a.ip for s in e["object"].subsets or [] for a in s.addresses or []])
        for e in events
    ]
    assert subsets[-1] == ("MODIFIED", [])
    assert any(kind == "MODIFIED" and ips for kind, ips in subsets)
    slices = list(
        watch.Watch().stream(kube.discovery.list_namespaced_endpoint_slice, ns, timeout_seconds=1)
    )
    assert [e["type"] for e in slices] == ["ADDED"]


def test_a_load_balancer_ip_arrives_as_a_modified_event(make_kube: Any) -> None:
    kube = make_kube(load_balancer=True)
    ns = namespace(kube, "w")
    listed = kube.core.list_namespaced_service(ns)
    service(kube, ns, "lb", {"app": "x"}, svc_type="LoadBalancer")
    for event in watch.Watch().stream(
        kube.core.list_namespaced_service,
        ns,
        resource_version=listed.metadata.resource_version,
        timeout_seconds=3,
    ):
        ingress = event["object"].status.load_balancer.ingress
        if event["type"] == "MODIFIED" and ingress:
            assert ingress[0].ip.startswith("172.18.255.")
            break
    else:
        pytest.fail("no MODIFIED event carried the load balancer IP")


def test_a_version_older_than_the_history_is_gone(kube: Kube) -> None:
    ns = namespace(kube, "w")
    cluster = kube.state
    for i in range(cluster.events.maxlen + 5):
        with cluster.lock:
            cluster.create_namespace({"metadata": {"name": f"churn-{i}"}})
    with pytest.raises(ApiException) as caught:
        list(
            watch.Watch().stream(
                kube.core.list_namespaced_pod, ns, resource_version="1001", timeout_seconds=1
            )
        )
    assert caught.value.status == 410
    assert caught.value.reason.startswith("Expired: too old resource version: 1001 (")


def test_a_list_at_a_future_version_times_out_as_the_watch_cache_does(kube: Kube) -> None:
    current = int(kube.core.list_namespace().metadata.resource_version)
    with pytest.raises(ApiException) as caught:
        kube.core.list_namespace(resource_version=str(current + 1000))
    assert caught.value.body is not None, "an API error without a body"
    body = json.loads(caught.value.body)
    assert caught.value.status == 504 and body["reason"] == "Timeout"
    assert (
        body["message"]
        == f"Timeout: Too large resource version: {current + 1000}, current: {current}"
    )
    assert body["details"]["causes"] == [
        {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
    ]


def test_list_resource_versions_grow_with_every_change(kube: Kube) -> None:
    before = int(kube.core.list_namespace().metadata.resource_version)
    namespace(kube, "w")
    after = int(kube.core.list_namespace(resource_version=str(before)).metadata.resource_version)
    assert after > before
