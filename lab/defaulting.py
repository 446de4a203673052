"""The defaulting funcs a request's body goes through as the apiserver decodes it.

Upstream decodes a create's or an update's body WITH defaulting (pkg/apis/core/v1/defaults.go:
SetDefaults_Service, SetDefaults_Pod, SetDefaults_PodSpec, SetDefaults_Container;
pkg/apis/apps/v1/defaults.go: SetDefaults_Deployment; pkg/apis/networking/v1/defaults.go),
then runs the field manager (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/create.go,
update.go, patch.go), then admission and the registry. So the request's manager owns what
defaulting filled in (a Service's `type`, `sessionAffinity`, `internalTrafficPolicy`, its
ports' `protocol` and `targetPort`; a pod's `dnsPolicy`, `restartPolicy`, `schedulerName`,
its containers' `imagePullPolicy` and `terminationMessagePath`...), and not what came later:
what admission sets (a pod's `serviceAccountName`), what the registry allocates (a Service's
`clusterIP`, `clusterIPs`, `ipFamilies`, `ipFamilyPolicy`, `nodePort`s: the Service REST
storage's BeginCreate), what the strategy sets (`uid`, `generation`, the status), what the
scheduler binds (`nodeName`).

The lab's creates (lab/runtime.py, lab/deployments.py, lab/store.py) fill in the same values
(a Deployment's are `deployment_spec`) and the allocations besides; `defaulted` is what lab/server.py hands the field manager.
"""

from __future__ import annotations

import copy
from typing import Any

from lab import validation
from lab.store import version_tuple


def pod_spec(spec: dict[str, Any], template: bool = False) -> None:
    """SetDefaults_PodSpec and SetDefaults_Container (and, for a pod, not its template,
    SetDefaults_Pod's enableServiceLinks)."""
    validation.default_pod(spec)
    spec.setdefault("securityContext", {})
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("schedulerName", "default-scheduler")
    if not template:
        spec.setdefault("enableServiceLinks", True)


def deployment_spec(spec: dict[str, Any]) -> None:
    """SetDefaults_Deployment (apps/v1), and SetDefaults_PodSpec of its template."""
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    spec.setdefault(
        "strategy",
        {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
    )
    template = spec.setdefault("template", {})
    template.setdefault("metadata", {})
    pod_spec(template.setdefault("spec", {}), template=True)
    template["spec"].setdefault("restartPolicy", "Always")


def service_spec(spec: dict[str, Any]) -> None:
    """SetDefaults_Service (not ipFamilies/ipFamilyPolicy: the registry's allocator sets them)."""
    validation.default_service(spec)
    if spec.get("type") == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)


def network_policy_spec(spec: dict[str, Any]) -> None:
    """SetDefaults_NetworkPolicyPort and SetDefaults_NetworkPolicy (policyTypes from the rules);
    podSelector is a struct, never absent once decoded."""
    spec.setdefault("podSelector", {})
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or []:
            if isinstance(rule, dict):
                for port in rule.get("ports") or []:
                    if isinstance(port, dict):
                        port.setdefault("protocol", "TCP")
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress"] + (["Egress"] if spec.get("egress") else [])


def defaulted(kind: str, obj: dict[str, Any], kubernetes_version: str = "") -> dict[str, Any]:
    """A copy of OBJ (a request's body, or a patch's result) as upstream decodes it."""
    out = copy.deepcopy(obj)
    found = out.get("spec")
    spec: dict[str, Any] = found if isinstance(found, dict) else {}
    if kind in ("Pod", "Service", "Deployment", "NetworkPolicy") and spec is not found:
        return out  # refused by validation anyway
    if kind == "Pod":
        pod_spec(spec)
    elif kind == "Service":
        service_spec(spec)
    elif kind == "Deployment":
        deployment_spec(spec)
    elif kind == "NetworkPolicy":
        network_policy_spec(spec)
    elif kind == "Namespace":
        # SetDefaults_Namespace (1.21 on): the name label
        meta = out.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        recent = not kubernetes_version or version_tuple(kubernetes_version) >= (1, 21)
        if isinstance(meta, dict) and name and recent:
            labels = meta.get("labels")
            meta["labels"] = {
                **(labels if isinstance(labels, dict) else {}),
                "kubernetes.io/metadata.name": name,
            }
    return out
