"""What upstream's e2e framework (e2e.test v1.36.3) asks of an API server before any SCTP spec
runs, which the lab did not answer (docs/lab-vs-e2e.md lists each with the real binary's
error line):

- the suite lists nodes with `fieldSelector=spec.unschedulable=false` (test/e2e/e2e.go:211,
  e2enode.CheckReadyForTests): the lab refused the field with a 400;
- every test namespace waits for the `kube-root-ca.crt` ConfigMap (framework.go,
  WaitForKubeRootCAInNamespace), which kube-controller-manager's root-ca-cert-publisher writes;
- client-go v0.36's informers list by streaming (WatchListClient, on by default since 1.35):
  `watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan` must end its initial
  events with a BOOKMARK annotated `k8s.io/initial-events-end: "true"`, or the wait above hangs
  until its timeout (120 s a namespace on the lab).
"""

from __future__ import annotations

import json
from typing import Any

from tests.lab.kube import namespace


def test_nodes_are_listed_by_spec_unschedulable_as_the_suite_does(kube: Any) -> None:
    every = {n.metadata.name for n in kube.core.list_node().items}
    schedulable = kube.core.list_node(
        field_selector="spec.unschedulable=false", resource_version="0"
    )
    assert {n.metadata.name for n in schedulable.items} == every and every
    assert kube.core.list_node(field_selector="spec.unschedulable=true").items == []
    assert {
        n.metadata.name
        for n in kube.core.list_node(field_selector="spec.unschedulable!=true").items
    } == every


def test_every_namespace_gets_kube_root_ca_crt_with_the_servers_ca(kube: Any) -> None:
    ns = namespace(kube, "nettest-1")
    found = kube.core.list_namespaced_config_map(
        ns, field_selector="metadata.name=kube-root-ca.crt"
    ).items
    assert len(found) == 1
    assert found[0].data["ca.crt"] == kube.lab.ca.cert_pem.decode()
    assert found[0].data["ca.crt"].startswith("-----BEGIN CERTIFICATE-----")


def test_a_streaming_list_ends_its_initial_events_with_the_bookmark_client_go_waits_for(
    kube: Any,
) -> None:
    ns = namespace(kube, "nettest-2")
    resp = kube.core.list_namespaced_config_map(
        ns,
        field_selector="metadata.name=kube-root-ca.crt",
        watch=True,
        send_initial_events=True,
        resource_version_match="NotOlderThan",
        allow_watch_bookmarks=True,
        timeout_seconds=1,
        _preload_content=False,
    )
    events = [json.loads(line) for line in resp.read().decode().splitlines() if line.strip()]
    assert [e["type"] for e in events[:2]] == ["ADDED", "BOOKMARK"]
    assert events[0]["object"]["metadata"]["name"] == "kube-root-ca.crt"
    bookmark = events[1]["object"]
    assert bookmark["kind"] == "ConfigMap"
    assert bookmark["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert int(bookmark["metadata"]["resourceVersion"]) >= int(
        events[0]["object"]["metadata"]["resourceVersion"]
    )
