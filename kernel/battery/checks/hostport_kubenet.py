"""hostport-kubenet: a pod with an SCTP hostPort runs without loading sctp.ko.

Upstream's "should allow creating a Pod with an SCTP HostPort [LinuxOnly]" (Networking,
test/e2e/network/networking.go, [Serial]) runs on every cluster (the kubenet gate went with
kubernetes#96640): sctp.ko on the pod's node before, `CreateSync` of the hostPort 5060/SCTP
pod, sctp.ko after; it checks no iptables rule. Ours is stricter on kubenet clusters only:
there the nat-table path of the hostPort to the pod must appear too (an older upstream's grep
of `iptables-save`), in the chains the CNI portmap plugin writes (CNI-HOSTPORT-DNAT ->
CNI-DN-<hash>, what a kubenet cluster's bridge/host-local/portmap run) or the in-tree hostport
manager wrote before 1.24 (KUBE-HOSTPORTS -> KUBE-HP-<hash>); elsewhere the CNI writes
whatever its dataplane uses. It does not connect to the hostPort over SCTP: a client would
load sctp.ko itself, and this is a basic test.
"""

from __future__ import annotations

from kernel.battery import nodeparse, pods
from kernel.battery.base import BatteryTest, TestFailed
from kernel.battery.checks._common import SCTP_PORT, poll_node_rules
from kernel.battery.context import RunContext, TestContext
from kernel.vocabulary import Battery, Key


def hostport_node(run: RunContext) -> str:
    """The first ready, schedulable, untainted node (upstream picks one at random)."""
    return (run.schedulable_nodes or run.nodes)[0]


class HostportKubenet(BatteryTest):
    key = Key.HOSTPORT_KUBENET
    title = "Pods can declare SCTP HostPorts when using kubenet"
    battery = Battery.BASIC
    needs_node_access = True

    def module_nodes(self, run: RunContext) -> list[str] | None:
        # Upstream: GetRandomReadySchedulableNode, the hostPort pod's node, alone.
        return [hostport_node(run)]

    def run(self, ctx: TestContext) -> str:
        node = hostport_node(ctx.run)
        body = pods.pause_pod(
            "hostport",
            ctx.image,
            [pods.port(SCTP_PORT, "SCTP", host_port=SCTP_PORT)],
            {"app": "sctp-hostport"},
            node,
        )
        pod = ctx.start_server(body)  # an admission refusal ends it `skipped` (the runner)
        declared = [(p.host_port, p.protocol) for c in pod.spec.containers for p in c.ports or []]
        if (SCTP_PORT, "SCTP") not in declared:
            raise TestFailed(
                f"the pod did not keep hostPort {SCTP_PORT}/SCTP (read back {declared})"
            )
        if pod.spec.node_name != node or not pod.status.host_ip:
            raise TestFailed(
                f"the hostPort pod runs on {pod.spec.node_name} (hostIP {pod.status.host_ip}), "
                f"not on the node it was bound to ({node})"
            )
        ctx.note(f"pod hostport running on {node}, hostPort {pod.status.host_ip}:{SCTP_PORT}/SCTP")
        if not ctx.spec.kubenet:
            return (
                f"a pod with SCTP hostPort {SCTP_PORT} runs on {node} "
                f"(hostIP {pod.status.host_ip}); iptables hostPort rule not checked: "
                f"kubenet is not in use ({ctx.spec.plugin_slug})"
            )
        # Upstream once grepped `iptables-save` for a line holding `-p sctp` and `--dport 5060`;
        # here the nat table's path of this hostPort to this pod, as the CNI portmap plugin
        # writes it (CNI-HOSTPORT-DNAT -> CNI-DN-…, what kubenet clusters run) or the old
        # in-tree hostport manager did (KUBE-HOSTPORTS -> KUBE-HP-…): nodeparse.HOSTPORT_CHAINS.
        want = f"{pod.status.pod_ip}:{SCTP_PORT}"

        def find(text: str) -> list[str]:
            for path in nodeparse.iptables_hostport_paths(text, SCTP_PORT):
                if want in path.destinations:
                    return [path.entry, *path.dnat]
            return []

        rules = poll_node_rules(ctx, node, "iptables-save", find)
        if not rules:
            raise TestFailed(
                f"no nat-table rule for SCTP hostPort {SCTP_PORT} DNATing to {want} on node "
                f"{node} (CNI-HOSTPORT-DNAT -> CNI-DN-*, as portmap writes it, or "
                f"KUBE-HOSTPORTS -> KUBE-HP-*) within {ctx.spec.timeouts.rules_poll:g}s"
            )
        ctx.note(f"iptables-save on {node}:")
        ctx.evidence.extend(f"  {line}" for line in rules)
        return (
            f"iptables on node {node} carries SCTP hostPort {SCTP_PORT} to the pod ({want}): "
            f"{rules[0].split()[1]} -> {rules[1].split()[1]} DNAT"
        )
