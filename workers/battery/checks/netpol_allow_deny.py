"""netpol-allow-deny: NetworkPolicy allows and denies SCTP as written."""

from __future__ import annotations

from workers.battery import pods
from workers.battery.base import BatteryTest
from workers.battery.checks._common import SCTP_PORT, no_network_policy_reason, require
from workers.battery.context import RunContext, TestContext

ALLOWED = {"app": "client"}
OTHER = {"app": "other"}


class NetpolAllowDeny(BatteryTest):
    key = "netpol-allow-deny"
    title = "NetworkPolicy can be used to allow or deny traffic to SCTP ports"
    battery = "connectivity"

    def skip_reason(self, run: RunContext) -> str | None:
        if not run.spec.implements_network_policy:
            return no_network_policy_reason(run.spec.plugin_slug)
        return None

    def run(self, ctx: TestContext) -> str:
        labels = {"app": "sctp-server"}
        server = ctx.start_server(
            pods.porter_pod("sctp-server", ctx.image, SCTP_PORT, labels, ctx.node(0))
        )
        ip, node, P = server.status.pod_ip, ctx.node(1), SCTP_PORT

        r = ctx.connect_expect(
            ip, P, "sctp", expect_ok=True, node=node, labels=ALLOWED, what="no policy"
        )
        require(r, True, f"SCTP to {ip}:{P} did not work before any policy ({r.word})")

        ctx.create_policy(pods.network_policy("default-deny-ingress", {}, []))
        r = ctx.connect_expect(
            ip, P, "sctp", expect_ok=False, node=node, labels=ALLOWED, what="default-deny-ingress"
        )
        require(r, False, f"SCTP to {ip}:{P} got through a default-deny-ingress policy")

        ctx.create_policy(
            pods.network_policy(
                "allow-sctp-from-client",
                labels,
                [
                    {
                        "from": [{"podSelector": {"matchLabels": dict(ALLOWED)}}],
                        "ports": [{"protocol": "SCTP", "port": P}],
                    }
                ],
            )
        )
        r = ctx.connect_expect(
            ip,
            P,
            "sctp",
            expect_ok=True,
            node=node,
            labels=ALLOWED,
            what="allow policy, matched client",
        )
        require(
            r,
            True,
            f"SCTP to {ip}:{P} was denied ({r.word}) although a policy allows SCTP/{P} from the client",
        )

        r = ctx.connect_expect(
            ip, P, "sctp", expect_ok=False, node=node, labels=OTHER, what="allow policy, other pod"
        )
        require(
            r,
            False,
            f"SCTP to {ip}:{P} from a pod not matched by the policy's podSelector got through",
        )
        return (
            f"SCTP to port {P} worked without a policy, was denied by default-deny-ingress, "
            "allowed by a policy for SCTP from the client, and denied to a pod outside its podSelector"
        )
