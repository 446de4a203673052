"""The status of a pod as its kubelet reports it: phase, container states, conditions."""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any

from lab import families, managedfields
from lab.store import timestamp

if TYPE_CHECKING:
    from lab.families import Profiled
    from lab.nodes import Node
    from lab.runtime import PodRuntime


def _unschedulable(nodes: list[Node]) -> str:
    """The scheduler's FailedScheduling message when no node takes the pod (its wording)."""
    cordoned = sum(1 for n in nodes if n.cordoned)
    tainted: dict[str, int] = {}
    for n in nodes:
        if n.cordoned:
            continue
        taints = (
            (n.edited or {}).get("taints")
            if n.edited is not None
            else ([] if n.schedulable else [{"key": "node-role.kubernetes.io/control-plane"}])
        )
        for t in taints or []:
            text = "{" + f"{t.get('key')}: {t.get('value', '')}" + "}"
            tainted[text] = tainted.get(text, 0) + 1
            break
    parts = [f"{count} node(s) had untolerated taint {text}" for text, count in tainted.items()]
    if cordoned:
        parts.append(f"{cordoned} node(s) were unschedulable")
    total = len(nodes)
    return (
        f"0/{total} nodes are available: {', '.join(parts)}. preemption: 0/{total} nodes are "
        f"available: {total} Preemption is not helpful for scheduling."
    )


def pod_status(
    cluster: Profiled, spec: dict[str, Any], rt: PodRuntime, node: Node | None
) -> dict[str, Any]:
    """The status the kubelet reports for a pod (node None: bound to a node that does not exist)."""
    if node is None and not spec.get("nodeName"):
        return {
            "phase": "Pending",
            "qosClass": "BestEffort",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": _unschedulable(getattr(cluster, "nodes", [])),
                    "lastTransitionTime": timestamp(rt.created),
                }
            ],
        }
    if node is None:
        # Bound by nodeName to a node that does not exist: no kubelet ever reports on it.
        return {"phase": "Pending", "qosClass": "BestEffort"}
    created = timestamp(rt.created)
    status: dict[str, Any] = {
        "hostIP": families.present(cluster, node.host_ip, families.families(cluster)[0]),
        "hostIPs": [{"ip": ip} for ip in families.addresses(cluster, node.host_ip)],
        "qosClass": "BestEffort",
        "startTime": created,
    }
    containers = spec.get("containers") or []

    def cstatus(
        c: dict[str, Any],
        ready: bool,
        state: dict[str, Any],
        restarts: int = 0,
        last: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        out = {
            "name": c["name"],
            "image": c.get("image", ""),
            "imageID": c.get("image", "") + "@sha256:" + "0" * 64,
            "ready": ready,
            "restartCount": restarts,
            "started": "running" in state,
            "state": state,
            "lastState": last or {},
        }
        if "waiting" not in state:
            out["containerID"] = (
                "containerd://"
                + zlib.crc32((rt.uid + c["name"]).encode()).to_bytes(4, "big").hex() * 16
            )
        return out

    conditions = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": created}]
    if not rt.started:
        status["phase"] = "Pending"
        status["containerStatuses"] = [
            cstatus(c, False, {"waiting": {"reason": "ContainerCreating"}}) for c in containers
        ]
        conditions += [
            {
                "type": t,
                "status": "False",
                "lastTransitionTime": created,
                "reason": "ContainersNotReady",
            }
            for t in ("Ready", "ContainersReady")
        ]
        status["conditions"] = conditions
        return status
    started = timestamp(rt.start_at)
    if spec.get("hostNetwork"):
        status["podIP"] = status["hostIP"]
        status["podIPs"] = list(status["hostIPs"])
    else:
        status["podIP"] = families.present(cluster, rt.ip, families.families(cluster)[0])
        status["podIPs"] = [{"ip": ip} for ip in families.addresses(cluster, rt.ip)]
    conditions.append({"type": "Initialized", "status": "True", "lastTransitionTime": created})
    if rt.exit_code is None:
        status["phase"] = "Running"
        status["containerStatuses"] = [
            cstatus(c, True, {"running": {"startedAt": started}}) for c in containers
        ]
        ready = "True"
    else:
        finished = timestamp(rt.finished_at or rt.start_at)
        terminated = {
            "terminated": {
                "exitCode": rt.exit_code,
                "reason": "Completed" if rt.exit_code == 0 else "Error",
                "startedAt": started,
                "finishedAt": finished,
                "containerID": "containerd://" + "0" * 64,
            }
        }
        policy = spec.get("restartPolicy", "Always")
        if policy == "Never" or (policy == "OnFailure" and rt.exit_code == 0):
            status["phase"] = "Succeeded" if rt.exit_code == 0 else "Failed"
            status["containerStatuses"] = [cstatus(c, False, terminated) for c in containers]
        else:
            # The kubelet restarts it; what callers see is a crash-looping Running pod.
            status["phase"] = "Running"
            status["containerStatuses"] = [
                cstatus(
                    c,
                    False,
                    {
                        "waiting": {
                            "reason": "CrashLoopBackOff",
                            "message": "back-off 10s restarting failed container",
                        }
                    },
                    restarts=1,
                    last=terminated,
                )
                for c in containers
            ]
        ready = "False"
    conditions += [
        {"type": t, "status": ready, "lastTransitionTime": started}
        for t in ("ContainersReady", "Ready")
    ]
    status["conditions"] = conditions
    return status


def kubelet_entry(
    status: dict[str, Any], rt: PodRuntime, node: Node | None
) -> dict[str, Any] | None:
    """The managedFields entry of the kubelet's status writes (`subresource: status`): the
    fields it changed from what the apiserver's pod strategy set at creation (phase Pending,
    qosClass) and the scheduler's binding (condition PodScheduled). None: no kubelet runs it."""
    if node is None:
        return None
    created: dict[str, Any] = {"phase": "Pending"}
    if "qosClass" in status:
        created["qosClass"] = status["qosClass"]
    scheduled = [c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"]
    if scheduled:
        created["conditions"] = scheduled
    last = (rt.finished_at or rt.start_at) if rt.started else rt.created
    return managedfields.controller_entry(
        "Pod",
        {"status": created},
        {"status": status},
        "kubelet",
        timestamp(last),
        subresource="status",
        api_version="v1",
    )
