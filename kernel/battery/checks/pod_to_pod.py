"""pod-to-pod: every endpoint pod answers SCTP with its hostname, pod IP to pod IP.

Upstream's "Granular Checks: Pods should function for intra-pod communication: sctp"
(test/e2e/common/network/networking.go, checkPodToPodConnectivity): one netexec endpoint per
node, each dialled from the test container over SCTP and expected to reply with its name.
"""

from __future__ import annotations

from kernel.battery.base import BatteryTest, TestFailed
from kernel.battery.checks._common import (
    ENDPOINT_SCTP_PORT,
    start_endpoint_pods,
    start_test_container,
)
from kernel.battery.context import TestContext
from kernel.vocabulary import Battery, Key


class PodToPod(BatteryTest):
    key = Key.POD_TO_POD
    title = "A pod can connect directly to another pod via SCTP"
    battery = Battery.CONNECTIVITY

    def run(self, ctx: TestContext) -> str:
        endpoints = start_endpoint_pods(ctx, {"app": "sctp-netserver"})
        # The test container on another node than the first endpoint when there is one.
        tester_ip = start_test_container(ctx, ctx.node(1))
        P = ENDPOINT_SCTP_PORT
        failures: list[str] = []
        reached: list[str] = []
        for pod in endpoints:
            name, ip, node = pod.metadata.name, pod.status.pod_ip, pod.spec.node_name
            seen, errors = ctx.dial_expect(
                tester_ip, ip, P, "sctp", {name}, node=ctx.node(1), what=f"to {name}"
            )
            if seen == {name}:
                reached.append(f"{name} on {node}")
            else:
                last = f": {errors[-1]}" if errors else ""
                got = f"answered {sorted(seen)}" if seen else "no answer"
                failures.append(f"pod {name} ({ip}:{P} on {node}): {got}{last}")
        nodes = sorted({pod.spec.node_name for pod in endpoints})
        if failures:
            raise TestFailed(
                f"SCTP from the test container did not reach {len(failures)} of "
                f"{len(endpoints)} endpoint pod(s): " + "; ".join(failures)
            )
        return (
            f"SCTP from the test container reached every endpoint pod with its hostname "
            f"({', '.join(reached)}; {len(nodes)} distinct node(s))"
        )
