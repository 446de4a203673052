"""service-iptables-rules: kube-proxy (iptables mode) carries an SCTP ClusterIP in its nat table.

Upstream's "should create a ClusterIP Service with SCTP ports" (test/e2e/network/service.go)
looks for `-A KUBE-SERVICES` with `-p sctp` in `iptables-save -t nat`. The battery asks for
the rule of this service: the nat-table KUBE-SERVICES jump for its VIP and port with
`-p sctp` to its KUBE-SVC chain, and that chain's DNAT to the endpoint. The filter table's
`… has no endpoints … -j REJECT` rule names the same VIP, port and protocol and carries no
traffic: it does not pass.

Upstream removed that spec in 1.27 (kube-proxy's iptables internals are not a conformance
matter): this check has no upstream counterpart since 1.27 and is kept because the KEP's
test plan names it (docs/upstream-mapping.md). On IPv6 and dual-stack clusters each
ClusterIP's rules are read from its family's table: `ip6tables-save` for IPv6. With kube-proxy
in nftables mode the same path is read from `nft list ruleset`: the `service-ips` element
`VIP . sctp . port : goto service-…` and that chain's DNAT to the endpoint (in the chain, as
v1.36's kube-proxy writes it, or in the endpoint chains it jumps to); other modes skip it.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from kernel.battery import nodeparse, pods
from kernel.battery.base import BatteryTest, TestFailed
from kernel.battery.checks._common import SCTP_PORT, poll_node_rules
from kernel.battery.checks.pod_to_service import dual_stack_api
from kernel.battery.context import RunContext, TestContext
from kernel.vocabulary import Battery, Key

NFT_COMMAND = "nft list ruleset"


class ServiceIptablesRules(BatteryTest):
    key = Key.SERVICE_IPTABLES_RULES
    title = "Services can declare SCTP ServicePorts when using the iptables proxier"
    battery = Battery.BASIC
    needs_node_access = True

    def skip_reason(self, run: RunContext) -> str | None:
        # Only the detected mode decides; the registered one is shown beside it.
        mode = run.proxier_detected
        if mode is None:
            if run.node_access is not True:
                return None  # the runner skips it for the node access reason
            return (
                "The test doesn't work if kube-proxy is not in iptables mode (proxier not "
                f"detected; registered as {run.spec.declared_proxier})"
            )
        if mode not in ("iptables", "nftables"):
            return (
                "The test doesn't work if kube-proxy is not in iptables mode "
                f"(detected proxier: {mode})"
            )
        return None

    def run(self, ctx: TestContext) -> str:
        labels = {"app": "sctp-clusterip"}
        pod = ctx.start_server(
            pods.pause_pod(
                "sctp-clusterip", ctx.image, [pods.port(SCTP_PORT, "SCTP")], labels, ctx.node(0)
            )
        )
        body = pods.service("sctp-clusterip", labels, SCTP_PORT, SCTP_PORT)
        if dual_stack_api(ctx):
            body["spec"]["ipFamilyPolicy"] = "PreferDualStack"
        service = ctx.create_service(body)
        vips = [ip for ip in (service.spec.cluster_ips or [service.spec.cluster_ip]) if ip]
        vip = vips[0]
        endpoint = f"{pod.status.pod_ip}:{SCTP_PORT}"
        ctx.note(f"service sctp-clusterip: ClusterIP {vip}, port {SCTP_PORT}/SCTP -> {endpoint}")
        # Real kube-proxy writes the nat KUBE-SERVICES jump only for services with endpoints.
        ctx.wait_endpoints("sctp-clusterip", "SCTP")

        if ctx.run.proxier_detected == "nftables":
            return self._nftables(ctx, vips, pod, endpoint)
        missing: list[str] = []
        for node in ctx.run.nodes:
            for vip_of_family in vips:
                v6, ip = _pod_ip_of_family(pod, vip_of_family)
                want = f"[{ip}]:{SCTP_PORT}" if v6 else f"{ip}:{SCTP_PORT}"
                command = "ip6tables-save" if v6 else "iptables-save"

                def find(text: str, vip: str = vip_of_family, want: str = want) -> list[str]:
                    path = nodeparse.iptables_service_path(text, vip, SCTP_PORT)
                    if path is None or (
                        want not in path.destinations and want.strip("[]") not in path.destinations
                    ):
                        return []
                    return [path.jump, *path.dnat]

                rules = poll_node_rules(ctx, node, command, find)
                if rules:
                    ctx.note(f"{command} on {node} (nat table):")
                    ctx.evidence.extend(f"  {line}" for line in rules)
                else:
                    missing.append(f"{node} ({command}, {vip_of_family})")
        if missing:
            raise TestFailed(
                f"no nat-table KUBE-SERVICES rule with -p sctp for {vip}:{SCTP_PORT} jumping "
                f"to a service chain that DNATs to {endpoint} on node(s) "
                f"{', '.join(missing)} within {ctx.spec.timeouts.rules_poll:g}s"
            )
        return (
            f"kube-proxy wrote the nat-table KUBE-SERVICES jump for SCTP {vip}:{SCTP_PORT} "
            f"and its DNAT to {endpoint} on every node (a check of the KEP's test plan; "
            "no upstream counterpart since 1.27)"
        )

    def _nftables(self, ctx: TestContext, vips: list[str], pod: Any, endpoint: str) -> str:
        """kube-proxy in nftables mode: the `service-ips` element of each ClusterIP with sctp
        and its port, going to a service chain that DNATs to the pod (`nft list ruleset`)."""
        missing: list[str] = []
        for node in ctx.run.nodes:
            for vip_of_family in vips:
                _, ip = _pod_ip_of_family(pod, vip_of_family)
                want = f"{ip}:{SCTP_PORT}"

                def find(text: str, vip: str = vip_of_family, want: str = want) -> list[str]:
                    path = nodeparse.nft_service_path(text, vip, SCTP_PORT)
                    if path is None or want not in path.destinations:
                        return []
                    return [path.element, f"chain {path.chain}:", *path.dnat]

                rules = poll_node_rules(ctx, node, NFT_COMMAND, find)
                if rules:
                    ctx.note(f"{NFT_COMMAND} on {node} (table kube-proxy):")
                    ctx.evidence.extend(f"  {line}" for line in rules)
                else:
                    missing.append(f"{node} ({vip_of_family})")
        vip = vips[0]
        if missing:
            raise TestFailed(
                f"no kube-proxy nftables element for SCTP {vip}:{SCTP_PORT} going to a service "
                f"chain that DNATs to {endpoint} on node(s) {', '.join(missing)} within "
                f"{ctx.spec.timeouts.rules_poll:g}s"
            )
        return (
            f"kube-proxy (nftables mode) wrote the service-ips element for SCTP "
            f"{vip}:{SCTP_PORT} and its service chain's DNAT to {endpoint} on every node (a "
            "check of the KEP's test plan; no upstream counterpart since 1.27)"
        )


def _pod_ip_of_family(pod: Any, vip: str) -> tuple[bool, str]:
    """Whether `vip` is IPv6, and the pod's IP of that family (its first IP when it has none)."""
    pod_ips = [p.ip for p in (pod.status.pod_ips or []) if p.ip] or [pod.status.pod_ip]
    v6 = ipaddress.ip_address(vip).version == 6
    family = 6 if v6 else 4
    return v6, next((p for p in pod_ips if ipaddress.ip_address(p).version == family), pod_ips[0])
