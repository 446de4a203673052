"""Small helpers shared by several checks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernel.battery import pods, schedulable
from kernel.battery.base import ClusterSpec, TestFailed
from kernel.battery.context import TESTER_PORT, ConnectResult, RunContext, TestContext

SCTP_PORT = 5060  # the port upstream's basic SCTP tests declare
# Upstream's NetworkingTestConfig (test/e2e/framework/network/utils.go): endpoint pods serve
# SCTP on 8082, the service maps ClusterIP port 95 to it; the test container listens on 9080.
ENDPOINT_SCTP_PORT = 8082
CLUSTER_SCTP_PORT = 95
ENDPOINT_HTTP_PORT = 8083
UPSTREAM_TEST_TRIES = 30  # framework/network/utils.go testTries
VERBS = {"TIMEOUT": "timed out", "REFUSED": "was refused", "DNS": "did not resolve"}


def verb(result: ConnectResult) -> str:
    # agnhost has no REFUSED branch for SCTP: an ABORT reads `OTHER: connection refused`.
    if result.word == "OTHER" and "connection refused" in result.detail:
        return "was refused"
    return VERBS.get(result.word, "failed")


def why(result: ConnectResult) -> str:
    """`timed out (TIMEOUT)`, `was refused (OTHER: connection refused)`, …"""
    return f"{verb(result)} ({result.describe()})"


def no_network_policy_reason(slug: str) -> str:
    return f"the plugin {slug} does not implement NetworkPolicy"


def network_policy_skip(spec: ClusterSpec) -> str | None:
    """Why no NetworkPolicy test can tell anything here (the plugin implements none), or None:
    the netpol tests' skip and the `upstream` battery's `[Feature:NetworkPolicy]` decision."""
    if not spec.implements_network_policy:
        return no_network_policy_reason(spec.plugin_slug)
    return None


def plugin_is(run: RunContext, slug: str) -> bool:
    return run.spec.plugin_slug == slug or run.report.fingerprint.get("cni_detected") == slug


def poll_node_rules(
    ctx: TestContext, node: str, cmd: str, find: Callable[[str], list[str]]
) -> list[str]:
    """Read `cmd` on `node` until `find` returns lines, for at most rules_poll seconds.

    kube-proxy and the hostport manager program rules after a lag (upstream polls for
    KubeProxyLagTimeout); an empty list means the wait ran out.
    """
    timeouts = ctx.spec.timeouts
    deadline = ctx.run.clock() + timeouts.rules_poll
    while True:
        lines = find(ctx.node_output(node, cmd))
        if lines or ctx.run.clock() >= deadline:
            return lines
        ctx.run.pause(timeouts.poll_interval)


def require(result: ConnectResult, expect_ok: bool, reason: str) -> None:
    if result.ok != expect_ok:
        raise TestFailed(reason)


def upstream_max_tries(endpoints: int) -> int:
    """NetworkingTestConfig.setupCore's MaxTries: epCount*epCount + testTries (30)."""
    return endpoints * endpoints + UPSTREAM_TEST_TRIES


def networking_skip(run: RunContext, spec: str) -> str | None:
    """NetworkingTestConfig.setup's skip, over the nodes upstream counts."""
    return schedulable.node_count_skip(run.schedulable_nodes, run.nodes_not_counted, spec)


def endpoint_nodes(run: RunContext) -> list[str]:
    """Upstream's createNetProxyPods: GetBoundedReadySchedulableNodes(maxNetProxyPodsCount)."""
    return run.schedulable_nodes[: schedulable.MAX_NET_PROXY_PODS]


def tester_node(run: RunContext) -> str | None:
    """The test container's node: the second counted node (another than the first endpoint's;
    upstream lets the scheduler place it, the battery pins it to know which node carried it)."""
    counted = run.schedulable_nodes or run.nodes
    return counted[1 % len(counted)] if counted else None


def start_endpoint_pods(ctx: TestContext, labels: dict[str, str]) -> list[Any]:
    """One netexec endpoint pod per counted node, at most 10 (upstream's createNetProxyPods),
    all created before any is awaited; the running pods are returned."""
    names = []
    for index, node in enumerate(endpoint_nodes(ctx.run)):
        name = f"netserver-{index}"
        ctx.create_pod(
            pods.netexec_pod(
                name,
                ctx.image,
                labels,
                node,
                http_port=ENDPOINT_HTTP_PORT,
                sctp_port=ENDPOINT_SCTP_PORT,
            )
        )
        names.append(name)
    running = []
    for name in names:
        pod = ctx.wait_pod(name, ("Running",), ctx.spec.timeouts.pod_start)
        ctx.note(f"pod {name} running on {pod.spec.node_name} at {pod.status.pod_ip}")
        running.append(pod)
    return running


def start_test_container(ctx: TestContext, node: str | None) -> str:
    """upstream's test-container-pod: netexec on 9080 whose /dial makes the SCTP exchanges."""
    pod = ctx.start_server(
        pods.netexec_pod(
            "test-container-pod", ctx.image, {"app": "test-container"}, node, http_port=TESTER_PORT
        )
    )
    return str(pod.status.pod_ip)
