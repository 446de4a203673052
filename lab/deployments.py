"""apps/v1 Deployments: validated as upstream does, their pods made at once by the "controller".

A real Deployment makes a ReplicaSet, which makes the pods; the lab makes the pods directly
(named `NAME-HASH-XXXXX`, labelled `pod-template-hash`, owned by the ReplicaSet `NAME-HASH`
as a real one would be) whenever the Deployment is created or its template or replica count
changes, and deletes them with the Deployment unless `propagationPolicy` is `Orphan`.
The status (replicas, readyReplicas, conditions Available and Progressing) is computed from
the pods, so `kubectl rollout status` and `kubectl wait` see what they expect.
"""

from __future__ import annotations

import copy
import json
import zlib
from typing import TYPE_CHECKING, Any

from lab import validation
from lab.errors import ApiError, already_exists, invalid

if TYPE_CHECKING:
    from lab.cluster import Cluster

_SAFE = "bcdfghjklmnpqrstvwxz2456789"


def template_hash(template: dict[str, Any]) -> str:
    value = zlib.crc32(json.dumps(template, sort_keys=True).encode())
    out = ""
    for _ in range(10):
        out += _SAFE[value % len(_SAFE)]
        value //= len(_SAFE)
    return out


def _go_map(labels: dict[str, str]) -> str:
    inner = ", ".join(f'"{k}":"{v}"' for k, v in sorted(labels.items()))
    return "map[string]string{" + inner + "}"


def validate(cluster: Cluster, meta: dict[str, Any], spec: dict[str, Any]) -> list[Any]:
    """ValidateDeployment's checks that matter for a manifest, in upstream's words."""
    errs: list[Any] = []
    name = meta.get("name") or ""
    if not name:
        errs.append(validation.required("metadata.name", "name or generateName is required"))
    else:
        errs += [
            validation.invalid("metadata.name", name, m)
            for m in validation.is_dns1123_subdomain(name)
        ]
    errs += validation.validate_labels(meta.get("labels"), "metadata.labels")
    replicas = spec.get("replicas", 1)
    if not isinstance(replicas, int) or replicas < 0:
        errs.append(
            validation.invalid("spec.replicas", replicas, "must be greater than or equal to 0")
        )
    selector = spec.get("selector")
    template = spec.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    if not isinstance(selector, dict) or not (
        selector.get("matchLabels") or selector.get("matchExpressions")
    ):
        errs.append(validation.required("spec.selector"))
        errs.append(
            validation.invalid("spec.selector", "null", "empty selector is invalid for deployment")
        )
    else:
        wanted = selector.get("matchLabels") or {}
        if any(labels.get(k) != v for k, v in wanted.items()):
            errs.append(
                (
                    "spec.template.metadata.labels",
                    validation.INVALID,
                    (
                        f"Invalid value: {_go_map(labels)}: `selector` does not match template "
                        "`labels`"
                    ),
                )
            )
    pod_spec = copy.deepcopy(template.get("spec") or {})
    validation.default_pod(pod_spec)
    pod_spec.setdefault("restartPolicy", "Always")
    if pod_spec.get("restartPolicy") != "Always":
        errs.append(
            validation.not_supported(
                "spec.template.spec.restartPolicy", pod_spec.get("restartPolicy"), ["Always"]
            )
        )
    pod_meta = {
        "name": "template",
        "namespace": meta.get("namespace") or "default",
        "labels": labels,
    }
    for field, reason, text in validation.validate_pod(
        pod_meta, pod_spec, sctp=bool(cluster.profile["sctp_feature_gate"])
    ):
        if field.startswith("metadata.name") or field == "spec.restartPolicy":
            continue
        if field.startswith("spec."):
            field = "spec.template.spec." + field[len("spec.") :]
        elif field.startswith("metadata."):
            field = "spec.template.metadata." + field[len("metadata.") :]
        errs.append((field, reason, text))
    return errs


def create(
    cluster: Cluster, namespace: str, name: str, body: dict[str, Any], spec: dict[str, Any]
) -> dict[str, Any]:
    meta_in = {**(body.get("metadata") or {}), "name": name, "namespace": namespace}
    causes = validate(cluster, meta_in, spec)
    if causes:
        raise invalid("Deployment", name, causes, group="apps")
    if (namespace, name) in cluster.objects["deployments"]:
        raise already_exists("deployments", name, "apps")
    defaults(spec)
    obj = {"metadata": cluster.new_metadata(body, namespace, name), "spec": spec}
    obj["metadata"]["generation"] = 1
    obj["metadata"].setdefault("annotations", {})["deployment.kubernetes.io/revision"] = "1"
    cluster.objects["deployments"][(namespace, name)] = obj
    return obj


