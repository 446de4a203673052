"""pod-to-loadbalancer: SCTP reaches a pod through a LoadBalancer service's ingress IP."""

from __future__ import annotations

from typing import Any

from workers import sctp_host
from workers.battery import pods
from workers.battery.base import BatteryTest, TestFailed, TestSkipped
from workers.battery.checks._common import SCTP_PORT, why
from workers.battery.context import RunContext, TestContext
from workers.vocabulary import Battery, Key


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
        address = self._wait_ingress(ctx)
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
        return f"SCTP connected from a pod to the load balancer {address}:{SCTP_PORT}"

    @staticmethod
    def _wait_ingress(ctx: TestContext) -> str:
        timeout = ctx.spec.timeouts.lb_ingress
        deadline = ctx.run.clock() + timeout
        while True:
            ctx.run.tick()
            svc: Any = ctx.kube.call(
                ctx.kube.core.read_namespaced_service, "sctp-lb", ctx.namespace
            )
            lb = svc.status.load_balancer if svc.status else None
            for ingress in (lb.ingress if lb else None) or []:
                if ingress.ip or ingress.hostname:
                    return str(ingress.ip or ingress.hostname)
            if ctx.run.clock() >= deadline:
                ctx.run.report.fingerprint["load_balancer"] = False
                raise TestSkipped(f"no load balancer ingress within {timeout:g}s")
            ctx.run.pause(ctx.spec.timeouts.poll_interval)
