"""hostport-kubenet: an SCTP hostPort pod gets an iptables rule on its node."""

from __future__ import annotations

from kubernetes.client.exceptions import ApiException

from workers.battery import nodeparse, pods
from workers.battery.base import BatteryTest, TestFailed, TestSkipped
from workers.battery.checks._common import SCTP_PORT, poll_node_rules
from workers.battery.context import RunContext, TestContext
from workers.kube import api_error_message


class HostportKubenet(BatteryTest):
    key = "hostport-kubenet"
    title = "Pods can declare SCTP HostPorts when using kubenet"
    battery = "basic"
    needs_node_access = True

    def skip_reason(self, run: RunContext) -> str | None:
        if not run.spec.kubenet:
            return f"kubenet not in use: the cluster's network plugin is {run.spec.plugin_slug}"
        return None

    def run(self, ctx: TestContext) -> str:
        node = ctx.node(0)
        assert node is not None
        body = pods.pause_pod(
            "sctp-hostport",
            ctx.image,
            [pods.port(SCTP_PORT, "SCTP", host_port=SCTP_PORT)],
            {"app": "sctp-hostport"},
            node,
        )
        try:
            ctx.start_server(body)
        except ApiException as exc:
            if exc.status == 403:  # PodSecurity "baseline" forbids hostPorts
                raise TestSkipped(f"no node access: {api_error_message(exc)}") from exc
            raise
        # Upstream: a line of `iptables-save` holding `-p sctp` and `--dport 5060`.
        rules = poll_node_rules(
            ctx,
            node,
            "iptables-save",
            lambda text: nodeparse.iptables_sctp_rules(text, dport=SCTP_PORT),
        )
        if not rules:
            raise TestFailed(
                f"no iptables rule for SCTP hostPort {SCTP_PORT} on node {node} within "
                f"{ctx.spec.timeouts.rules_poll:g}s"
            )
        ctx.note(f"iptables-save on {node}:")
        ctx.evidence.extend(f"  {line}" for line in rules)
        return f"iptables on node {node} has {len(rules)} SCTP rule(s) for hostPort {SCTP_PORT}"
