"""The "few other network conformance tests" the KEP suggests the periodic basic job runs,
"just to confirm that enabling SCTP does not break other things": TCP and UDP from a pod to
a ClusterIP Service. Not catalog tests: they are reported beside the catalog, never counted
by a criterion, and like every basic test they must not load sctp.ko.
"""

from __future__ import annotations

from kernel.battery import pods
from kernel.battery.base import BatteryTest, TestFailed
from kernel.battery.checks._common import why
from kernel.battery.context import TestContext
from kernel.vocabulary import Extra

SERVICE_PORT = 80
TARGET_PORT = 8080


class _PodToServiceOver(BatteryTest):
    protocol = "tcp"
    battery = "basic"

    def run(self, ctx: TestContext) -> str:
        labels = {"app": f"{self.protocol}-server"}
        ctx.start_server(
            pods.netexec_tcp_udp_pod("server", ctx.image, TARGET_PORT, labels, ctx.node(0))
        )
        name = f"{self.protocol}-svc"
        service = ctx.create_service(
            pods.service(name, labels, SERVICE_PORT, TARGET_PORT, protocol=self.protocol.upper())
        )
        vip = service.spec.cluster_ip
        ctx.wait_endpoints(name, self.protocol.upper())
        result = ctx.connect_expect(
            vip, SERVICE_PORT, self.protocol, expect_ok=True, node=ctx.node(1)
        )
        if not result.ok:
            raise TestFailed(
                f"{self.protocol.upper()} to the ClusterIP {vip}:{SERVICE_PORT} {why(result)}"
            )
        return f"{self.protocol.upper()} connected from a pod to the ClusterIP {vip}:{SERVICE_PORT}"


class TcpPodToService(_PodToServiceOver):
    key = Extra.CONFORMANCE_TCP
    title = "A pod can connect to another pod via TCP via a Service IP"
    protocol = "tcp"


class UdpPodToService(_PodToServiceOver):
    key = Extra.CONFORMANCE_UDP
    title = "A pod can connect to another pod via UDP via a Service IP"
    protocol = "udp"


EXTRA_BASIC = [TcpPodToService, UdpPodToService]
