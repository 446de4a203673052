"""Small helpers shared by several checks."""

from __future__ import annotations

from collections.abc import Callable

from workers.battery.base import TestFailed
from workers.battery.context import ConnectResult, TestContext

SCTP_PORT = 5060  # the port upstream's basic SCTP tests declare
VERBS = {"TIMEOUT": "timed out", "REFUSED": "was refused", "DNS": "did not resolve"}


def verb(result: ConnectResult) -> str:
    return VERBS.get(result.word, "failed")


def no_network_policy_reason(slug: str) -> str:
    return f"the plugin {slug} does not implement NetworkPolicy"


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
