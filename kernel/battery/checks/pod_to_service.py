"""pod-to-service: every endpoint answers SCTP through the ClusterIP (95 -> 8082) and a NodePort.

Upstream's Granular Checks (test/e2e/network/networking.go) as NetworkingTestConfig runs them
(test/e2e/framework/network/utils.go), with docs/upstream-mapping.md for the details:

- "should function for pod-Service: sctp": DialFromTestContainer to ClusterIP:95 and to
  NodeIP:NodePort, each expecting the hostname of every endpoint pod;
- "should function for endpoint-Service: sctp": the same from the first endpoint pod, which
  reaches itself through its own Service (the hairpin path);
- the secondary IP family's pod-Service spec (test/e2e/network/dual_stack.go) is its own
  outcome (pod_to_service_secondary_family.py), never folded into this key;
- NodeIP is the first InternalIP of the ClusterIP's family over the ready, schedulable
  nodes (ExternalIPs only under PreferExternalAddresses, which no SCTP spec sets); with fewer
  than 2 ready, schedulable, untainted nodes upstream skips; every dial has MaxTries
  (endpoints² + 30) tries 2 s apart.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

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
        setup = Setup.create(ctx, dual_stack=False)
        vip, node_port, node_ip = setup.vip, setup.node_port, setup.node_ip
        targets = [("ClusterIP", vip, SERVICE_PORT), ("NodePort", node_ip, node_port)]
        expected, max_tries = setup.expected, setup.max_tries
        problems: list[str] = []
        # pod-Service: sctp (test/e2e/network/networking.go): from the test container.
        for what, host, port in targets:
            problems += _dial(
                ctx, setup.tester_ip, TESTER_PORT, host, port, expected, what, "pod", max_tries
            )
        # The demonstrated proxier: the Service's rules on the node that carried the
        # ClusterIP connection (the test container's).
        demonstrate(ctx, vip, SERVICE_PORT, setup.node)
        # endpoint-Service: sctp: from the first endpoint pod to its own Service (hairpin).
        first = setup.endpoints[0]
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


@dataclass
class Setup:
    """NetworkingTestConfig.setup with EnableSCTP (and EnableDualStack): endpoint pods, the
    test container, node-port-service and its NodeIP, MaxTries."""

    endpoints: list[Any]
    expected: set[str]
    node: str | None
    tester_ip: str
    cluster_ips: list[str]
    node_port: int
    node_ip: str
    max_tries: int

    @property
    def vip(self) -> str:
        return self.cluster_ips[0]

    @classmethod
    def create(cls, ctx: TestContext, dual_stack: bool) -> Setup:
        labels = {"app": "sctp-netserver"}
        endpoints = start_endpoint_pods(ctx, labels)
        node = tester_node(ctx.run)
        tester_ip = start_test_container(ctx, node)
        body = pods.service(
            "node-port-service",
            labels,
            SERVICE_PORT,
            TARGET_PORT,
            service_type="NodePort",
            port_name="sctp",
        )
        if dual_stack:
            body["spec"]["ipFamilyPolicy"] = "RequireDualStack"  # upstream's EnableDualStack
        service = ctx.create_service(body)
        cluster_ips = [ip for ip in (service.spec.cluster_ips or [service.spec.cluster_ip]) if ip]
        node_port = service.spec.ports[0].node_port
        # Upstream waits for 2 x the endpoints with EnableDualStack (one slice per family).
        addresses = ctx.wait_endpoints("node-port-service", "SCTP", count=len(endpoints))
        family = ipaddress.ip_address(cluster_ips[0]).version
        node_ip = ctx.node_ip_of_family(family)
        if node_ip is None:
            raise TestError(
                f"no ready, schedulable node reports an InternalIP of the ClusterIP's family "
                f"(IPv{family}) to dial the NodePort on"
            )
        max_tries = upstream_max_tries(len(endpoints))
        ctx.note(
            f"service node-port-service: ClusterIP(s) {', '.join(cluster_ips)}:{SERVICE_PORT}, "
            f"NodePort {node_ip}:{node_port} (InternalIP) -> {sorted(addresses)} "
            f":{TARGET_PORT}; MaxTries {max_tries} (endpoints² + 30)"
        )
        return cls(
            endpoints,
            {pod.metadata.name for pod in endpoints},
            node,
            tester_ip,
            cluster_ips,
            node_port,
            node_ip,
            max_tries,
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
