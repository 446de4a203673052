"""Upstream's kube-proxy in the qemu guest, against a real API server, carrying real SCTP.

The host runs the real control plane (cluster/up.sh) and, through its API, a Node for the guest
(``sctp-guest``, InternalIP 10.0.2.15), a selector-less SCTP Service and an EndpointSlice
whose endpoint is an address in one of the guest's network namespaces:

    sctp-guest-proxy/sctp-svc  ClusterIP 10.0.0.95 port 9595/SCTP -> 10.88.0.11:9595

The guest (real kernel SCTP, netfilter and IPVS) boots with qemu's user-mode network, where
10.0.2.2 is the host's loopback, and runs the same release's kube-proxy binary (static, built
on the host) with its own client certificate, in iptables, ipvs and nftables mode in turn
(lab/guest/real-kube-proxy.sh): each mode must write its rules, carry an SCTP association from
the client namespace to the ClusterIP and on to the endpoint, and go away with
``kube-proxy --cleanup``. The rules it wrote come back as text (``--fixtures`` writes them to
tests/fixtures/realcluster/guest-kube-proxy-MODE-sctp.txt).

    lab/guest/control-plane.sh up     # var/cluster-guest, API server on 127.0.0.1:26443
    python -m lab.guest.real_proxy --state var/cluster-guest --port 26443 [--fixtures DIR]
    lab/guest/control-plane.sh down

Run it against a control plane of its own, as above (cluster/up.sh with its own state dir and
ports): the Node it adds would show in a shared cluster's battery runs. `make guest-proxy` does
all three and asserts the outcome (tests/kernel/test_guest_kube_proxy.py).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from lab.guest.harness import Guest, GuestResult, qemu_available

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
MODES = ("iptables", "ipvs", "nftables")
NODE = "sctp-guest"
NODE_IP = "10.0.2.15"
HOST_FROM_GUEST = "10.0.2.2"  # qemu's user-mode network: the host's 127.0.0.1
NAMESPACE = "sctp-guest-proxy"
SERVICE = "sctp-svc"
VIP, PORT, ENDPOINT = "10.0.0.95", 9595, "10.88.0.11"
CLUSTER_CIDR = "10.88.0.0/16"


@dataclass
class ProxyRun:
    guest: GuestResult
    results: list[tuple[str, str, str]]  # (PASS|FAIL, check, detail)
    timings: list[tuple[float, str]]  # (guest uptime in s, mark)
    rules: dict[str, str]  # mode -> the rules kube-proxy wrote, as captured
    setup_seconds: float

    @property
    def failures(self) -> list[tuple[str, str, str]]:
        return [r for r in self.results if r[0] != "PASS"]

    def mode_seconds(self) -> dict[str, float]:
        """Guest seconds from starting kube-proxy in each mode to its --cleanup being done."""
        marks = {name: t for t, name in self.timings}
        return {
            m: round(marks[f"{m}-cleaned"] - marks[f"{m}-start"], 1)
            for m in MODES
            if f"{m}-start" in marks and f"{m}-cleaned" in marks
        }


def release() -> str:
    for line in (REPO / "cluster" / "release.env").read_text().splitlines():
        if line.startswith("KUBE_VERSION="):
            return line.split("=", 1)[1].strip()
    raise RuntimeError("cluster/release.env pins no KUBE_VERSION")


def _kubectl(bin_dir: Path, kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(
        [str(bin_dir / "kubectl"), "--kubeconfig", str(kubeconfig), *args],
        input=stdin,
        check=True,
        text=True,
        capture_output=True,
        timeout=60,
    ).stdout


def objects() -> str:
    """The Node, Namespace, Service and EndpointSlice the guest's kube-proxy serves."""
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "List",
            "items": [
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE}},
                    "status": {"addresses": [{"type": "InternalIP", "address": NODE_IP}]},
                },
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {"name": SERVICE, "namespace": NAMESPACE},
                    "spec": {
                        "clusterIP": VIP,
                        "ports": [
                            {"name": "sctp", "protocol": "SCTP", "port": PORT, "targetPort": PORT}
                        ],
                    },
                },
                {
                    "apiVersion": "discovery.k8s.io/v1",
                    "kind": "EndpointSlice",
                    "metadata": {
                        "name": f"{SERVICE}-guest",
                        "namespace": NAMESPACE,
                        "labels": {
                            "kubernetes.io/service-name": SERVICE,
                            "endpointslice.kubernetes.io/managed-by": "lab.guest.real_proxy",
                        },
                    },
                    "addressType": "IPv4",
                    "ports": [{"name": "sctp", "protocol": "SCTP", "port": PORT}],
                    "endpoints": [{"addresses": [ENDPOINT], "conditions": {"ready": True}}],
                },
            ],
        }
    )


