"""pod-to-pod: a pod connects directly to another pod's IP via SCTP."""

from __future__ import annotations

from workers.battery import pods
from workers.battery.base import BatteryTest, TestFailed
from workers.battery.checks._common import SCTP_PORT, verb
from workers.battery.context import TestContext


class PodToPod(BatteryTest):
    key = "pod-to-pod"
    title = "A pod can connect directly to another pod via SCTP"
    battery = "connectivity"

    def run(self, ctx: TestContext) -> str:
        server = ctx.start_server(
            pods.porter_pod(
                "sctp-server", ctx.image, SCTP_PORT, {"app": "sctp-server"}, ctx.node(0)
            )
        )
        ip, server_node = server.status.pod_ip, server.spec.node_name
        # On another node when there is one: the interesting path crosses the network.
        client_node = ctx.node(1)
        result = ctx.connect_expect(ip, SCTP_PORT, "sctp", expect_ok=True, node=client_node)
        if not result.ok:
            raise TestFailed(
                f"SCTP from a pod on {client_node} to pod {ip}:{SCTP_PORT} on {server_node} "
                f"{verb(result)} ({result.word})"
            )
        return (
            f"SCTP connected from a pod on {client_node} to pod {ip}:{SCTP_PORT} on {server_node}"
        )
