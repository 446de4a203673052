"""The lab's node-tool text, printed back by the real tools on a real kernel.

``python -m lab.guest.lab_golden [--dest DIR]`` builds one fixed lab scenario (`scenario()`:
SCTP and TCP services with 3, 1 and no endpoints, NodePorts, an SCTP hostPort under kubenet,
the `kubernetes` service; at 1.31.2, and in iptables mode again at 1.23.17 for the kubelet's
own hostport chains), renders what the lab's `iptables-save`, `nft list ruleset` and
`ipvsadm -Ln` print for it, boots the kernel guest once, loads those rules into the guest's
kernel (`iptables-restore`, `nft -f`, `ipvsadm -A/-a`) and saves what the real tools print
back into ``tests/fixtures/node/lab-*.txt``. The lab tests then require the lab's text to equal
those files (normalised for timestamps and counters): quoting, match order, probabilities,
chain and element layout are the tools' own, not the lab's idea of them.

Needs the guest (lab/guest/install-host-deps.sh, then a first build of the image).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from lab import nodetools
from lab.cluster import Cluster
from lab.guest.golden import normalise
from lab.guest.harness import qemu_available, run_in_guest
from lab.profiles import validate_profile

REPO = Path(__file__).resolve().parent.parent.parent
DEFAULT_DEST = REPO / "tests" / "fixtures" / "node"
FIXED_CLOCK = 1_800_000_000.0
NAMESPACE = "sctp-guest"
# Fixed addresses and ports, so the scenario does not depend on the lab's allocators.
SERVICES: list[dict[str, Any]] = [
    {
        "name": "sctp-svc",
        "type": "ClusterIP",
        "clusterIP": "10.96.0.10",
        "selector": {"app": "sctp-guest"},
        "ports": [{"name": "sctp", "port": 95, "targetPort": 8082, "protocol": "SCTP"}],
    },
    {
        "name": "sctp-np",
        "type": "NodePort",
        "clusterIP": "10.96.0.20",
        "selector": {"app": "nobody"},
        "ports": [{"port": 96, "targetPort": 8082, "protocol": "SCTP", "nodePort": 30096}],
    },
    {
        "name": "web",
        "type": "NodePort",
        "clusterIP": "10.96.0.30",
        "selector": {"app": "web"},
        "ports": [
            {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP", "nodePort": 30080}
        ],
    },
]
# One golden per variant: a proxier's mode, or "iptables-1.23", the iptables mode of a release
# before 1.24, whose kubenet hostPorts are the kubelet's own chains (KUBE-HOSTPORTS) where
# later ones are the CNI portmap plugin's (CNI-HOSTPORT-DNAT).
FILES = {
    "iptables": "lab-iptables-save.txt",
    "iptables-1.23": "lab-iptables-save-1.23.txt",
    "nftables": "lab-nft-list-ruleset.txt",
    "ipvs": "lab-ipvsadm-Ln.txt",
}


def scenario(proxier: str, kubernetes_version: str = "1.31.2") -> tuple[Any, Any]:
    """(cluster, worker node) with the fixed objects, every pod started."""
    profile = validate_profile(
        {
            "name": "golden",
            "plugin": "calico",
            "plugin_version": "3.28.0",
            "kubernetes_version": kubernetes_version,
            "proxier": proxier,
            "nodes": 2,
            "seed": 614,
            "kubenet": proxier == "iptables",
            "faults": {"pod_start_delay_s": 0},
        }
    )
    cluster = Cluster(profile, clock=lambda: FIXED_CLOCK)
    cluster.create_namespace({"metadata": {"name": NAMESPACE}})

    def pod(
        name: str,
        labels: dict[str, str],
        args: list[str],
        env: dict[str, str],
        ports: list[dict[str, Any]],
    ) -> None:
        cluster.create(
            "pods",
            NAMESPACE,
            {
                "metadata": {"name": name, "labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "agnhost",
                            "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                            "args": args,
                            "env": [{"name": k, "value": v} for k, v in env.items()],
                            "ports": ports,
                        }
                    ]
                },
            },
        )

    for name in ("srv1", "srv2", "srv3"):
        pod(
            name,
            {"app": "sctp-guest"},
            ["porter"],
            {"SERVE_SCTP_PORT_8082": "foo"},
            [{"containerPort": 8082, "protocol": "SCTP"}],
        )
    pod("web", {"app": "web"}, ["netexec", "--http-port=8080"], {}, [{"containerPort": 8080}])
    pod(
        "hostport",
        {"app": "hostport"},
        ["porter"],
        {"SERVE_SCTP_PORT_5060": "foo"},
        [{"containerPort": 5060, "hostPort": 5060, "protocol": "SCTP"}],
    )
    for svc in SERVICES:
        spec = {k: v for k, v in svc.items() if k != "name"}
        cluster.create("services", NAMESPACE, {"metadata": {"name": svc["name"]}, "spec": spec})
    cluster.advance()
    return cluster, cluster.nodes[1]


def lab_text(variant: str) -> str:
    """What the lab's node tool prints for the scenario in that variant (FILES)."""
    proxier, _, minor = variant.partition("-")
    cluster, node = scenario(proxier, "1.23.17" if minor == "1.23" else "1.31.2")
    command = {"iptables": "iptables-save", "nftables": "nft list ruleset", "ipvs": "ipvsadm -Ln"}
    return nodetools.run(cluster, node, command[proxier])[1]


