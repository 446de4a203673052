"""declare-sctp-ports: SCTP ports on Pods, Services and NetworkPolicies, and the endpoint lifecycle.

Upstream's "should allow creating a basic SCTP service with pod and endpoints"
(test/e2e/network/service.go) creates the service, checks it has no endpoints, creates a
pod declaring 5060/SCTP, checks the endpoints list that pod and port, deletes the pod and
checks they are empty again (validateEndpointsPortsOrFail). The battery reads both the
Endpoints and the EndpointSlice API at each step, and also round-trips a NetworkPolicy
with an SCTP port (more than upstream: kept).
"""

from __future__ import annotations

from kernel.battery import pods, schedulable
from kernel.battery.base import BatteryTest, TestFailed
from kernel.battery.checks._common import SCTP_PORT
from kernel.battery.context import RunContext, TestContext
from kernel.vocabulary import Battery, Key

SERVICE = "sctp-endpoint-test"
POD = "sctp-declare"


class DeclareSctpPorts(BatteryTest):
    key = Key.DECLARE_SCTP_PORTS
    title = "Pods, Services, and NetworkPolicies can declare SCTP ports"
    battery = Battery.BASIC

    def module_nodes(self, run: RunContext) -> list[str] | None:
        # Upstream: GetBoundedReadySchedulableNodes(ctx, cs, 2) (random; here the first two).
        return (run.schedulable_nodes or run.nodes)[: schedulable.MODULE_CHECK_NODES]

    def run(self, ctx: TestContext) -> str:
        labels = {"app": "sctp-declare"}
        service = ctx.create_service(pods.service(SERVICE, labels, SCTP_PORT, SCTP_PORT))
        # Reaching here means the API accepted SCTP (a 422 on the protocol field is turned
        # into "feature gate off" by the runner for every test alike).
        ctx.run.feature_gate = "on"
        read = ctx.kube.call(ctx.kube.core.read_namespaced_service, SERVICE, ctx.namespace)
        _expect_sctp(
            "Service", [p.protocol for p in (read.spec.ports if read.spec else None) or []]
        )
        ctx.note(f"service {SERVICE}: ClusterIP {service.spec.cluster_ip}, port {SCTP_PORT}/SCTP")
        _endpoints_step(ctx, {}, "before the pod exists")

        # A pause pod declares the port without opening a socket: the kernel module must
        # not be needed.
        pod = ctx.create_pod(
            pods.pause_pod(POD, ctx.image, [pods.port(SCTP_PORT, "SCTP")], labels, ctx.node(0))
        )
        _expect_sctp("Pod", [p.protocol for p in pod.spec.containers[0].ports or []])
        ctx.wait_pod(POD, ("Running",), ctx.spec.timeouts.pod_start)
        _endpoints_step(ctx, {POD: [f"{SCTP_PORT}/SCTP"]}, "while the pod runs")

        policy_body = pods.network_policy(
            "sctp-declare", labels, [{"ports": [{"protocol": "SCTP", "port": SCTP_PORT}]}]
        )
        ctx.create_policy(policy_body)
        policy = ctx.kube.call(
            ctx.kube.networking.read_namespaced_network_policy, "sctp-declare", ctx.namespace
        )
        _expect_sctp(
            "NetworkPolicy",
            [
                p.protocol
                for rule in (policy.spec.ingress if policy.spec else None) or []
                for p in rule.ports or []
            ],
        )
        ctx.note("network policy sctp-declare: ingress port 5060/SCTP round-tripped")

        ctx.delete_pod(POD)
        _endpoints_step(ctx, {}, "after the pod was deleted")
        apis = " and ".join(ctx.endpoint_ports(SERVICE))
        return (
            "The API accepted protocol SCTP on a Pod, a Service and a NetworkPolicy, and the "
            f"service's {apis} listed the pod with {SCTP_PORT}/SCTP only while it existed"
        )


def _endpoints_step(ctx: TestContext, expected: dict[str, list[str]], when: str) -> None:
    seen = ctx.wait_endpoint_ports(SERVICE, expected)
    want = {pod: sorted(ports) for pod, ports in expected.items()}
    for api, got in seen.items():
        got = {pod: sorted(ports) for pod, ports in got.items()}
        ctx.note(f"{api} of {SERVICE} {when}: {got or 'none'}")
        if got != want:
            raise TestFailed(
                f"the {api} of service {SERVICE} {when} list {got or 'nothing'}, expected "
                f"{want or 'nothing'} (within {ctx.spec.timeouts.pod_start:g}s)"
            )


def _expect_sctp(kind: str, protocols: list[str | None]) -> None:
    if "SCTP" not in protocols:
        raise TestFailed(f"the {kind} did not round-trip protocol SCTP (read back {protocols})")
