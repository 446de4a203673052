"""The demonstrated proxier (contract: "A demonstrated proxier").

A kube-proxy mode is credited for a run only when the Service under test (pod-to-service's
SCTP ClusterIP) has its rules in that mode's tables on the node that carried the connection
(an iptables nat `KUBE-SERVICES` jump with `-p sctp` to a `KUBE-SVC` chain, an SCTP IPVS
virtual server, an element of nftables' `kube-proxy` table), and no other dataplane replaces
kube-proxy for Services (kernel/cni.py reads Cilium's kube-proxy replacement, Calico's
bpfEnabled, Antrea's proxyAll, OVN-Kubernetes, kube-router's service proxy, GKE Dataplane
V2). Another dataplane is recorded by its name (``ebpf (cilium)``) and credits no mode;
without node access nothing is demonstrated. kube-proxy's own ``/proxyMode`` answer is kept
beside it (``kube_proxy_mode``) and never credited by itself.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from kernel.battery import nodeparse
from kernel.battery.base import TestVerdict
from kernel.battery.context import RunContext, TestContext
from kernel.vocabulary import PROXIERS

MODES = PROXIERS
NO_NODE_ACCESS = "not demonstrated: no node access"


def initial(run: RunContext) -> dict[str, Any]:
    """What the fingerprint says before (or without) a Service under test."""
    return {
        "status": "not demonstrated",
        "mode": None,
        "dataplane": run.cni.service_dataplane,
        "detail": "not demonstrated: no SCTP Service was carried in this run",
        "node": None,
        "tables": [],
    }


def _record(run: RunContext, **answer: Any) -> dict[str, Any]:
    answer.setdefault("tables", [])
    run.proxier_demonstrated = answer
    return answer


def demonstrate(ctx: TestContext, vip: str, port: int, node: str | None) -> dict[str, Any]:
    """Look for the Service's SCTP rules on `node` (the carrying node) and record the verdict."""
    run = ctx.run
    replaced = run.cni.service_dataplane
    if run.node_access is not True or node is None:
        detail = NO_NODE_ACCESS
        if replaced:
            detail += f"; Services are programmed by {replaced}"
        return _record(
            run, status="not demonstrated", mode=None, dataplane=replaced, detail=detail, node=node
        )
    v6 = ipaddress.ip_address(vip).version == 6
    outputs: dict[str, str] = {}
    unread: list[str] = []
    commands = {
        "iptables": "ip6tables-save -t nat" if v6 else "iptables-save -t nat",
        "ipvs": "ipvsadm -Ln",
        "nftables": "nft list ruleset",
    }
    for mode, command in commands.items():
        try:
            outputs[mode] = ctx.node_output(node, command)
        except TestVerdict as exc:
            outputs[mode] = ""
            unread.append(f"{command}: {exc.reason}")
    found = nodeparse.proxier_modes_with(vip, port, "sctp", **outputs)
    for mode in found:
        ctx.note(f"{mode}: SCTP rules for {vip}:{port} found on {node} ({commands[mode]})")
    for problem in unread:
        ctx.note(f"not read on {node}: {problem}")
    if replaced:
        unused = f" (kube-proxy's {', '.join(found)} rules are there, unused)" if found else ""
        return _record(
            run,
            status="other dataplane",
            mode=None,
            dataplane=replaced,
            detail=f"not demonstrated: Services are carried by {replaced}{unused}",
            node=node,
            tables=found,
        )
    if len(found) > 1 and run.proxier_detected in found:
        found = [run.proxier_detected]  # a node that switched modes keeps the old tables
    if len(found) == 1:
        mode = found[0]
        return _record(
            run,
            status="demonstrated",
            mode=mode,
            dataplane=None,
            detail=f"{mode}: the SCTP rules of {vip}:{port} are in its tables on {node}",
            node=node,
            tables=found,
        )
    if found:
        detail = f"not demonstrated: rules for {vip}:{port} in {', '.join(found)} on {node}"
    else:
        detail = (
            f"not demonstrated: no SCTP rules for {vip}:{port} in iptables, ipvs or nftables "
            f"on {node}" + (f" ({'; '.join(unread)})" if unread else "")
        )
    return _record(
        run, status="not demonstrated", mode=None, dataplane=None, detail=detail, node=node
    )
