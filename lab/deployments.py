"""apps/v1 Deployments: validated as upstream does, their pods made at once by the "controller".

A real Deployment makes a ReplicaSet, which makes the pods; the lab makes the pods directly
(named `NAME-HASH-XXXXX`, labelled `pod-template-hash`, owned by the ReplicaSet `NAME-HASH`
as a real one would be) whenever the Deployment is created or its template or replica count
changes, and deletes them with the Deployment unless `propagationPolicy` is `Orphan`. The
ReplicaSets themselves are derived, read-only, from the templates the Deployment has had
(one per template hash, with its revision), so `kubectl rollout history` and `undo` work.
The status (replicas, readyReplicas, conditions Available and Progressing) is computed from
the pods, so `kubectl rollout status` and `kubectl wait` see what they expect.
"""

from __future__ import annotations

import copy
import json
import zlib
from typing import TYPE_CHECKING, Any

from lab import defaulting, managedfields, validation
from lab.errors import ApiError, already_exists, invalid, not_found
from lab.store import timestamp

if TYPE_CHECKING:
    from lab.cluster import Cluster

_SAFE = "bcdfghjklmnpqrstvwxz2456789"


def _semantic(value: Any) -> Any:
    """What a template means, not how it was spelled: nulls and empty maps and lists dropped,
    as upstream's hash of the decoded Go struct does not see them (a template kubectl sends
    back from a ReplicaSet, `metadata.creationTimestamp: null` and all, is the same one)."""
    if isinstance(value, dict):
        inner = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in inner.items() if v is not None and v != {} and v != []}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def template_hash(template: dict[str, Any]) -> str:
    value = zlib.crc32(json.dumps(_semantic(template), sort_keys=True).encode())
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


defaults = defaulting.deployment_spec


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


def _history(cluster: Cluster, key: tuple[str, str]) -> dict[str, dict[str, Any]]:
    """The Deployment's ReplicaSets by template hash: the template, its revision, when it was
    first made. Kept per Deployment UID, so a Deployment made again starts afresh."""
    obj = cluster.objects["deployments"][key]
    every: dict[tuple[str, str], dict[str, Any]] = cluster.addons.setdefault("replicasets", {})
    kept = every.get(key)
    if kept is None or kept["uid"] != obj["metadata"]["uid"]:
        kept = every[key] = {"uid": obj["metadata"]["uid"], "sets": {}}
    sets: dict[str, dict[str, Any]] = kept["sets"]
    return sets


def _remember(cluster: Cluster, key: tuple[str, str], digest: str) -> None:
    """The ReplicaSet of the current template takes the Deployment's revision (a rollback
    makes an old one current again, at a new revision); beyond `revisionHistoryLimit` the
    oldest old ones go, as the deployment controller's cleanup does."""
    obj = cluster.objects["deployments"][key]
    spec = obj["spec"]
    sets = _history(cluster, key)
    revision = int((obj["metadata"].get("annotations") or {}).get(REVISION, "1"))
    entry = sets.setdefault(digest, {"created": timestamp(cluster.clock())})
    entry["revision"] = revision
    entry["template"] = copy.deepcopy(spec.get("template") or {})
    cause = (obj["metadata"].get("annotations") or {}).get(CHANGE_CAUSE)
    if cause is not None:
        entry["change_cause"] = cause
    old = sorted((e["revision"], d) for d, e in sets.items() if d != digest)
    limit = int(spec.get("revisionHistoryLimit", 10))
    for _revision, gone in old[: max(0, len(old) - limit)]:
        del sets[gone]


def forget(cluster: Cluster, key: tuple[str, str]) -> None:
    """The Deployment was deleted: its ReplicaSets went with it."""
    cluster.addons.get("replicasets", {}).pop(key, None)


def replicasets(cluster: Cluster, namespace: str | None = None) -> list[dict[str, Any]]:
    """The ReplicaSets of the Deployments (read-only, derived): the current one with the
    Deployment's replica count, the old ones scaled to 0, as `kubectl get rs`, `describe
    deployment` and `rollout history|undo` read them."""
    every: dict[tuple[str, str], dict[str, Any]] = cluster.addons.setdefault("replicasets", {})
    out = []
    for key in sorted(every):
        if namespace is not None and key[0] != namespace:
            continue
        sets = _history(cluster, key)
        for digest, entry in sorted(sets.items(), key=lambda item: item[1]["revision"]):
            out.append(_replicaset(cluster, key, digest, entry))
    return out


