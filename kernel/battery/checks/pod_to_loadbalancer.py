"""pod-to-loadbalancer: SCTP reaches a pod through a LoadBalancer service's ingress IP."""

from __future__ import annotations

from typing import Any

from kernel import sctp_host
from kernel.battery import pods
from kernel.battery.base import BatteryTest, TestFailed, TestSkipped
from kernel.battery.checks._common import SCTP_PORT, why
from kernel.battery.context import RunContext, TestContext
from kernel.vocabulary import Battery, Key


class PodToLoadBalancer(BatteryTest):
    key = Key.POD_TO_LOADBALANCER
    title = "A pod can connect to another pod via SCTP via a Load Balancer"
    battery = Battery.CONNECTIVITY

    def skip_reason(self, run: RunContext) -> str | None:
        if not run.spec.load_balancer:
            return "the cluster has no load balancer (registered without one)"
        return None

    def run(self, ctx: TestContext) -> str:
        labels = {"app": "sctp-server"}
        ctx.start_server(pods.porter_pod("sctp-server", ctx.image, SCTP_PORT, labels, ctx.node(0)))
        ctx.create_service(
            pods.service("sctp-lb", labels, SCTP_PORT, SCTP_PORT, service_type="LoadBalancer")
        )
        address, short_circuited = self._wait_ingress(ctx)
        ctx.run.report.fingerprint["load_balancer"] = True
        ctx.note(f"service sctp-lb: load balancer ingress {address}:{SCTP_PORT}")

        worker = ctx.run.report.fingerprint.get("worker_sctp") or sctp_host.check_worker_sctp()
        if worker.get("available"):
            ok, detail = sctp_host.sctp_connect(address, SCTP_PORT, ctx.spec.timeouts.connect)
            ctx.note(f"worker client: {detail}")
            if ok:
                return (
                    f"SCTP connected from outside the cluster (the worker) to {address}:{SCTP_PORT}"
                )
            ctx.note("the worker could not reach the load balancer; used an in-cluster client pod")
        else:
            ctx.note(
                "worker host has no kernel SCTP; used an in-cluster client pod "
                f"({worker.get('reason', 'unknown')})"
            )
        result = ctx.connect_expect(address, SCTP_PORT, "sctp", expect_ok=True, node=ctx.node(1))
        if not result.ok:
            raise TestFailed(f"SCTP to the load balancer {address}:{SCTP_PORT} {why(result)}")
        if short_circuited:
            # kube-proxy (and the eBPF replacements) bind a LoadBalancer's ingress IP on every
            # node: a pod's packets to it never leave the cluster's service rules, so this
            # proves nothing about the load balancer. Never a pass.
            raise TestSkipped(
                f"short-circuited: SCTP reached {address}:{SCTP_PORT} only from inside the "
                "cluster, where the service rules answer for the load balancer's ingress IP "
                "(ipMode VIP) before any packet reaches it; the worker could not reach it "
                "from outside"
            )
        return (
            f"SCTP connected from a pod to the load balancer {address}:{SCTP_PORT} "
            "(ingress ipMode Proxy or a hostname: the traffic goes through the load balancer)"
        )

    @staticmethod
    def _wait_ingress(ctx: TestContext) -> tuple[str, bool]:
        """(address, short-circuited in-cluster): an ingress IP is short-circuited by the
        service rules unless its ipMode is Proxy (KEP-1860); a hostname is not."""
        timeout = ctx.spec.timeouts.lb_ingress
        deadline = ctx.run.clock() + timeout
        while True:
            ctx.run.tick()
            svc: Any = ctx.kube.call(
                ctx.kube.core.read_namespaced_service, "sctp-lb", ctx.namespace
            )
            lb = svc.status.load_balancer if svc.status else None
            for ingress in (lb.ingress if lb else None) or []:
                if ingress.ip:
                    mode = getattr(ingress, "ip_mode", None) or "VIP"
                    return str(ingress.ip), mode != "Proxy"
                if ingress.hostname:
                    return str(ingress.hostname), False
            if ctx.run.clock() >= deadline:
                ctx.run.report.fingerprint["load_balancer"] = False
                raise TestSkipped(f"no load balancer ingress within {timeout:g}s")
            ctx.run.pause(ctx.spec.timeouts.poll_interval)
