"""pod-to-pod: every endpoint pod answers SCTP with its hostname, pod IP to pod IP.

Upstream's "Granular Checks: Pods should function for intra-pod communication: sctp
[LinuxOnly]" (test/e2e/common/network/networking.go, checkPodToPodConnectivity) through
NewNetworkingTestConfig: it skips below 2 ready, schedulable, untainted nodes; one netexec
endpoint per such node (at most 10), each dialled from the test container over SCTP and
expected to reply with its name: a breadth-first pass of one try each, then MaxTries
(endpoints² + 30, 2 s apart) for the endpoints that did not answer.
"""

from __future__ import annotations

from kernel.battery.base import BatteryTest, TestFailed
from kernel.battery.checks._common import (
    ENDPOINT_SCTP_PORT,
    networking_skip,
    start_endpoint_pods,
    start_test_container,
    tester_node,
    upstream_max_tries,
)
from kernel.battery.context import RunContext, TestContext
from kernel.vocabulary import Battery, Key


class PodToPod(BatteryTest):
    key = Key.POD_TO_POD
    title = "A pod can connect directly to another pod via SCTP"
    battery = Battery.CONNECTIVITY

    def skip_reason(self, run: RunContext) -> str | None:
        return networking_skip(run, "intra-pod communication spec")

    def run(self, ctx: TestContext) -> str:
        endpoints = start_endpoint_pods(ctx, {"app": "sctp-netserver"})
        node = tester_node(ctx.run)
        tester_ip = start_test_container(ctx, node)
        P = ENDPOINT_SCTP_PORT
        max_tries = upstream_max_tries(len(endpoints))
        ctx.note(f"MaxTries {max_tries} for {len(endpoints)} endpoint(s) (endpoints² + 30)")
        failures: list[str] = []
        reached: list[str] = []
        # Breadth first: one try each; then MaxTries for the ones not seen (upstream's order).
        first: dict[str, tuple[set[str], list[str]]] = {}
        for pod in endpoints:
            name, ip = pod.metadata.name, pod.status.pod_ip
            first[name] = ctx.dial_expect(
                tester_ip, ip, P, "sctp", {name}, node=node, what=f"to {name}", max_tries=1
            )
        for pod in endpoints:
            name, ip, where = pod.metadata.name, pod.status.pod_ip, pod.spec.node_name
            seen, errors = first[name]
            if seen != {name}:
                seen, errors = ctx.dial_expect(
                    tester_ip,
                    ip,
                    P,
                    "sctp",
                    {name},
                    node=node,
                    what=f"to {name} (second pass)",
                    max_tries=max_tries,
                )
            if seen == {name}:
                reached.append(f"{name} on {where}")
            else:
                last = f": {errors[-1]}" if errors else ""
                got = f"answered {sorted(seen)}" if seen else "no answer"
                failures.append(f"pod {name} ({ip}:{P} on {where}): {got}{last}")
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
