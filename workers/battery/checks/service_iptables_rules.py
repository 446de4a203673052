"""service-iptables-rules: kube-proxy (iptables mode) writes rules for an SCTP ClusterIP."""

from __future__ import annotations

from workers.battery import nodeparse, pods
from workers.battery.base import BatteryTest, TestFailed
from workers.battery.checks._common import SCTP_PORT, poll_node_rules
from workers.battery.context import RunContext, TestContext


class ServiceIptablesRules(BatteryTest):
    key = "service-iptables-rules"
    title = "Services can declare SCTP ServicePorts when using the iptables proxier"
    battery = "basic"
    needs_node_access = True

    def skip_reason(self, run: RunContext) -> str | None:
        # What kube-proxy says on :10249/proxyMode beats what the cluster was registered as.
        mode = run.proxier_detected or run.spec.declared_proxier
        source = "detected" if run.proxier_detected else "declared"
        if mode != "iptables":
            return (
                "The test doesn't work if kube-proxy is not in iptables mode "
                f"({source} proxier: {mode})"
            )
        return None

    def run(self, ctx: TestContext) -> str:
        labels = {"app": "sctp-clusterip"}
        ctx.start_server(
            pods.pause_pod(
                "sctp-clusterip", ctx.image, [pods.port(SCTP_PORT, "SCTP")], labels, ctx.node(0)
            )
        )
        service = ctx.create_service(pods.service("sctp-clusterip", labels, SCTP_PORT, SCTP_PORT))
        vip = service.spec.cluster_ip
        ctx.note(f"service sctp-clusterip: ClusterIP {vip}, port {SCTP_PORT}/SCTP")
        # Real kube-proxy writes the nat KUBE-SERVICES jump only for services with endpoints.
        ctx.wait_endpoints("sctp-clusterip", "SCTP")

        missing: list[str] = []
        for node in ctx.run.nodes:
            rules = poll_node_rules(
                ctx,
                node,
                "iptables-save",
                lambda text: nodeparse.iptables_sctp_rules(
                    text, dport=SCTP_PORT, dest_ip=vip, chain_prefix="KUBE-SERVICES"
                ),
            )
            if rules:
                ctx.note(f"iptables-save on {node}:")
                ctx.evidence.extend(f"  {line}" for line in rules)
            else:
                missing.append(node)
        if missing:
            raise TestFailed(
                f"no KUBE-SERVICES rule for SCTP {vip}:{SCTP_PORT} on node(s) "
                f"{', '.join(missing)} within {ctx.spec.timeouts.rules_poll:g}s"
            )
        return f"kube-proxy wrote KUBE-SERVICES rules for SCTP {vip}:{SCTP_PORT} on every node"
