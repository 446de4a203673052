"""Which nodes upstream's SCTP specs count: its e2enode.GetReadySchedulableNodes filter.

Upstream (test/e2e/framework/node/resource.go, the same at v1.34.4 … v1.37.2):

- `waitListSchedulableNodes` lists nodes with `spec.unschedulable=false`;
- `IsNodeSchedulable`: not unschedulable and `IsNodeReady` (condition Ready is True with no
  node-controller `node.kubernetes.io/unreachable` or `not-ready` taint, and
  NetworkUnavailable unset or False);
- `isNodeUntainted`: `toleratesTaintsWithNoScheduleNoExecuteEffects(taints, nil)`: with no
  tolerations at all, any NoSchedule or NoExecute taint excludes the node (a kind or kubeadm
  control plane's `node-role.kubernetes.io/control-plane:NoSchedule` does).

The suite counts these nodes once (`TestContext.CloudConfig.NumNodes`, test/e2e/e2e.go) and
`e2eskipper.SkipUnlessNodeCountIsAtLeast(2)` compares that count; NetworkingTestConfig puts
its endpoint pods on at most 10 of them (`GetBoundedReadySchedulableNodes`,
`maxNetProxyPodsCount`), and the basic service spec reads sctp.ko on at most 2.
"""

from __future__ import annotations

from typing import Any

NODE_CONTROLLER_TAINTS = ("node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready")
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
MAX_NET_PROXY_PODS = 10  # upstream's maxNetProxyPodsCount (framework/network/utils.go)
MODULE_CHECK_NODES = 2  # the basic service spec: GetBoundedReadySchedulableNodes(ctx, cs, 2)


def _condition(node: dict[str, Any], kind: str) -> str | None:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            return str(condition.get("status"))
    return None


def why_not_counted(node: dict[str, Any]) -> str | None:
    """None when upstream counts the node, else why it does not (one short clause)."""
    spec = node.get("spec") or {}
    if spec.get("unschedulable"):
        return "unschedulable (cordoned)"
    taints = [t for t in spec.get("taints") or [] if isinstance(t, dict)]
    ready = _condition(node, "Ready")
    if ready != "True":
        return f"not Ready (condition Ready is {ready or 'missing'})"
    controller = [t for t in taints if t.get("key") in NODE_CONTROLLER_TAINTS]
    if controller:
        return f"tainted by the node controller ({controller[0].get('key')})"
    if _condition(node, "NetworkUnavailable") == "True":
        return "NetworkUnavailable is True"
    blocking = [t for t in taints if t.get("effect") in BLOCKING_EFFECTS]
    if blocking:
        taint = blocking[0]
        value = f"={taint['value']}" if taint.get("value") else ""
        return f"taint {taint.get('key')}{value}:{taint.get('effect')}"
    return None


def ready_schedulable(nodes: list[dict[str, Any]]) -> tuple[list[str], dict[str, str]]:
    """(names upstream counts, in the API's order; {name: why not} for the others)."""
    counted: list[str] = []
    left_out: dict[str, str] = {}
    for node in nodes:
        name = str((node.get("metadata") or {}).get("name") or "")
        if not name:
            continue
        why = why_not_counted(node)
        if why is None:
            counted.append(name)
        else:
            left_out[name] = why
    return counted, left_out


def node_count_skip(counted: list[str], left_out: dict[str, str], spec: str) -> str | None:
    """Upstream's skip of a NetworkingTestConfig spec on fewer than 2 counted nodes, in its
    words ("Requires at least 2 nodes (not 1)"), then which nodes were left out and why."""
    if len(counted) >= 2:
        return None
    reason = (
        f"Requires at least 2 nodes (not {len(counted)}): upstream's {spec} skips through "
        "NetworkingTestConfig (e2eskipper.SkipUnlessNodeCountIsAtLeast(2) over ready, "
        "schedulable, untainted nodes)"
    )
    if left_out:
        reason += "; not counted: " + ", ".join(f"{n} ({why})" for n, why in left_out.items())
    return reason
