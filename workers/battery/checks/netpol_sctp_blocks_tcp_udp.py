"""netpol-sctp-blocks-tcp-udp: a policy allowing only SCTP/P lets neither TCP nor UDP to P through."""

from __future__ import annotations

from workers.battery import pods
from workers.battery.base import BatteryTest, TestFailed
from workers.battery.checks._common import no_network_policy_reason, verb
from workers.battery.context import RunContext, TestContext

PORT = 8081


class NetpolSctpBlocksTcpUdp(BatteryTest):
    key = "netpol-sctp-blocks-tcp-udp"
    title = "A NetworkPolicy matching an SCTP port does not allow TCP or UDP traffic"
    battery = "basic"

    def skip_reason(self, run: RunContext) -> str | None:
        if not run.spec.implements_network_policy:
            return no_network_policy_reason(run.spec.plugin_slug)
        return None

    def run(self, ctx: TestContext) -> str:
        labels = {"app": "netpol-server"}
        # TCP and UDP only: an SCTP listener would load sctp.ko, which a basic test must not.
        server = ctx.start_server(
            pods.netexec_tcp_udp_pod("netpol-server", ctx.image, PORT, labels, ctx.node(0))
        )
        ip = server.status.pod_ip
        client_node = ctx.node(1)

        for protocol in ("tcp", "udp"):
            result = ctx.connect_expect(
                ip, PORT, protocol, expect_ok=True, node=client_node, what="baseline"
            )
            if not result.ok:
                raise TestFailed(
                    f"baseline failed: {protocol.upper()} to {ip}:{PORT} {verb(result)} "
                    f"({result.word}) before any policy, so the policy cannot be judged"
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
        return f"A policy allowing only SCTP/{PORT} stopped both TCP and UDP to port {PORT}"