def defaults(spec: dict[str, Any]) -> None:
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    spec.setdefault(
        "strategy",
        {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
    )
    template = spec.setdefault("template", {})
    template.setdefault("metadata", {})
    pod_spec = template.setdefault("spec", {})
    validation.default_pod(pod_spec)
    pod_spec.setdefault("restartPolicy", "Always")
    pod_spec.setdefault("terminationGracePeriodSeconds", 30)
    pod_spec.setdefault("schedulerName", "default-scheduler")
    pod_spec.setdefault("securityContext", {})


def _failures(cluster: Cluster) -> dict[tuple[str, str], str]:
    """Why the last pod of each Deployment could not be made (its ReplicaFailure condition)."""
    found: dict[tuple[str, str], str] = cluster.addons.setdefault("deployment_failures", {})
    return found


def owned_pods(cluster: Cluster, key: tuple[str, str]) -> list[tuple[str, str]]:
    namespace, name = key
    out = []
    for pod_key, pod in cluster.objects["pods"].items():
        if pod_key[0] != namespace or pod_key in cluster.ghost_pods:
            continue
        for ref in pod["metadata"].get("ownerReferences") or []:
            if ref.get("kind") == "ReplicaSet" and ref.get("name", "").rsplit("-", 1)[0] == name:
                out.append(pod_key)
    return out


def reconcile(cluster: Cluster, key: tuple[str, str]) -> None:
    """Make the Deployment's pods match its template and replica count."""
    obj = cluster.objects["deployments"].get(key)
    if obj is None:
        return
    namespace, name = key
    spec = obj["spec"]
    template = spec.get("template") or {}
    digest = template_hash(template)
    rs_name = f"{name}-{digest}"
    current: list[tuple[str, str]] = []
    stale: list[tuple[str, str]] = []
    for pod_key in owned_pods(cluster, key):
        labels = cluster.objects["pods"][pod_key]["metadata"].get("labels") or {}
        (current if labels.get("pod-template-hash") == digest else stale).append(pod_key)
    for pod_key in stale + current[int(spec.get("replicas", 1)) :]:
        cluster.delete("pods", *pod_key)
    failures = _failures(cluster)
    for _ in range(max(0, int(spec.get("replicas", 1)) - len(current))):
        labels = {**((template.get("metadata") or {}).get("labels") or {})}
        labels["pod-template-hash"] = digest
        body = {
            "metadata": {
                "generateName": f"{rs_name}-",
                "labels": labels,
                "annotations": dict((template.get("metadata") or {}).get("annotations") or {}),
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "name": rs_name,
                        "uid": obj["metadata"]["uid"][:-10] + digest,
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": copy.deepcopy(template.get("spec") or {}),
        }
        try:
            cluster.create("pods", namespace, body)
            failures.pop(key, None)
        except ApiError as exc:  # the ReplicaSet controller's FailedCreate
            failures[key] = exc.message
            break


def status(cluster: Cluster, key: tuple[str, str]) -> dict[str, Any]:
    obj = cluster.objects["deployments"][key]
    spec = obj["spec"]
    pods = owned_pods(cluster, key)
    ready = sum(1 for p in pods if cluster.pod_is_ready(p))
    wanted = int(spec.get("replicas", 1))
    stamp = obj["metadata"]["creationTimestamp"]
    out: dict[str, Any] = {"observedGeneration": obj["metadata"].get("generation", 1)}
    if pods:
        out.update(replicas=len(pods), updatedReplicas=len(pods))
    if ready:
        out.update(readyReplicas=ready, availableReplicas=ready)
    if len(pods) > ready:
        out["unavailableReplicas"] = len(pods) - ready
    available = ready >= wanted
    conditions = [
        {
            "type": "Available",
            "status": "True" if available else "False",
            "lastUpdateTime": stamp,
            "lastTransitionTime": stamp,
            "reason": "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
            "message": "Deployment has minimum availability."
            if available
            else "Deployment does not have minimum availability.",
        },
        {
            "type": "Progressing",
            "status": "True",
            "lastUpdateTime": stamp,
            "lastTransitionTime": stamp,
            "reason": "NewReplicaSetAvailable" if available else "ReplicaSetUpdated",
            "message": f'ReplicaSet "{obj["metadata"]["name"]}-'
            f'{template_hash(spec.get("template") or {})}" '
            + ("has successfully progressed." if available else "is progressing."),
        },
    ]
    failure = _failures(cluster).get(key)
    if failure:
        conditions.append(
            {
                "type": "ReplicaFailure",
                "status": "True",
                "lastUpdateTime": stamp,
                "lastTransitionTime": stamp,
                "reason": "FailedCreate",
                "message": failure,
            }
        )
    out["conditions"] = conditions
    return out