def get_replicaset(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    for rs in replicasets(cluster, namespace):
        if rs["metadata"]["name"] == name:
            return {"kind": "ReplicaSet", "apiVersion": "apps/v1", **rs}
    raise not_found("replicasets", name, "apps")


def _surge(spec: dict[str, Any], replicas: int) -> int:
    strategy = spec.get("strategy") or {}
    if strategy.get("type") == "Recreate":
        return 0
    surge = (strategy.get("rollingUpdate") or {}).get("maxSurge", "25%")
    if isinstance(surge, str) and surge.endswith("%"):
        return -(-replicas * int(surge[:-1]) // 100)  # rounded up, as upstream
    return int(surge)


def _replicaset(
    cluster: Cluster, key: tuple[str, str], digest: str, entry: dict[str, Any]
) -> dict[str, Any]:
    namespace, name = key
    dep = cluster.objects["deployments"][key]
    spec = dep["spec"]
    current = template_hash(spec.get("template") or {}) == digest
    wanted = int(spec.get("replicas", 1)) if current else 0
    template = copy.deepcopy(entry["template"])
    template.setdefault("metadata", {}).setdefault("labels", {})["pod-template-hash"] = digest
    selector = copy.deepcopy(spec.get("selector") or {})
    selector.setdefault("matchLabels", {})["pod-template-hash"] = digest
    pods = [
        p
        for p in owned_pods(cluster, key)
        if (cluster.objects["pods"][p]["metadata"].get("labels") or {}).get("pod-template-hash")
        == digest
    ]
    ready = sum(1 for p in pods if cluster.pod_is_ready(p))
    annotations = {
        "deployment.kubernetes.io/desired-replicas": str(int(spec.get("replicas", 1))),
        "deployment.kubernetes.io/max-replicas": str(
            int(spec.get("replicas", 1)) + _surge(spec, int(spec.get("replicas", 1)))
        ),
        REVISION: str(entry["revision"]),
    }
    if "change_cause" in entry:
        annotations[CHANGE_CAUSE] = entry["change_cause"]
    status: dict[str, Any] = {"replicas": len(pods), "observedGeneration": 1}
    if pods:
        status["fullyLabeledReplicas"] = len(pods)
    if ready:
        status.update(readyReplicas=ready, availableReplicas=ready)
    return {
        "metadata": {
            "name": f"{name}-{digest}",
            "namespace": namespace,
            "uid": dep["metadata"]["uid"][:-10] + digest,
            "resourceVersion": str(cluster.resource_version),
            "generation": 1,
            "creationTimestamp": entry["created"],
            "labels": dict(template["metadata"]["labels"]),
            "annotations": annotations,
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": name,
                    "uid": dep["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"replicas": wanted, "selector": selector, "template": template},
        "status": status,
    }


def reconcile(cluster: Cluster, key: tuple[str, str]) -> None:
    """Make the Deployment's pods match its template and replica count."""
    obj = cluster.objects["deployments"].get(key)
    if obj is None:
        return
    namespace, name = key
    spec = obj["spec"]
    template = spec.get("template") or {}
    digest = template_hash(template)
    _remember(cluster, key, digest)
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
        # the ReplicaSet controller's create: its Update entry, as kube-controller-manager
        body["metadata"]["managedFields"] = managedfields.record_update(
            "Pod",
            None,
            defaulting.defaulted("Pod", {"apiVersion": "v1", **body}),
            "kube-controller-manager",
            timestamp(cluster.clock()),
        )
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


REVISION = "deployment.kubernetes.io/revision"
CHANGE_CAUSE = "kubernetes.io/change-cause"


def controller_entry(cluster: Cluster, key: tuple[str, str], obj: dict[str, Any]) -> Any:
    """The deployment controller's managedFields entry (kube-controller-manager, `subresource:
    status`): its status, and the revision annotation, which it writes with the status
    (UpdateStatus in sync.go's getNewReplicaSet). Its time: its last change, as far as the lab
    tells (the Deployment's creation, or the last start of one of its pods)."""
    annotations = dict(obj["metadata"].get("annotations") or {})
    before: dict[str, Any] = {"status": {}}
    if set(annotations) - {REVISION}:
        before["metadata"] = {
            "annotations": {k: v for k, v in annotations.items() if k != REVISION}
        }
    after: dict[str, Any] = {"status": obj.get("status") or {}}
    if annotations:
        after["metadata"] = {"annotations": annotations}
    times = [obj["metadata"]["creationTimestamp"]]
    for pod_key in owned_pods(cluster, key):
        rt = cluster.pod_rt.get(pod_key)
        if rt is not None and rt.started:
            times.append(timestamp(rt.start_at))
    return managedfields.controller_entry(
        "Deployment",
        before,
        after,
        "kube-controller-manager",
        max(times),
        subresource="status",
        api_version="apps/v1",
    )
