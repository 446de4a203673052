"""Whether the nodes' kernels have SCTP sockets: what the connectivity tests need first.

Upstream's SCTP connectivity specs carry `[Feature:SCTPConnectivity]`
(test/e2e/feature/feature.go; networking.go, common/network/networking.go, dual_stack.go,
netpol's SCTP Describe). The label is no skip of e2e.test's own: focused on a node without
SCTP the specs run and fail (measured on the real cluster: the netserver pods crash-loop and
each spec times out after 5 min), because agnhost's SCTP servers (`netexec --sctp-port`,
`porter`) exit on `socket: protocol not supported` before any connection, so they cannot tell
the plugin apart from the kernel. Upstream's runners (its CI jobs, Sonobuoy, Hydrophone) leave
the label out with `--ginkgo.skip` on clusters without the feature; the `upstream` battery
does too, deciding with this probe (kernel.battery.features).

So before its first connectivity test the battery asks each counted node's kernel once, with
one host-network `agnhost connect 127.0.0.1:PORT --protocol=sctp` pod per node (the connectivity tests
load sctp.ko anyway, and they run after the basic tests): a kernel without SCTP answers
`OTHER: protocol not supported` (EPROTONOSUPPORT from socket(2)); one with it answers
something else (an ABORT from the closed port: `OTHER: connection refused`). Where any
counted node's kernel has no SCTP, every connectivity test is skipped with that reason, as
upstream's label would skip it. A probe that cannot be read (a pod that does not run, an API
error) decides nothing: the tests then run and speak for themselves.
"""

from __future__ import annotations

from kubernetes.client.exceptions import ApiException

from kernel.battery import pods, schedulable
from kernel.battery.base import TestVerdict
from kernel.battery.context import FINISHED_PHASES, RunContext, TestContext, parse_connect_log
from kernel.kube import KubeError

PROBE_PORT = 9  # the discard port: nothing listens there in the probe pod
NO_SCTP = "protocol not supported"  # Go's text of EPROTONOSUPPORT


def _nodes(run: RunContext) -> list[str]:
    return (run.schedulable_nodes or run.nodes)[: schedulable.MAX_NET_PROXY_PODS]


def probe(run: RunContext) -> None:
    """Ask each counted node's kernel once (run.kernel_sctp: node -> "yes" | "no" | "unknown")."""
    if run.kernel_sctp is not None:
        return
    run.kernel_sctp = {}
    nodes = _nodes(run)
    if not nodes:
        return
    ctx = TestContext(run, run.create_namespace("kernel-sctp"))
    created: dict[str, str] = {}
    timeouts = run.spec.timeouts
    try:
        for node in nodes:
            name = run.unique(f"kernel-sctp-{pods.dns_label(node, 30)}")
            body = pods.client_pod(
                name,
                run.spec.agnhost_image,
                "127.0.0.1",
                PROBE_PORT,
                "sctp",
                timeouts.connect,
                {"app": "kernel-sctp"},
                node,
            )
            # In the node's network namespace: the kernel is the node's either way, and the
            # probe takes no pod address and needs no pod network.
            body["spec"]["hostNetwork"] = True
            body["spec"]["tolerations"] = [{"operator": "Exists"}]
            ctx.create_pod(body)
            created[node] = name
        for node, name in created.items():
            pod = ctx.wait_pod(name, FINISHED_PHASES, timeouts.pod_start + timeouts.connect)
            log = ctx.pod_log(name)
            word, detail = parse_connect_log(log)
            if pod.status.phase != "Succeeded" and word == "OTHER" and NO_SCTP in detail:
                run.kernel_sctp[node] = "no"
                run.kernel_sctp_evidence.append(
                    f"node {node}: `agnhost connect 127.0.0.1:{PROBE_PORT} --protocol=sctp` "
                    f"answered {log.strip()[-200:]!r}: its kernel has no SCTP sockets"
                )
            elif pod.status.phase == "Succeeded" or word:
                run.kernel_sctp[node] = "yes"
                said = "connected" if pod.status.phase == "Succeeded" else log.strip()[-200:]
                run.kernel_sctp_evidence.append(
                    f"node {node}: `agnhost connect 127.0.0.1:{PROBE_PORT} --protocol=sctp` "
                    f"answered {said!r}: its kernel has SCTP sockets"
                )
            else:
                run.kernel_sctp[node] = "unknown"
                run.kernel_sctp_evidence.append(
                    f"node {node}: the SCTP probe's answer could not be read "
                    f"({pod.status.phase}, log {log.strip()[-200:]!r}): nothing decided"
                )
    except (TestVerdict, ApiException, KubeError) as exc:
        why = exc.reason if isinstance(exc, TestVerdict) else str(exc).strip()[:300]
        for node in nodes:
            run.kernel_sctp.setdefault(node, "unknown")
        run.kernel_sctp_evidence.append(f"the nodes' SCTP probe did not run: {why}")


def skip_reason(run: RunContext) -> str | None:
    """Why no connectivity test can run here (a node's kernel has no SCTP), or None."""
    probe(run)
    without = [node for node, state in (run.kernel_sctp or {}).items() if state == "no"]
    if not without:
        return None
    whose = "kernels of nodes" if len(without) > 1 else "kernel of node"
    have = "have" if len(without) > 1 else "has"
    return (
        f"[Feature:SCTPConnectivity]: the {whose} {', '.join(without)} {have} no SCTP sockets (`agnhost connect --protocol=sctp`: "
        f"`OTHER: {NO_SCTP}`), so no SCTP server can listen there; upstream runs its SCTP "
        "connectivity specs only on clusters with that feature and skips them elsewhere, "
        "so this test is skipped, neither passed nor failed: it says nothing about the plugin"
    )
