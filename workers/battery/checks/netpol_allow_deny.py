"""netpol-allow-deny: NetworkPolicy allows and denies SCTP, across three namespaces.

The SCTP cases of upstream's test/e2e/network/netpol/network_policy.go
([Feature:SCTPConnectivity]), in namespaces x, y, z as upstream's model has them:

- "should support a 'default-deny-ingress' policy": nothing reaches x, y is unaffected;
- "should enforce policy based on Ports": x/a accepts SCTP on 81 only, x/b is unaffected;
- "should enforce policy to allow traffic only from a pod in a different namespace based on
  PodSelector and NamespaceSelector": only pod b of namespace y reaches x/a.

Each case has allowed and denied probes (agnhost connect, as upstream's prober), so neither a
plugin that enforces nothing nor one that blocks everything passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workers.battery import pods
from workers.battery.base import BatteryTest, TestFailed
from workers.battery.checks._common import no_network_policy_reason, why
from workers.battery.context import RunContext, TestContext
from workers.vocabulary import Battery, Key

NS_LABEL = "sctp-dashboard/netpol-ns"  # kubernetes.io/metadata.name exists only from 1.21
P80, P81 = 80, 81


@dataclass
class Probe:
    source: str  # "z/c": namespace letter / pod label
    target: str  # "x/a"
    port: int
    allowed: bool


CASES: list[tuple[str, dict[str, Any], list[Probe]]] = [
    (
        "default-deny-ingress",
        {"pod_selector": {}, "ingress": []},
        [
            Probe("z/c", "x/a", P80, False),
            Probe("x/b", "x/a", P80, False),
            Probe("x/c", "y/a", P80, True),
        ],
    ),
    (
        "allow-ingress-on-port-81",
        {"pod_selector": {"pod": "a"}, "ingress": [{"ports": [{"protocol": "SCTP", "port": P81}]}]},
        [
            Probe("z/c", "x/a", P81, True),
            Probe("z/c", "x/a", P80, False),
            Probe("z/c", "x/b", P80, True),
        ],
    ),
    (
        "allow-ns-y-pod-b",
        {
            "pod_selector": {"pod": "a"},
            "ingress": [
                {
                    "from": [
                        {
                            "namespaceSelector": {"matchLabels": {NS_LABEL: "y"}},
                            "podSelector": {"matchLabels": {"pod": "b"}},
                        }
                    ]
                }
            ],
        },
        [
            Probe("y/b", "x/a", P80, True),
            Probe("y/c", "x/a", P80, False),
            Probe("z/b", "x/a", P80, False),
            Probe("x/b", "x/a", P80, False),
        ],
    ),
]

SERVERS = {"x/a": (P80, P81), "x/b": (P80,), "y/a": (P80,)}


class NetpolAllowDeny(BatteryTest):
    key = Key.NETPOL_ALLOW_DENY
    title = "NetworkPolicy can be used to allow or deny traffic to SCTP ports"
    battery = Battery.CONNECTIVITY

    def skip_reason(self, run: RunContext) -> str | None:
        if not run.spec.implements_network_policy:
            return no_network_policy_reason(run.spec.plugin_slug)
        return None

    def run(self, ctx: TestContext) -> str:
        spaces: dict[str, TestContext] = {}
        extra: list[str] = []
        try:
            for letter in ("x", "y", "z"):
                name = ctx.run.create_namespace(f"{self.key}-{letter}", {NS_LABEL: letter})
                extra.append(name)
                other = TestContext(ctx.run, name)
                other.evidence = ctx.evidence  # one test, one evidence list
                spaces[letter] = other
            return self._cases(ctx, spaces)
        finally:
            for name in extra:
                problem = ctx.run.delete_namespace(name)
                if problem:
                    ctx.run.report.errors.append(problem)

    def _cases(self, ctx: TestContext, spaces: dict[str, TestContext]) -> str:
        ips: dict[str, str] = {}
        for target, ports in SERVERS.items():
            letter, pod = target.split("/")
            body = pods.porter_multi_pod(
                f"server-{pod}", ctx.image, ports, {"pod": pod}, ctx.node(0 if letter == "x" else 1)
            )
            spaces[letter].create_pod(body)
        for target in SERVERS:
            letter, pod = target.split("/")
            ready = spaces[letter].wait_pod(
                f"server-{pod}", ("Running",), ctx.spec.timeouts.pod_start
            )
            ips[target] = ready.status.pod_ip
            ctx.note(f"server {target} at {ips[target]} serving SCTP {SERVERS[target]}")

        def probe(p: Probe, what: str) -> str | None:
            letter, label = p.source.split("/")
            result = spaces[letter].connect_expect(
                ips[p.target],
                p.port,
                "sctp",
                expect_ok=p.allowed,
                node=ctx.node(1),
                labels={"pod": label},
                what=f"{what}, {p.source} -> {p.target}:{p.port}",
            )
            if result.ok == p.allowed:
                return None
            if p.allowed:
                return f"{p.source} -> {p.target}:{p.port} should be allowed but {why(result)}"
            return f"{p.source} -> {p.target}:{p.port} should be denied but got through"

        baseline = probe(Probe("z/c", "x/a", P80, True), "no policy")
        if baseline:
            raise TestFailed(f"before any policy, SCTP {baseline}: the policies cannot be judged")
        wrong: list[str] = []
        for name, spec, probes in CASES:
            x = spaces["x"]
            x.create_policy(pods.network_policy(name, spec["pod_selector"], spec["ingress"]))
            wrong += [f"{name}: {w}" for p in probes if (w := probe(p, name))]
            x.delete_policy(name)
        if wrong:
            raise TestFailed(f"{len(wrong)} SCTP probe(s) wrong: " + "; ".join(wrong))
        count = sum(len(p) for _n, _s, p in CASES)
        names = ", ".join(n for n, _s, _p in CASES)
        return (
            f"SCTP NetworkPolicy cases across namespaces x, y, z ({names}): "
            f"all {count} allowed and denied probes as expected"
        )