def nft_declarations(ruleset: str) -> str:
    """Every chain of the ruleset, empty, in its order: map elements `goto` chains that the
    text defines later, so the chains must exist before `nft -f` loads the ruleset itself
    (kube-proxy's own transaction adds chains first, too)."""
    out = ["table ip kube-proxy {"]
    lines = ruleset.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("\tcomment ") and i == 1:
            out.append(line)  # a table's comment cannot be added once the table exists
        if line.startswith("\tchain "):
            out.append(line)
            following = lines[i + 1] if i + 1 < len(lines) else ""
            if following.strip().startswith(("type ", "comment ")):
                out.append(following)  # nor a chain's hook or comment
            out.append("\t}")
    out.append("}")
    return "\n".join(out)


def guest_script() -> str:
    ipvs_cluster, _node = scenario("ipvs")
    ruleset = lab_text("nftables")
    lines = [
        "set -u",
        "mkdir -p out/lab",
        "cat > /tmp/lab-iptables.rules <<'LAB_EOF'",
        lab_text("iptables").rstrip("\n"),
        "LAB_EOF",
        "cat > /tmp/lab-decl.nft <<'LAB_EOF'",
        nft_declarations(ruleset),
        "LAB_EOF",
        "cat > /tmp/lab.nft <<'LAB_EOF'",
        ruleset.rstrip("\n"),
        "LAB_EOF",
        (
            "iptables-restore < /tmp/lab-iptables.rules 2> out/lab/iptables-restore.err"
            " || { echo 'FAIL iptables-restore'; cat out/lab/iptables-restore.err; exit 1; }"
        ),
        f"iptables-save > out/lab/{FILES['iptables']}",
        "cat > /tmp/lab-iptables-1.23.rules <<'LAB_EOF'",
        lab_text("iptables-1.23").rstrip("\n"),
        "LAB_EOF",
        (
            "iptables-restore < /tmp/lab-iptables-1.23.rules 2> out/lab/iptables-restore.err"
            " || { echo 'FAIL iptables-restore 1.23'; cat out/lab/iptables-restore.err; exit 1; }"
        ),
        f"iptables-save > out/lab/{FILES['iptables-1.23']}",
        "nft flush ruleset",
        (
            "nft -f /tmp/lab-decl.nft 2> out/lab/nft.err && nft -f /tmp/lab.nft 2>> out/lab/nft.err"
            " || { echo 'FAIL nft -f'; cat out/lab/nft.err; exit 1; }"
        ),
        f"nft list ruleset > out/lab/{FILES['nftables']}",
        "nft flush ruleset",
    ]
    lines += [
        f"{cmd} || {{ echo 'FAIL {cmd}'; exit 1; }}"
        for cmd in nodetools.ipvsadm_commands(ipvs_cluster)
    ]
    lines += [f"ipvsadm -Ln > out/lab/{FILES['ipvs']}", "ipvsadm -C", "echo PASS lab-goldens"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=DEFAULT_DEST)
    parser.add_argument(
        "--print-script", action="store_true", help="print the guest script and exit"
    )
    args = parser.parse_args(argv)
    script = guest_script()
    if args.print_script:
        sys.stdout.write(script)
        return 0
    ok, reason = qemu_available()
    if not ok:
        print(f"lab_golden: {reason}", file=sys.stderr)
        return 2
    result = run_in_guest(script, timeout=600)
    sys.stdout.write(result.stdout)
    if result.exit_code != 0:
        print(
            f"lab_golden: guest failed (exit {result.exit_code}); fixtures not written",
            file=sys.stderr,
        )
        sys.stderr.write(result.stderr[-4000:] + result.console[-4000:])
        return 1
    args.dest.mkdir(parents=True, exist_ok=True)
    for name in FILES.values():
        text = result.files.get(f"lab/{name}")
        if text is None:
            print(f"lab_golden: the guest wrote no {name}", file=sys.stderr)
            return 1
        (args.dest / name).write_text(normalise(text))
        print(f"lab_golden: wrote {args.dest / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