def guest_kubeconfig(pki: Path, port: int) -> str:
    """kube-proxy's kubeconfig for the guest: its own client certificate; the API server at
    10.0.2.2, verified as `localhost` (its certificate names 127.0.0.1 and localhost)."""

    def b64(name: str) -> str:
        return base64.b64encode((pki / name).read_bytes()).decode()

    return f"""apiVersion: v1
kind: Config
clusters:
- name: real
  cluster:
    server: https://{HOST_FROM_GUEST}:{port}
    tls-server-name: localhost
    certificate-authority-data: {b64("ca.crt")}
users:
- name: kube-proxy
  user:
    client-certificate-data: {b64("kube-proxy.crt")}
    client-key-data: {b64("kube-proxy.key")}
contexts:
- name: kube-proxy@real
  context: {{cluster: real, user: kube-proxy}}
current-context: kube-proxy@real
"""


def proxy_config(mode: str) -> str:
    return f"""apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: /job/kube-proxy.kubeconfig
mode: {mode}
hostnameOverride: {NODE}
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
clusterCIDR: {CLUSTER_CIDR}
nodePortAddresses: ["primary"]
iptables:
  localhostNodePorts: false
ipvs:
  scheduler: rr
conntrack:  # leave the guest's conntrack sysctls alone (nf_conntrack loads on demand)
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
  udpTimeout: 0s
  udpStreamTimeout: 0s
"""


def _parse(result: GuestResult) -> tuple[list[tuple[str, str, str]], list[tuple[float, str]]]:
    results = []
    for line in result.files.get("results.txt", "").splitlines():
        status, _, rest = line.partition(" ")
        name, _, detail = rest.partition(" ")
        results.append((status, name, detail))
    timings = []
    for line in result.files.get("timings.txt", "").splitlines():
        t, _, name = line.partition(" ")
        try:
            timings.append((float(t), name))
        except ValueError:
            continue
    return results, timings


def run(
    state: Path,
    port: int,
    bin_dir: Path | None = None,
    modes: tuple[str, ...] = MODES,
    timeout: float = 900.0,
) -> ProxyRun:
    """Write the objects through the API server of ``state`` (cluster/up.sh's state dir, on
    127.0.0.1:``port``), boot the guest and run kube-proxy there in each of ``modes``."""
    started = time.monotonic()
    bin_dir = bin_dir or state / "bin"
    pki = state / "pki"
    _kubectl(bin_dir, state / "kubeconfig", "apply", "-f", "-", stdin=objects())
    guest = Guest()
    setup = round(time.monotonic() - started, 1)
    with tempfile.TemporaryDirectory(prefix="real-proxy-") as tmp:
        work = Path(tmp)
        (work / "kube-proxy.kubeconfig").write_text(guest_kubeconfig(pki, port))
        files = {
            "kube-proxy": bin_dir / "kube-proxy",
            "kube-proxy.kubeconfig": work / "kube-proxy.kubeconfig",
            "real-kube-proxy.sh": HERE / "real-kube-proxy.sh",
        }
        for mode in modes:
            (work / f"kube-proxy-{mode}.yaml").write_text(proxy_config(mode))
            files[f"kube-proxy-{mode}.yaml"] = work / f"kube-proxy-{mode}.yaml"
        script = (
            f"MODES='{' '.join(modes)}' VIP={VIP} PORT={PORT} ENDPOINT={ENDPOINT} "
            f"NODE_IP={NODE_IP} sh /job/real-kube-proxy.sh"
        )
        result = guest.run(script, timeout=timeout, network=True, inputs=files)
    results, timings = _parse(result)
    rules = {
        m: result.files[f"kube-proxy-{m}-sctp.txt"]
        for m in modes
        if f"kube-proxy-{m}-sctp.txt" in result.files
    }
    return ProxyRun(result, results, timings, rules, setup)


