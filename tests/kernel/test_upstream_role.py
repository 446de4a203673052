"""deploy/rbac/upstream/role.yaml grants what upstream's e2e.test calls for its SCTP specs.

The calls were read in k8s.io/kubernetes at v1.34.4, v1.35.4, v1.36.3 and v1.37.2 (the same in
all four; file and function named per row). The lab cannot run upstream's suite yet (its node
list refuses the framework's `spec.unschedulable` field selector), so this is checked against
the source, not a run; the battery's own role is checked by running it
(tests/kernel/test_rbac_least_privilege.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

ROLE = Path(__file__).resolve().parents[2] / "deploy" / "rbac" / "upstream" / "role.yaml"

# (verb, API group, resource, where upstream calls it)
CALLS = [
    ("list", "", "nodes", "e2enode.WaitForAllNodesSchedulable (test/e2e/e2e.go setupSuite)"),
    ("list", "", "replicationcontrollers", "e2epod.WaitForAlmostAllPodsReady, kube-system"),
    ("list", "apps", "replicasets", "e2epod.WaitForAlmostAllPodsReady, kube-system"),
    ("list", "", "pods", "e2epod.WaitForAlmostAllPodsReady, kube-system"),
    ("list", "apps", "daemonsets", "waitForDaemonSets (test/e2e/e2e.go)"),
    ("get", "", "services", "getDefaultClusterIPFamily: default/kubernetes"),
    ("create", "", "namespaces", "Framework.CreateNamespace (with Pod Security labels)"),
    ("delete", "", "namespaces", "Framework AfterEach"),
    ("get", "", "namespaces", "netpol kubemanager: the namespaces' labels"),
    ("update", "", "namespaces", "netpol kubemanager: namespace labels for the policies"),
    ("list", "", "serviceaccounts", "WaitForDefaultServiceAccountInNamespace"),
    ("watch", "", "serviceaccounts", "WaitForDefaultServiceAccountInNamespace"),
    ("list", "", "configmaps", "WaitForKubeRootCAInNamespace"),
    ("watch", "", "configmaps", "WaitForKubeRootCAInNamespace"),
    ("create", "", "pods", "netserver, client, hostexec and porter pods"),
    ("delete", "", "pods", "the SCTP service spec deletes its endpoint pod"),
    ("get", "", "pods", "e2epod waits"),
    ("watch", "", "pods", "e2epod waits"),
    ("create", "", "pods/exec", "e2epod.ExecWithOptions (SPDY POST, websocket upgrade)"),
    ("get", "", "pods/exec", "e2epod.ExecWithOptions (websocket GET)"),
    ("create", "", "services", "e2eservice jig, NetworkingTestConfig NodePort Services"),
    ("delete", "", "services", "the SCTP service spec's cleanup"),
    ("list", "discovery.k8s.io", "endpointslices", "e2eendpointslice.WaitForEndpointCount"),
    ("create", "networking.k8s.io", "networkpolicies", "netpol specs"),
    ("update", "networking.k8s.io", "networkpolicies", "netpol specs"),
    ("delete", "networking.k8s.io", "networkpolicies", "netpol cleanup"),
    ("list", "", "events", "dump of a failed spec's namespace"),
]


def _rules() -> list[dict[str, Any]]:
    return yaml.safe_load(ROLE.read_text())["rules"]


def _grants(verb: str, group: str, resource: str) -> bool:
    return any(
        group in rule.get("apiGroups", [])
        and resource in rule.get("resources", [])
        and verb in rule.get("verbs", [])
        for rule in _rules()
    )


@pytest.mark.parametrize(("verb", "group", "resource", "where"), CALLS)
def test_the_role_grants_what_upstreams_suite_and_specs_call(verb, group, resource, where):
    assert _grants(verb, group, resource), f"{verb} {group or 'core'}/{resource}: {where}"


def test_the_role_does_not_open_the_kubelet_or_secrets():
    for resource in ("nodes/proxy", "secrets", "pods/ephemeralcontainers", "nodes/status"):
        for verb in ("get", "create", "list", "update", "patch"):
            assert not _grants(verb, "", resource), f"{verb} {resource}"
    assert not any(
        "*" in rule.get("verbs", []) or "*" in rule.get("resources", []) for rule in _rules()
    )


def test_the_role_names_the_pod_security_levels_the_specs_need():
    text = ROLE.read_text()
    assert "`privileged` for Services, Networking and the\n# dual-stack spec" in text
    assert "`baseline` for the Netpol specs" in text
