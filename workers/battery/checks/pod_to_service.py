"""pod-to-service: a pod connects to another pod via SCTP through a ClusterIP."""

from __future__ import annotations

from workers.battery import pods
from workers.battery.base import BatteryTest, TestFailed
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
        if not result.ok:
            raise TestFailed(
                f"SCTP to the ClusterIP {vip}:{SERVICE_PORT} {verb(result)} ({result.word})"
            )
        return f"SCTP connected from a pod to the ClusterIP {vip}:{SERVICE_PORT}"
