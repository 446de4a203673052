"""pod-to-service: every endpoint answers SCTP through the ClusterIP (95 -> 8082) and a NodePort.

Upstream's Granular Checks (test/e2e/network/networking.go) as NetworkingTestConfig runs them
(test/e2e/framework/network/utils.go), with docs/upstream-mapping.md for the details:

- "should function for pod-Service: sctp": DialFromTestContainer to ClusterIP:95 and to
  NodeIP:NodePort, each expecting the hostname of every endpoint pod;
- "should function for endpoint-Service: sctp": the same from the first endpoint pod, which
  reaches itself through its own Service (the hairpin path);
- "[Feature:IPv6DualStack] Granular Checks: Secondary IP Family … pod-Service: sctp"
  (test/e2e/network/dual_stack.go): on a dual-stack cluster, the same through the Service's
  second ClusterIP and a node's address of that family;
- NodeIP is the first InternalIP of the ClusterIP's family over the ready, schedulable
  nodes (ExternalIPs only under PreferExternalAddresses, which no SCTP spec sets); with fewer
  than 2 ready, schedulable, untainted nodes upstream skips; every dial has MaxTries
  (endpoints² + 30) tries 2 s apart.
"""

from __future__ import annotations

import ipaddress

from kernel.battery import pods
from kernel.battery.base import BatteryTest, TestError, TestFailed
from kernel.battery.checks._common import (
    CLUSTER_SCTP_PORT,
    ENDPOINT_HTTP_PORT,
    ENDPOINT_SCTP_PORT,
    networking_skip,
    plugin_is,
    start_endpoint_pods,
    start_test_container,
    tester_node,
    upstream_max_tries,
)
from kernel.battery.context import TESTER_PORT, RunContext, TestContext
from kernel.battery.proxier import demonstrate
from kernel.vocabulary import Battery, Key

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

    def skip_reason(self, run: RunContext) -> str | None:
        return networking_skip(run, "pod-Service and endpoint-Service specs")

    def run(self, ctx: TestContext) -> str:
        labels = {"app": "sctp-netserver"}
        endpoints = start_endpoint_pods(ctx, labels)
        expected = {pod.metadata.name for pod in endpoints}
        node = tester_node(ctx.run)
        tester_ip = start_test_container(ctx, node)
        max_tries = upstream_max_tries(len(endpoints))
        body = pods.service(
            "node-port-service",
            labels,
            SERVICE_PORT,
            TARGET_PORT,
            service_type="NodePort",
            port_name="sctp",
        )
        if dual_stack_api(ctx):
            # Upstream's EnableDualStack asks RequireDualStack on dual-stack clusters; Prefer
            # gives the same two ClusterIPs there and one on a single-stack cluster.
            body["spec"]["ipFamilyPolicy"] = "PreferDualStack"
        service = ctx.create_service(body)
        cluster_ips = [ip for ip in (service.spec.cluster_ips or [service.spec.cluster_ip]) if ip]
        vip = cluster_ips[0]
        node_port = service.spec.ports[0].node_port
        addresses = ctx.wait_endpoints("node-port-service", "SCTP", count=len(endpoints))
        family = ipaddress.ip_address(vip).version
        node_ip = ctx.node_ip_of_family(family)
        if node_ip is None:
            raise TestError(
                f"no ready, schedulable node reports an InternalIP of the ClusterIP's family "
                f"(IPv{family}) to dial the NodePort on"
            )
        ctx.note(
            f"service node-port-service: ClusterIP(s) {', '.join(cluster_ips)}:{SERVICE_PORT}, "
            f"NodePort {node_ip}:{node_port} (InternalIP) -> {sorted(addresses)} "
            f":{TARGET_PORT}; MaxTries {max_tries} (endpoints² + 30)"
        )
        targets = [("ClusterIP", vip, SERVICE_PORT), ("NodePort", node_ip, node_port)]
        problems: list[str] = []
        # pod-Service: sctp (test/e2e/network/networking.go): from the test container.
        for what, host, port in targets:
            problems += _dial(
                ctx, tester_ip, TESTER_PORT, host, port, expected, what, "pod", max_tries
            )
        # The demonstrated proxier: the Service's rules on the node that carried the
        # ClusterIP connection (the test container's).
        demonstrate(ctx, vip, SERVICE_PORT, node)
        # endpoint-Service: sctp: from the first endpoint pod to its own Service (hairpin).
        first = endpoints[0]
        for what, host, port in targets:
            problems += _dial(
                ctx,
                str(first.status.pod_ip),
                ENDPOINT_HTTP_PORT,
                host,
                port,
                expected,
                what,
                f"endpoint {first.metadata.name}",
                max_tries,
            )
        checked = "pod-Service and endpoint-Service (hairpin)"
        # Secondary IP Family [Feature:IPv6DualStack] pod-Service: sctp (dual_stack.go).
        if len(cluster_ips) > 1:
            second = cluster_ips[1]
            second_family = ipaddress.ip_address(second).version
            second_node_ip = ctx.node_ip_of_family(second_family)
            second_targets = [("secondary-family ClusterIP", second, SERVICE_PORT)]
            if second_node_ip:
                second_targets.append(("secondary-family NodePort", second_node_ip, node_port))
            else:
                problems.append(f"no node has an IPv{second_family} address for the NodePort")
            for what, host, port in second_targets:
                problems += _dial(
                    ctx, tester_ip, TESTER_PORT, host, port, expected, what, "pod", max_tries
                )
            checked += f", and the secondary IP family (IPv{second_family})"
        if problems:
            reason = f"SCTP to node-port-service: {'; '.join(problems)}"
            if plugin_is(ctx.run, "cilium"):
                reason += f"; {CILIUM_NOTE}"
            raise TestFailed(reason)
        return (
            f"SCTP reached all {len(expected)} endpoint(s), each answering with its hostname, "
            f"through the ClusterIP {pods.connect_target(vip, SERVICE_PORT)} and the NodePort "
            f"{pods.connect_target(node_ip, node_port)}: {checked}"
        )


def dual_stack_api(ctx: TestContext) -> bool:
    """ipFamilyPolicy exists from 1.20 (dual-stack beta 1.21, GA 1.23)."""
    version = str(ctx.run.report.fingerprint.get("kubernetes_version") or "")
    try:
        major, minor = (
            int("".join(c for c in x if c.isdigit()) or 0) for x in version.split(".")[:2]
        )
    except ValueError:
        return False
    return (major, minor) >= (1, 21)


def _dial(
    ctx: TestContext,
    dialer_ip: str,
    dialer_port: int,
    host: str,
    port: int,
    expected: set[str],
    what: str,
    case: str,
    max_tries: int,
) -> list[str]:
    seen, errors = ctx.dial_expect(
        dialer_ip,
        host,
        port,
        "sctp",
        expected,
        node=None,
        what=f"{case} -> {what}",
        tester_port=dialer_port,
        dialer=dialer_ip,
        max_tries=max_tries,
    )
    if seen == expected:
        return []
    missing = sorted(expected - seen)
    extra = sorted(seen - expected)
    text = f"from the {case} through the {what} {pods.connect_target(host, port)}"
    if missing:
        text += f" endpoint(s) {', '.join(missing)} never answered"
    if extra:
        text += f"{',' if missing else ''} unexpected answer(s) {', '.join(extra)}"
    if errors:
        text += f" (last error: {errors[-1]})"
    return [text]
