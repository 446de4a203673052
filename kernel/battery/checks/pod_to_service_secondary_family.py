"""pod-to-service-secondary-family: the dual-stack pod-Service spec, as its own outcome.

Upstream's "[sig-network] [Feature:IPv6DualStack] Granular Checks: Services Secondary IP
Family [LinuxOnly] should function for pod-Service: sctp [Feature:SCTPConnectivity]"
(test/e2e/network/dual_stack.go) is a spec of its own: NewNetworkingTestConfig with
EnableDualStack and EnableSCTP (a RequireDualStack node-port-service), then the test container
dials the Service's second ClusterIP:95 and the SecondaryNodeIP (the first InternalIP of the
second family) at the NodePort, each expecting every endpoint's hostname within MaxTries.

Reported beside the catalog (a conformance extra mapped to that spec's name): a failure of the
second family never fails `pod-to-service`, whose own outcome is upstream's single-family
specs'. Skipped on a cluster that is not dual-stack (upstream's jobs select the spec only on
dual-stack clusters).
"""

from __future__ import annotations

import ipaddress

from kubernetes.client.exceptions import ApiException

from kernel.battery import pods
from kernel.battery.base import BatteryTest, TestFailed, TestSkipped
from kernel.battery.checks._common import networking_skip, plugin_is
from kernel.battery.checks.pod_to_service import (
    CILIUM_NOTE,
    SERVICE_PORT,
    Setup,
    _dial,
    dual_stack_api,
)
from kernel.battery.context import TESTER_PORT, RunContext, TestContext
from kernel.kube import api_error_message
from kernel.vocabulary import Battery, Extra

UPSTREAM_NAME = (
    "[sig-network] [Feature:IPv6DualStack] Granular Checks: Services Secondary IP Family "
    "[LinuxOnly] should function for pod-Service: sctp [Feature:SCTPConnectivity]"
)


PROBE_SERVICE = "dual-stack-probe"


def single_stack_reason(ctx: TestContext) -> str | None:
    """Why this cluster is not dual-stack, or None: the fact this check skips on, and the
    `upstream` battery's `[Feature:IPv6DualStack]` decision (kernel.battery.features).

    A selector-less RequireDualStack Service (upstream's EnableDualStack asks the same of its
    node-port-service): a single-stack API server refuses it ("this cluster is not configured
    for dual-stack services") or gives it one ClusterIP."""
    if not dual_stack_api(ctx):
        return "not a dual-stack cluster: ipFamilyPolicy needs Kubernetes 1.21+"
    body = pods.service(PROBE_SERVICE, {}, SERVICE_PORT, SERVICE_PORT, port_name="sctp")
    del body["spec"]["selector"]
    body["spec"]["ipFamilyPolicy"] = "RequireDualStack"
    try:
        service = ctx.create_service(body)
    except ApiException as exc:
        if exc.status in (400, 422) and "dual-stack" in api_error_message(exc).lower():
            return f"not a dual-stack cluster: {api_error_message(exc)}"
        raise
    # Left to its namespace, which goes with the run: the battery's role grants no Service
    # delete (deploy/rbac/; tests/kernel/test_rbac_least_privilege.py).
    cluster_ips = [ip for ip in (service.spec.cluster_ips or [service.spec.cluster_ip]) if ip]
    if len(cluster_ips) < 2:
        return (
            "not a dual-stack cluster: a RequireDualStack Service got one ClusterIP "
            f"({', '.join(cluster_ips) or 'none'})"
        )
    return None


class PodToServiceSecondaryFamily(BatteryTest):
    key = Extra.SECONDARY_FAMILY
    title = "A pod can connect via SCTP to a Service's secondary IP family (dual-stack)"
    battery = Battery.CONNECTIVITY

    def skip_reason(self, run: RunContext) -> str | None:
        return networking_skip(run, "Secondary IP Family pod-Service spec")

    def run(self, ctx: TestContext) -> str:
        single = single_stack_reason(ctx)
        if single:
            raise TestSkipped(single)
        try:
            setup = Setup.create(ctx, dual_stack=True)
        except ApiException as exc:
            if exc.status in (400, 422) and "dual-stack" in api_error_message(exc).lower():
                raise TestSkipped(f"not a dual-stack cluster: {api_error_message(exc)}") from exc
            raise
        if len(setup.cluster_ips) < 2:
            raise TestSkipped(
                "not a dual-stack cluster: the RequireDualStack Service got one ClusterIP "
                f"({setup.vip})"
            )
        second = setup.cluster_ips[1]
        family = ipaddress.ip_address(second).version
        node_ip = ctx.node_ip_of_family(family)
        targets = [("secondary-family ClusterIP", second, SERVICE_PORT)]
        problems: list[str] = []
        if node_ip:
            targets.append(("secondary-family NodePort", node_ip, setup.node_port))
        else:
            problems.append(f"no ready, schedulable node has an IPv{family} InternalIP")
        for what, host, port in targets:
            problems += _dial(
                ctx,
                setup.tester_ip,
                TESTER_PORT,
                host,
                port,
                setup.expected,
                what,
                "pod",
                setup.max_tries,
            )
        if problems:
            reason = f"SCTP to node-port-service (IPv{family}): {'; '.join(problems)}"
            if plugin_is(ctx.run, "cilium"):
                reason += f"; {CILIUM_NOTE}"
            raise TestFailed(reason)
        shown = " and ".join(pods.connect_target(h, p) for _, h, p in targets)
        return (
            f"SCTP reached all {len(setup.expected)} endpoint(s) through the secondary IP family "
            f"(IPv{family}): {shown}"
        )