def write_fixtures(run_: ProxyRun, target: Path) -> list[Path]:
    """The rules of each mode as tests/fixtures/realcluster/guest-kube-proxy-MODE-sctp.txt."""
    target.mkdir(parents=True, exist_ok=True)
    written = []
    kernel = run_.guest.files.get("uname.txt", "").strip()
    for mode, text in run_.rules.items():
        lines = text.splitlines()
        tool = lines[0].lstrip("# ") if lines and lines[0].startswith("#") else ""
        body = "\n".join(lines[1:] if tool else lines)
        command = {
            "iptables": "iptables-save -t nat, filtered to the *nat header, COMMIT and KUBE-* lines",
            "ipvs": "ipvsadm -Ln",
            "nftables": "nft list table ip kube-proxy",
        }[mode]
        ipvs = " and IPVS" if mode == "ipvs" else ""
        header = [
            f"# Rules written by the real kube-proxy {release()} (upstream's, built from the Go",
            f"# modules k8s.io/kubernetes@{release()} by cluster/build.sh), mode {mode}, in the",
            f"# qemu guest of lab/guest/ (real kernel SCTP{ipvs}, Linux {kernel or '?'}),",
            "# against a real API server on the host.",
            f"# Binary and tools: {tool}",
            f"# Captured by python -m lab.guest.real_proxy on {datetime.now(UTC):%Y-%m-%d}: the SCTP",
            f"# Service {NAMESPACE}/{SERVICE} ({VIP}:{PORT}/SCTP -> {ENDPOINT}:{PORT}, an",
            "# address in a guest network namespace), after a real SCTP association went",
            "# through it from another namespace.",
            f"# Command: {command}.",
        ]
        path = target / f"guest-kube-proxy-{mode}-sctp.txt"
        path.write_text("\n".join(header) + "\n" + body.rstrip("\n") + "\n")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state", type=Path, required=True, help="cluster/up.sh's state dir")
    parser.add_argument("--port", type=int, required=True, help="its API server's port")
    parser.add_argument("--bin", type=Path, help="kube-proxy and kubectl (default STATE/bin)")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--fixtures", type=Path, help="write the captured rules here")
    parser.add_argument("--out", type=Path, help="copy every file the guest wrote here")
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args(argv)
    ok, reason = qemu_available()
    if not ok:
        print(f"guest-proxy: {reason}", file=sys.stderr)
        return 2
    modes = tuple(m for m in args.modes.split(",") if m)
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"unknown modes {unknown}")
    started = time.monotonic()
    run_ = run(args.state, args.port, args.bin, modes, args.timeout)
    for status, name, detail in run_.results:
        print(f"{status} {name} {detail}")
    if args.out:
        for name, text in run_.guest.files.items():
            path = args.out / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if args.fixtures and not run_.failures:
        for path in write_fixtures(run_, args.fixtures):
            print(f"guest-proxy: wrote {os.path.relpath(path)}")
    marks = {name: t for t, name in run_.timings}
    print(
        f"guest-proxy: setup {run_.setup_seconds} s, guest {run_.guest.seconds} s "
        f"({run_.guest.accel}; job started at guest uptime {marks.get('job-start', '?')} s), "
        f"per mode {run_.mode_seconds()}, total {time.monotonic() - started:.1f} s"
    )
    if run_.guest.timed_out or run_.guest.exit_code is None:
        sys.stderr.write(run_.guest.console[-4000:])
        sys.stderr.write(run_.guest.stderr[-4000:])
        print("guest-proxy: the guest did not finish", file=sys.stderr)
        return 3
    if run_.failures or run_.guest.exit_code != 0:
        sys.stderr.write(run_.guest.stderr[-4000:])
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
