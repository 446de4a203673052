"""The status of a pod as its kubelet reports it: phase, container states, conditions."""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any

from lab import families
from lab.store import timestamp

if TYPE_CHECKING:
    from lab.families import Profiled
    from lab.nodes import Node
    from lab.runtime import PodRuntime


def pod_status(
    cluster: Profiled, spec: dict[str, Any], rt: PodRuntime, node: Node | None
) -> dict[str, Any]:
    """The status the kubelet reports for a pod (node None: bound to a node that does not exist)."""
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
