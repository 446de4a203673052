"""declare-sctp-ports: the API accepts protocol SCTP on Pods, Services and NetworkPolicies."""

from __future__ import annotations

from workers.battery import pods
from workers.battery.base import BatteryTest, TestFailed
from workers.battery.checks._common import SCTP_PORT
from workers.battery.context import TestContext


class DeclareSctpPorts(BatteryTest):
    key = "declare-sctp-ports"
    title = "Pods, Services, and NetworkPolicies can declare SCTP ports"
    battery = "basic"

    def run(self, ctx: TestContext) -> str:
        labels = {"app": "sctp-declare"}
        # A pause pod declares the port without opening a socket: the kernel module must
        # not be needed (upstream's "basic SCTP service with pod and endpoints").
        pod = ctx.create_pod(
            pods.pause_pod(
                "sctp-declare", ctx.image, [pods.port(SCTP_PORT, "SCTP")], labels, ctx.node(0)
            )
        )
        # Reaching here means the API accepted SCTP (a 422 is turned into "feature gate
        # off" by the runner for every test alike).
        ctx.run.feature_gate = "on"
        _expect_sctp("Pod", [p.protocol for p in pod.spec.containers[0].ports or []])

        service = ctx.create_service(pods.service("sctp-declare", labels, SCTP_PORT, SCTP_PORT))
        read = ctx.kube.call(ctx.kube.core.read_namespaced_service, "sctp-declare", ctx.namespace)
        _expect_sctp("Service", [p.protocol for p in read.spec.ports or []])
        ctx.note(
            f"service sctp-declare: ClusterIP {service.spec.cluster_ip}, port {SCTP_PORT}/SCTP"
        )

        policy_body = pods.network_policy(
            "sctp-declare", labels, [{"ports": [{"protocol": "SCTP", "port": SCTP_PORT}]}]
        )
        ctx.create_policy(policy_body)
        policy = ctx.kube.call(
            ctx.kube.networking.read_namespaced_network_policy, "sctp-declare", ctx.namespace
        )
        _expect_sctp(
            "NetworkPolicy",
            [p.protocol for rule in policy.spec.ingress or [] for p in rule.ports or []],
        )
        ctx.note("network policy sctp-declare: ingress port 5060/SCTP round-tripped")

        ctx.wait_pod("sctp-declare", ("Running",), ctx.spec.timeouts.pod_start)
        addresses = ctx.wait_endpoints("sctp-declare", "SCTP")
        ctx.note(f"endpoint slice of sctp-declare: SCTP port, ready addresses {addresses}")
        return (
            "The API accepted protocol SCTP on a Pod, a Service and a NetworkPolicy, and the "
            "service's endpoints carry the SCTP port"
        )


def _expect_sctp(kind: str, protocols: list[str]) -> None:
    if "SCTP" not in protocols:
        raise TestFailed(f"the {kind} did not round-trip protocol SCTP (read back {protocols})")
