"""pod-to-service: a pod connects to another pod via SCTP through a ClusterIP."""

from __future__ import annotations

from workers.battery import nodeparse, pods
from workers.battery.base import BatteryTest, TestFailed, TestVerdict
from workers.battery.checks._common import verb
from workers.battery.context import TestContext

# Upstream's Granular Checks use these for SCTP: cluster port 95, endpoint port 8082.
SERVICE_PORT = 95
TARGET_PORT = 8082


class PodToService(BatteryTest):
    key = "pod-to-service"
    title = "A pod can connect to another pod via SCTP via a Service IP"
    battery = "connectivity"

    def run(self, ctx: TestContext) -> str:
        labels = {"app": "sctp-server"}
        ctx.start_server(
            pods.porter_pod("sctp-server", ctx.image, TARGET_PORT, labels, ctx.node(0))
        )
        service = ctx.create_service(pods.service("sctp-svc", labels, SERVICE_PORT, TARGET_PORT))
        vip = service.spec.cluster_ip
        endpoints = ctx.wait_endpoints("sctp-svc", "SCTP")
        ctx.note(f"service sctp-svc: ClusterIP {vip}:{SERVICE_PORT} -> {endpoints} :{TARGET_PORT}")
        result = ctx.connect_expect(vip, SERVICE_PORT, "sctp", expect_ok=True, node=ctx.node(1))
        note_proxier_rules(ctx, vip)
        if not result.ok:
            raise TestFailed(
                f"SCTP to the ClusterIP {vip}:{SERVICE_PORT} {verb(result)} ({result.word})"
            )
        return f"SCTP connected from a pod to the ClusterIP {vip}:{SERVICE_PORT}"


def note_proxier_rules(ctx: TestContext, vip: str) -> None:
    """Evidence of how kube-proxy carries the SCTP service (the iptables-and-ipvs criterion).

    Evidence only: without node access, or when a tool is missing on the node, the verdict
    still rests on the connection alone.
    """
    node = ctx.node(0)
    if ctx.run.node_access is not True or node is None:
        return
    mode = ctx.run.proxier_detected or ctx.spec.declared_proxier
    try:
        if mode == "ipvs":
            found = [
                f"SCTP {s.vip}:{s.port} {s.scheduler} -> {s.reals}"
                for s in nodeparse.ipvs_sctp_services(ctx.node_output(node, "ipvsadm -Ln"))
                if s.vip == vip
            ]
        elif mode == "nftables":
            found = [
                f"{ip} . sctp . {port} : {verdict}"
                for ip, port, verdict in nodeparse.nft_sctp_service_elements(
                    ctx.node_output(node, "nft list ruleset")
                )
                if ip == vip
            ]
        else:
            found = nodeparse.iptables_sctp_rules(
                ctx.node_output(node, "iptables-save"), dest_ip=vip, dport=SERVICE_PORT
            )
    except TestVerdict as exc:
        ctx.note(f"{mode} rules not read on {node}: {exc.reason}")
        return
    ctx.note(f"{mode} rules for SCTP {vip} on {node}: {len(found)}")
    ctx.evidence.extend(f"  {line}" for line in found)
