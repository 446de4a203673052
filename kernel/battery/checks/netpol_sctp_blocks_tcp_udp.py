"""netpol-sctp-blocks-tcp-udp: a policy allowing only SCTP/P lets neither TCP nor UDP to P through.

Upstream's "should not mistakenly treat 'protocol: SCTP' as 'protocol: TCP', even if the
plugin doesn't support SCTP" (test/e2e/network/netpol/network_policy.go) checks TCP to the
selected pod is denied *and* that the rest of its reachability matrix holds. The battery
keeps the positive control: after the policy, TCP and UDP to an unselected pod still get
through from the same client, so a client or plugin that drops everything is never read as
"blocked". (An SCTP probe to the selected pod would load sctp.ko, which a basic test must
not do, so the control uses the unselected pod.)
"""

from __future__ import annotations

from kernel.battery import pods
from kernel.battery.base import BatteryTest, TestFailed
from kernel.battery.checks._common import network_policy_skip, why
from kernel.battery.context import RunContext, TestContext
from kernel.vocabulary import Battery, Key

PORT = 8081


class NetpolSctpBlocksTcpUdp(BatteryTest):
    key = Key.NETPOL_SCTP_BLOCKS_TCP_UDP
    title = "A NetworkPolicy matching an SCTP port does not allow TCP or UDP traffic"
    battery = Battery.BASIC

    def skip_reason(self, run: RunContext) -> str | None:
        return network_policy_skip(run.spec)

    def run(self, ctx: TestContext) -> str:
        labels = {"app": "netpol-server"}
        control_labels = {"app": "netpol-control"}
        # TCP and UDP only: an SCTP listener would load sctp.ko, which a basic test must not.
        ctx.create_pod(
            pods.netexec_tcp_udp_pod("netpol-server", ctx.image, PORT, labels, ctx.node(0))
        )
        control = ctx.start_server(
            pods.netexec_tcp_udp_pod("netpol-control", ctx.image, PORT, control_labels, ctx.node(0))
        )
        server = ctx.wait_pod("netpol-server", ("Running",), ctx.spec.timeouts.pod_start)
        ip, control_ip = server.status.pod_ip, control.status.pod_ip
        client_node = ctx.node(1)

        for protocol in ("tcp", "udp"):
            for target in (ip, control_ip):
                result = ctx.connect_expect(
                    target, PORT, protocol, expect_ok=True, node=client_node, what="baseline"
                )
                if not result.ok:
                    raise TestFailed(
                        f"baseline failed: {protocol.upper()} to {target}:{PORT} {why(result)} "
                        "before any policy, so the policy cannot be judged"
                    )

        ctx.create_policy(
            pods.network_policy(
                "allow-only-sctp", labels, [{"ports": [{"protocol": "SCTP", "port": PORT}]}]
            )
        )
        ctx.note(f"policy allow-only-sctp: pods {labels} accept only SCTP/{PORT}")

        leaked = []
        for protocol in ("tcp", "udp"):
            result = ctx.connect_expect(
                ip, PORT, protocol, expect_ok=False, node=client_node, what="with policy"
            )
            if result.ok:
                leaked.append(protocol.upper())
        if leaked:
            raise TestFailed(
                f"{' and '.join(leaked)} to port {PORT} got through a policy that allows only SCTP"
            )
        for protocol in ("tcp", "udp"):
            result = ctx.connect_expect(
                control_ip,
                PORT,
                protocol,
                expect_ok=True,
                node=client_node,
                what="positive control, unselected pod",
            )
            if not result.ok:
                raise TestFailed(
                    f"positive control failed: {protocol.upper()} to the unselected pod "
                    f"{control_ip}:{PORT} {why(result)} after the policy, so the denials "
                    "above cannot be read as the policy's doing"
                )
        return (
            f"A policy allowing only SCTP/{PORT} stopped both TCP and UDP to port {PORT}, "
            "while TCP and UDP to an unselected pod still got through"
        )
