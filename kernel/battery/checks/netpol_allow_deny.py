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

Probing as upstream's prober (netpol/kubemanager.go, probe.go, test_helper.go): the model
pods are made once, before any policy, and probe from themselves (a `prober` container
looping over `agnhost connect`; its log is read, no exec); servers must be ready first (the
whole matrix connects within waitForHTTPServers' 10 passes); each case is a first pass, every
cell polled up to `netpol_poll` (10 s) until it shows the expected result, and a second pass
when a cell was wrong; loopback cells are ignored. docs/upstream-mapping.md cites each rule
and says where recent releases use fewer pods.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernel.battery import pods
from kernel.battery.base import BatteryTest, TestFailed
from kernel.battery.checks._common import network_policy_skip, why
from kernel.battery.context import CONNECT_WORDS, ConnectResult, RunContext, TestContext
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
        return network_policy_skip(run.spec)

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
        timeouts = ctx.spec.timeouts
        # The Services first: their ClusterIPs are what every model pod probes (upstream's
        # prober dials job.PodTo.ServiceIP, never the pod IP).
        vips: dict[str, str] = {}
        for target in ALL:
            letter, pod = target.split("/")
            body = pods.service(f"s-{pod}", {"pod": pod, **SERVER}, P80, P80)
            body["spec"]["ports"].append(
                {"name": f"sctp-{P81}", "port": P81, "targetPort": P81, "protocol": "SCTP"}
            )
            vips[target] = spaces[letter].create_service(body).spec.cluster_ip
        targets = [pods.connect_target(vips[t], p) for t in ALL for p in (P80, P81)]
        script = pods.prober_script(
            targets, "sctp", timeouts.netpol_probe_timeout, timeouts.netpol_probe_interval
        )
        # Long-lived model pods, created before any policy and kept for all three cases
        # (upstream's initializeClusterFromModel); each probes from itself, as upstream's
        # `kubectl exec … agnhost connect` does, so a CNI knows every source long before.
        for target in ALL:
            letter, pod = target.split("/")
            node = ctx.node(0 if letter == "x" else 1)
            spaces[letter].create_pod(
                pods.netpol_model_pod(
                    pod, ctx.image, (P80, P81), {"pod": pod, **SERVER}, node, script
                )
            )
        for target in ALL:
            letter, pod = target.split("/")
            spaces[letter].wait_pod(pod, ("Running",), timeouts.pod_start)
        for target in ALL:
            letter, pod = target.split("/")
            spaces[letter].wait_endpoints(f"s-{pod}", "SCTP")
        ctx.note(
            "model pods (SCTP 80, 81, probing every Service from themselves) behind their "
            "Services: " + ", ".join(f"{t} {vips[t]}" for t in ALL)
        )
        prober = Prober(ctx, spaces, vips)

        # Upstream's waitForHTTPServers: before any policy, the whole matrix (loopback
        # ignored) must connect on every port, within maxTries (10) passes 1 s apart.
        ready: list[str] = []
        for port in (P80, P81):
            for attempt in range(1, max(1, timeouts.netpol_ready_tries) + 1):
                seen = prober.observe(lambda s, d: True, port)
                dead = _wrong(seen, lambda s, d: True)
                if not dead:
                    ready.append(f"port {port}: all connect (pass {attempt})")
                    break
                ctx.run.pause(timeouts.netpol_probe_interval)
            else:
                raise TestFailed(
                    f"before any policy, SCTP to port {port} through the pods' Services does "
                    f"not connect after {timeouts.netpol_ready_tries} passes "
                    f"({'; '.join(_say(seen, dead))}): upstream's servers are not ready, the "
                    "policies cannot be judged"
                )
        ctx.note("no policy: " + "; ".join(ready))

        wrong: list[str] = []
        for case in CASES:
            x = spaces["x"]
            x.create_policy(pods.network_policy(case.name, case.pod_selector, case.ingress))
            # Upstream's ValidateOrFail: a first pass, each cell polled until it shows the
            # expected result (netpol_poll seconds at most); a second pass over the whole
            # matrix when any cell was wrong, whose observations are the verdict.
            seen = prober.observe(case.allowed, case.port)
            bad = _wrong(seen, case.allowed)
            passes = "first pass"
            if bad:
                ctx.note(
                    f"{case.name}: {len(bad)} wrong cell(s) in the first pass "
                    f"({'; '.join(_say(seen, bad)[:6])}): second pass"
                )
                seen = prober.observe(case.allowed, case.port)
                bad = _wrong(seen, case.allowed)
                passes = "second pass"
            ctx.note(f"{case.name} (port {case.port}, {passes}): {_matrix(seen, case)}")
            for src, dst in bad:
                result = seen[(src, dst)]
                if case.allowed(src, dst):
                    wrong.append(
                        f"{case.name}: {src} -> {dst}:{case.port} should be allowed but "
                        f"{result.detail}"
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
            cells = len(CASES) * (len(ALL) ** 2 - len(ALL))
            raise TestFailed(f"{len(wrong)} of {cells} SCTP probe(s) wrong: {shown}")
        names = ", ".join(c.name for c in CASES)
        return (
            f"upstream's three SCTP NetworkPolicy cases ({names}): every cell of each "
            f"{len(ALL)}x{len(ALL)} reachability matrix (namespaces x, y, z; pods a, b, c; "
            "through each pod's Service, from long-lived pods; loopback ignored as upstream) "
            "as expected"
        )


@dataclass
class Seen:
    """One cell of a pass: the result that decided it, and how many probes it took."""

    ok: bool
    detail: str
    probes: int


class Prober:
    """Reads the model pods' probe logs (their `prober` container): what each pod saw.

    A pass starts from the rounds each pod had begun when the pass began: only rounds begun
    after that count (so nothing probed before a policy existed is read as its effect).
    """

    TAIL = 2000  # log lines read each time: several rounds of 18 targets

    def __init__(self, ctx: TestContext, spaces: dict[str, TestContext], vips: dict[str, str]):
        self.ctx = ctx
        self.spaces = spaces
        self.vips = vips
        self.target_of = {pods.connect_target(vips[t], p): (t, p) for t in ALL for p in (P80, P81)}
        # per pod: round -> {(dst, port): (ok, detail)}; rounds begun and finished
        self.rounds: dict[str, dict[int, dict[tuple[str, int], tuple[bool, str]]]] = {
            t: {} for t in ALL
        }
        self.begun: dict[str, int] = dict.fromkeys(ALL, 0)
        self.done: dict[str, int] = dict.fromkeys(ALL, 0)

    def read(self) -> None:
        for src in ALL:
            letter, pod = src.split("/")
            log = self.spaces[letter].pod_log(pod, pods.PROBER_CONTAINER, self.TAIL)
            for line in log.splitlines():
                parts = line.split(None, 4)
                if len(parts) >= 3 and parts[0] == "round" and parts[1].isdigit():
                    number = int(parts[1])
                    if parts[2] == "start":
                        self.begun[src] = max(self.begun[src], number)
                    elif parts[2] == "done":
                        self.done[src] = max(self.done[src], number)
                elif len(parts) >= 4 and parts[0] == "probe" and parts[1].isdigit():
                    cell = self.target_of.get(parts[2])
                    if cell is None:
                        continue
                    ok = parts[3] == "ok"
                    detail = "connected" if ok else _failure(parts[4] if len(parts) > 4 else "")
                    self.rounds[src].setdefault(int(parts[1]), {})[cell] = (ok, detail)

    def observe(
        self, allowed: Callable[[str, str], bool], port: int
    ) -> dict[tuple[str, str], Seen]:
        """One pass over the matrix (loopback excluded): each cell decided by the first probe
        showing the expected result, else by its last probe within the window."""
        timeouts = self.ctx.spec.timeouts
        run = self.ctx.run
        self.read()
        after = dict(self.begun)  # rounds begun before the pass do not count
        deadline = run.clock() + timeouts.netpol_poll
        # once the window closed: the rounds already begun are still awaited, bounded
        grace = timeouts.netpol_probe_timeout + 2 * timeouts.netpol_probe_interval + 5
        cells = [(s, d) for s in ALL for d in ALL if s != d]
        seen: dict[tuple[str, str], Seen] = {}
        closed: dict[str, int] | None = None
        while True:
            run.tick()
            for cell in cells:
                src, dst = cell
                last = closed[src] if closed is not None else None
                results = [
                    r[(dst, port)]
                    for n, r in sorted(self.rounds[src].items())
                    if n > after[src] and (last is None or n <= last) and (dst, port) in r
                ]
                if not results:
                    continue
                hit = next((r for r in results if r[0] == allowed(src, dst)), None)
                ok, detail = hit if hit is not None else results[-1]
                seen[cell] = Seen(ok, detail, len(results))
            settled = all(c in seen and seen[c].ok == allowed(*c) for c in cells)
            if settled:
                return seen
            now = run.clock()
            if closed is None and now >= deadline:
                closed = dict(self.begun)
                deadline = now + grace
            elif closed is not None:
                finished = all(self.done[s] >= closed[s] for s in ALL)
                if finished or now >= deadline:
                    break
            run.pause(timeouts.netpol_probe_interval)
            self.read()
        for cell in cells:
            if cell not in seen:
                seen[cell] = Seen(False, f"no probe result from {cell[0]} within the window", 0)
        return seen


def _failure(words: str) -> str:
    word, _, detail = words.partition(":")
    word = word.strip()
    result = ConnectResult(False, word or "failed", words, "", detail.strip())
    return why(result) if word in CONNECT_WORDS else f"failed ({words.strip() or 'no output'})"


def _wrong(
    seen: dict[tuple[str, str], Seen], allowed: Callable[[str, str], bool]
) -> list[tuple[str, str]]:
    return [c for c, r in seen.items() if r.ok != allowed(*c)]


def _say(seen: dict[tuple[str, str], Seen], cells: list[tuple[str, str]]) -> list[str]:
    return [f"{s} -> {d}: {seen[(s, d)].detail}" for s, d in cells]


def _matrix(results: dict[tuple[str, str], Seen], case: Case) -> str:
    """Upstream's truth-table rows: one line per source, `.` reachable, `X` not, `!` wrong,
    `-` loopback (ignored, as upstream's Summary(ignoreLoopback) does)."""
    rows = []
    for src in ALL:
        marks = ""
        for dst in ALL:
            if src == dst:
                marks += "-"
                continue
            ok = results[(src, dst)].ok
            mark = "." if ok else "X"
            marks += mark if ok == case.allowed(src, dst) else "!"
        rows.append(f"{src} {marks}")
    return "to " + " ".join(ALL) + " | " + " | ".join(rows)
