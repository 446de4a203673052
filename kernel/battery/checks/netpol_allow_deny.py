"""netpol-allow-deny: NetworkPolicy allows and denies SCTP, checked as whole reachability matrices.

Upstream's three SCTP specs (test/e2e/network/netpol/network_policy.go, "Netpol
[Feature:SCTPConnectivity] [LinuxOnly] NetworkPolicy between server and client using SCTP"),
with upstream's model: namespaces x, y, z, pods a, b, c in each, every pod serving SCTP on 80
and 81 behind its own Service, and every pod probing every pod through that Service
(upstream's ProbeConnectivity dials the Service, never the pod IP). Each case compares the
whole 9 x 9 matrix with the expected reachability:

- "should support a 'default-deny-ingress' policy": deny-all in x; nothing reaches x, all
  else is reachable (port 80);
- "should enforce policy based on Ports": x/a admits SCTP on 81 from namespace y only (the
  `from: namespaceSelector y` peer); x and z cannot reach x/a, everything else can (port 81);
- "should enforce policy to allow traffic only from a pod in a different namespace based on
  PodSelector and NamespaceSelector": only y/a reaches x/a (port 80), as upstream's
  `allow-ns-y-pod-a-via-namespace-pod-selector` at every tag (v1.34.4 … v1.37.2).

Controls of our own, kept: before any policy the Services answer (a positive control, so a
plugin that blocks everything cannot pass), and the matrices hold allowed cells as well as
denied ones. docs/upstream-mapping.md says where recent master uses fewer pods.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernel.battery import pods
from kernel.battery.base import BatteryTest, TestFailed
from kernel.battery.checks._common import no_network_policy_reason, why
from kernel.battery.context import ConnectResult, RunContext, TestContext
from kernel.vocabulary import Battery, Key

NS_LABEL = "sctp-dashboard/netpol-ns"  # kubernetes.io/metadata.name exists only from 1.21
P80, P81 = 80, 81
NAMESPACES = ("x", "y", "z")
PODS = ("a", "b", "c")
ALL = [f"{n}/{p}" for n in NAMESPACES for p in PODS]
SERVER = {"sctp-dashboard/netpol-role": "server"}


@dataclass(frozen=True)
class Case:
    name: str  # upstream's policy name
    spec: str  # upstream's It text
    pod_selector: dict[str, str]
    ingress: list[dict[str, Any]]
    port: int
    allowed: Callable[[str, str], bool]  # (from "y/a", to "x/a") -> reachable


def _ns(peer: str) -> str:
    return peer.split("/")[0]


CASES: list[Case] = [
    Case(
        "deny-all",
        "should support a 'default-deny-ingress' policy",
        {},
        [],
        P80,
        lambda src, dst: _ns(dst) != "x",
    ),
    Case(
        "allow-ingress-on-port-81-ns-x",
        "should enforce policy based on Ports",
        {"pod": "a"},
        [
            {
                "from": [{"namespaceSelector": {"matchLabels": {NS_LABEL: "y"}}}],
                "ports": [{"protocol": "SCTP", "port": P81}],
            }
        ],
        P81,
        lambda src, dst: not (dst == "x/a" and _ns(src) in ("x", "z")),
    ),
    Case(
        "allow-ns-y-pod-a-via-namespace-pod-selector",
        "should enforce policy to allow traffic only from a pod in a different namespace "
        "based on PodSelector and NamespaceSelector",
        {"pod": "a"},
        [
            {
                "from": [
                    {
                        "namespaceSelector": {"matchLabels": {NS_LABEL: "y"}},
                        "podSelector": {"matchLabels": {"pod": "a"}},
                    }
                ]
            }
        ],
        P80,
        lambda src, dst: dst != "x/a" or src == "y/a",
    ),
]


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
        for target in ALL:
            letter, pod = target.split("/")
            node = ctx.node(0 if letter == "x" else 1)
            spaces[letter].create_pod(
                pods.porter_multi_pod(
                    f"server-{pod}", ctx.image, (P80, P81), {"pod": pod, **SERVER}, node
                )
            )
        vips: dict[str, str] = {}
        for target in ALL:
            letter, pod = target.split("/")
            space = spaces[letter]
            space.wait_pod(f"server-{pod}", ("Running",), ctx.spec.timeouts.pod_start)
            # The Service selects its server only, never the client pods that stand in for
            # the same pod (they carry its `pod` label for the policies' selectors).
            body = pods.service(f"s-{pod}", {"pod": pod, **SERVER}, P80, P80)
            body["spec"]["ports"].append(
                {"name": f"sctp-{P81}", "port": P81, "targetPort": P81, "protocol": "SCTP"}
            )
            service = space.create_service(body)
            vips[target] = service.spec.cluster_ip
        for target in ALL:
            letter, pod = target.split("/")
            spaces[letter].wait_endpoints(f"s-{pod}", "SCTP")
        ctx.note(
            "servers (SCTP 80, 81) behind their Services: "
            + ", ".join(f"{t} {vips[t]}" for t in ALL)
        )

        def probe(cells: list[tuple[str, str]], port: int) -> dict[tuple[str, str], ConnectResult]:
            batch = [
                (spaces[_ns(src)], vips[dst], port, "sctp", {"pod": src.split("/")[1]})
                for src, dst in cells
            ]
            return dict(zip(cells, ctx.connect_batch(batch, ctx.node(1)), strict=True))

        # Positive control: before any policy, the Services carry SCTP.
        control = [("z/c", "x/a"), ("x/b", "x/a"), ("y/a", "z/b")]
        found = probe(control, P80)
        dead = [f"{s} -> {d}: {why(r)}" for (s, d), r in found.items() if not r.ok]
        if dead:
            raise TestFailed(
                "before any policy, SCTP through the pods' Services does not connect "
                f"({'; '.join(dead)}): the policies cannot be judged"
            )
        ctx.note(f"no policy: {len(control)} control probes connected")

        wrong: list[str] = []
        for case in CASES:
            x = spaces["x"]
            x.create_policy(pods.network_policy(case.name, case.pod_selector, case.ingress))
            cells = [(src, dst) for src in ALL for dst in ALL]
            results = probe(cells, case.port)
            bad = [c for c in cells if results[c].ok != case.allowed(*c)]
            attempts = max(1, ctx.spec.timeouts.connect_attempts)
            for _ in range(attempts - 1):  # policies take effect after a lag: re-probe
                if not bad:
                    break
                ctx.run.pause(ctx.spec.timeouts.poll_interval)
                results.update(probe(bad, case.port))
                bad = [c for c in cells if results[c].ok != case.allowed(*c)]
            ctx.note(f"{case.name} (port {case.port}): {_matrix(cells, results, case)}")
            for src, dst in bad:
                result = results[(src, dst)]
                if case.allowed(src, dst):
                    wrong.append(
                        f"{case.name}: {src} -> {dst}:{case.port} should be allowed but {why(result)}"
                    )
                else:
                    wrong.append(
                        f"{case.name}: {src} -> {dst}:{case.port} should be denied but got through"
                    )
            x.delete_policy(case.name)
        if wrong:
            shown = "; ".join(wrong[:12]) + (
                f"; … {len(wrong) - 12} more" if len(wrong) > 12 else ""
            )
            raise TestFailed(
                f"{len(wrong)} of {len(CASES) * len(ALL) ** 2} SCTP probe(s) wrong: {shown}"
            )
        names = ", ".join(c.name for c in CASES)
        return (
            f"upstream's three SCTP NetworkPolicy cases ({names}): every cell of each "
            f"{len(ALL)}x{len(ALL)} reachability matrix (namespaces x, y, z; pods a, b, c; "
            "through each pod's Service) as expected"
        )


def _matrix(cells: list[tuple[str, str]], results: dict[tuple[str, str], Any], case: Case) -> str:
    """Upstream's truth-table rows: one line per source, `.` reachable, `X` not, `!` wrong."""
    rows = []
    for src in ALL:
        marks = ""
        for dst in ALL:
            ok = results[(src, dst)].ok
            mark = "." if ok else "X"
            marks += mark if ok == case.allowed(src, dst) else "!"
        rows.append(f"{src} {marks}")
    return "to " + " ".join(ALL) + " | " + " | ".join(rows)
