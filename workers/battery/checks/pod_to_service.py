"""pod-to-service: every endpoint answers SCTP through the ClusterIP (95 -> 8082) and a NodePort.

Upstream's "Granular Checks: Services should function for pod-Service: sctp"
(test/e2e/network/networking.go): DialFromTestContainer to ClusterIP:95 and to
NodeIP:NodePort, each expecting the hostname of every endpoint pod.
"""

from __future__ import annotations

from workers.battery import nodeparse, pods
from workers.battery.base import BatteryTest, TestFailed, TestVerdict
from workers.battery.checks._common import (
    CLUSTER_SCTP_PORT,
    ENDPOINT_SCTP_PORT,
    plugin_is,
    start_endpoint_pods,
    start_test_container,
)
from workers.battery.context import TestContext
from workers.vocabulary import Battery, Key

# Upstream's Granular Checks use these for SCTP: cluster port 95, endpoint port 8082.
SERVICE_PORT = CLUSTER_SCTP_PORT
TARGET_PORT = ENDPOINT_SCTP_PORT
# Cilium's SCTP support (docs.cilium.io, "SCTP support", limitations): a Service's port
# must equal its targetPort, so upstream's 95 -> 8082 cannot pass on Cilium either.
CILIUM_NOTE = (
    "known Cilium limit: its SCTP service translation requires a Service's targetPort to "
    f"equal its port, so upstream's {SERVICE_PORT} -> {TARGET_PORT} fails there too"
)


class PodToService(BatteryTest):
    key = Key.POD_TO_SERVICE
    title = "A pod can connect to another pod via SCTP via a Service IP"
    battery = Battery.CONNECTIVITY

    def run(self, ctx: TestContext) -> str:
        labels = {"app": "sctp-netserver"}
        endpoints = start_endpoint_pods(ctx, labels)
        expected = {pod.metadata.name for pod in endpoints}
        tester_ip = start_test_container(ctx, ctx.node(1))
        service = ctx.create_service(
            pods.service(
                "node-port-service",
                labels,
                SERVICE_PORT,
                TARGET_PORT,
                service_type="NodePort",
                port_name="sctp",
            )
        )
        vip = service.spec.cluster_ip
        node_port = service.spec.ports[0].node_port
        addresses = ctx.wait_endpoints("node-port-service", "SCTP", count=len(endpoints))
        ctx.note(
            f"service node-port-service: ClusterIP {vip}:{SERVICE_PORT}, NodePort {node_port} "
            f"-> {sorted(addresses)} :{TARGET_PORT}"
        )
        node_ip = ctx.node_ip(ctx.node(0) or "")
        problems: list[str] = []
        for what, host, port in (
            ("ClusterIP", vip, SERVICE_PORT),
            ("NodePort", node_ip, node_port),
        ):
            seen, errors = ctx.dial_expect(
                tester_ip, host, port, "sctp", expected, node=ctx.node(1), what=what
            )
            if seen != expected:
                missing = sorted(expected - seen)
                extra = sorted(seen - expected)
                text = f"through the {what} {pods.connect_target(host, port)}"
                if missing:
                    text += f" endpoint(s) {', '.join(missing)} never answered"
                if extra:
                    text += f"{',' if missing else ''} unexpected answer(s) {', '.join(extra)}"
                if errors:
                    text += f" (last error: {errors[-1]})"
                problems.append(text)
        note_proxier_rules(ctx, vip)
        if problems:
            reason = f"SCTP from the test container to node-port-service: {'; '.join(problems)}"
            if plugin_is(ctx.run, "cilium"):
                reason += f"; {CILIUM_NOTE}"
            raise TestFailed(reason)
        return (
            f"SCTP reached all {len(expected)} endpoint(s), each answering with its hostname, "
            f"through the ClusterIP {vip}:{SERVICE_PORT} and the NodePort "
            f"{node_ip}:{node_port}"
        )


def note_proxier_rules(ctx: TestContext, vip: str) -> None:
    """Evidence of how kube-proxy carries the SCTP service (the iptables-and-ipvs criterion).

    Evidence only: without node access, or when a tool is missing on the node, the verdict
    still rests on the connection alone. Only the detected mode is read: a registered mode
    the cluster does not run would show nothing worth recording.
    """
    node = ctx.node(0)
    mode = ctx.run.proxier_detected
    if ctx.run.node_access is not True or node is None or mode is None:
        return
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
            path = nodeparse.iptables_service_path(
                ctx.node_output(node, "iptables-save"), vip, SERVICE_PORT
            )
            found = [path.jump, *path.dnat] if path else []
    except TestVerdict as exc:
        ctx.note(f"{mode} rules not read on {node}: {exc.reason}")
        return
    ctx.note(f"{mode} rules for SCTP {vip} on {node}: {len(found)}")
    ctx.evidence.extend(f"  {line}" for line in found)
