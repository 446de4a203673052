"""The lab's node-tool TEXT equals what the real tools print on a real kernel for the same rules.

Two sets of kernel-guest goldens in tests/fixtures/node/ (no qemu needed to run these tests):

- `lab-iptables-save.txt`, `lab-iptables-save-1.23.txt` (the same scenario at 1.23.17: the
  kubelet's own hostport chains), `lab-nft-list-ruleset.txt`, `lab-ipvsadm-Ln.txt`: written by
  `python -m lab.guest.lab_golden`, which loads the lab's own output for a fixed scenario
  (`lab.guest.lab_golden.scenario`) into the guest kernel with iptables-restore / nft -f /
  ipvsadm and saves what iptables-save, nft and ipvsadm 1.31 print back. So quoting, match
  order, probabilities, element wrapping and service order are the tools', and the lab must
  print exactly that.
- `iptables-save.txt`, `ipvsadm-Ln.txt`, `nft-list-ruleset.txt`: written by
  lab/guest/capture_golden.sh from lab/guest/checks/kube_rules.py (kube-proxy's rule shapes for
  sctp-guest/sctp-svc:sctp, endpoints 10.0.2.2:8082 and 10.0.3.2:8082). The lab, given the
  same service and endpoints, prints every one of those lines verbatim, in the same order.

Normalised before comparing: iptables-save's timestamps, packet/byte counters, ipvsadm's
connection counters, and the order of a map's elements (the kernel's hash order).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lab import nodetools
from lab.cluster import Cluster
from lab.guest import lab_golden
from lab.guest.golden import comparable
from lab.profiles import validate_profile

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "node"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


normalise = comparable


@pytest.mark.parametrize("proxier", sorted(lab_golden.FILES))
def test_the_lab_prints_what_the_kernel_tools_print_back(proxier: str) -> None:
    lab = normalise(lab_golden.lab_text(proxier))
    real = normalise(fixture(lab_golden.FILES[proxier]))
    assert lab == real


def test_the_lab_goldens_cover_what_the_battery_reads() -> None:
    ipt = fixture("lab-iptables-save.txt")
    # KUBE-SERVICES -> KUBE-SVC with -p sctp, the KUBE-SEP DNAT, masquerading, the filter REJECT.
    assert re.search(
        r"^-A KUBE-SERVICES -d 10\.96\.0\.10/32 -p sctp -m comment --comment "
        r'"sctp-guest/sctp-svc:sctp cluster IP" -m sctp --dport 95 -j KUBE-SVC-\w{16}$',
        ipt,
        re.M,
    )
    assert re.search(
        r"^-A KUBE-SEP-\w{16} -p sctp -m comment --comment \"sctp-guest/sctp-svc:sctp\" "
        r"-m sctp -j DNAT --to-destination 10\.244\.1\.2:8082$",
        ipt,
        re.M,
    )
    assert "-j MASQUERADE --random-fully" in ipt and "--probability 0.33333333349" in ipt
    assert re.search(
        r"^-A KUBE-SERVICES -d 10\.96\.0\.20/32 -p sctp -m comment --comment "
        r'"sctp-guest/sctp-np has no endpoints" -m sctp --dport 96 -j REJECT',
        ipt,
        re.M,
    )
    # The hostPort as portmap writes it (1.31.2, a kubenet-style node)...
    assert re.search(
        r'^-A CNI-HOSTPORT-DNAT -p sctp -m comment --comment "dnat name: \\"kubenet\\" id: '
        r'\\"[0-9a-f]{64}\\"" -m multiport --dports 5060 -j CNI-DN-[0-9a-f]{21}$',
        ipt,
        re.M,
    )
    assert "KUBE-HOSTPORTS" not in ipt
    # ...and as the kubelet's own hostport manager wrote it until 1.23.
    assert re.search(
        r'^-A KUBE-HOSTPORTS -p sctp -m comment --comment "hostport_sctp-guest hostport 5060"',
        fixture("lab-iptables-save-1.23.txt"),
        re.M,
    )
    assert "10.96.0.10 . sctp . 95 : goto service-" in fixture("lab-nft-list-ruleset.txt")
    assert "SCTP 10.96.0.10:95 rr\n" in fixture("lab-ipvsadm-Ln.txt")


def test_normalising_keeps_what_matters() -> None:
    # Counters and stamps go; a quoting or spacing difference stays a difference.
    a = '# Completed on Sun Nov 29 19:05:06 2026\n:INPUT ACCEPT [12:345]\n-A X -m comment --comment "a/b" -j Y\n'
    b = '# Completed on Mon Dec  1 08:00:00 2026\n:INPUT ACCEPT [0:0]\n-A X -m comment --comment "a/b" -j Y\n'
    assert normalise(a) == normalise(b)
    assert normalise(a) != normalise(a.replace('"a/b"', "a/b"))
    assert normalise("SCTP  10.96.0.11:96 rr\n") != normalise("SCTP 10.96.0.11:96 rr\n")


# ---------------------------------------------------------------- the kube_rules.py goldens


def _guest_service_cluster(proxier: str, vip: str, port: int) -> Cluster:
    """The lab with the guest's service: sctp-guest/sctp-svc:sctp, endpoints 10.0.{2,3}.2:8082."""
    cluster = Cluster(
        validate_profile(
            {
                "name": f"kernel-{proxier}",
                "plugin": "calico",
                "plugin_version": "3.28.0",
                "kubernetes_version": "1.31.2",
                "proxier": proxier,
                "nodes": 1,
                "faults": {"pod_start_delay_s": 0},
            }
        ),
        clock=lambda: lab_golden.FIXED_CLOCK,
    )
    cluster.create_namespace({"metadata": {"name": "sctp-guest"}})
    for name, ip in (("srv1", "10.0.2.2"), ("srv2", "10.0.3.2")):
        cluster.create(
            "pods",
            "sctp-guest",
            {
                "metadata": {"name": name, "labels": {"app": "sctp-guest"}},
                "spec": {
                    "containers": [
                        {
                            "name": "server",
                            "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                            "args": ["porter"],
                            "env": [{"name": "SERVE_SCTP_PORT_8082", "value": "foo"}],
                            "ports": [{"containerPort": 8082, "protocol": "SCTP"}],
                        }
                    ]
                },
            },
        )
        cluster.pod_rt[("sctp-guest", name)].ip = ip  # the guest's pod network namespaces
    cluster.create(
        "services",
        "sctp-guest",
        {
            "metadata": {"name": "sctp-svc"},
            "spec": {
                "clusterIP": vip,
                "selector": {"app": "sctp-guest"},
                "ports": [{"name": "sctp", "port": port, "targetPort": 8082, "protocol": "SCTP"}],
            },
        },
    )
    cluster.advance()
    return cluster


def _is_subsequence(needles: list[str], haystack: list[str]) -> bool:
    it = iter(haystack)
    return all(any(line == hay for hay in it) for line in needles)


def test_every_kernel_iptables_line_is_in_the_labs_nat_table_in_order() -> None:
    cluster = _guest_service_cluster("iptables", "10.96.0.10", 95)
    lab = normalise(
        nodetools.run(cluster, cluster.nodes[0], "iptables-save -t nat")[1]
    ).splitlines()
    real = normalise(fixture("iptables-save.txt")).splitlines()
    missing = [line for line in real if line not in lab]
    assert missing == []
    assert _is_subsequence(real, lab)


def test_the_kernel_ipvs_service_block_is_the_labs() -> None:
    cluster = _guest_service_cluster("ipvs", "10.96.0.11", 96)
    lab = normalise(nodetools.run(cluster, cluster.nodes[0], "ipvsadm -Ln")[1]).splitlines()
    real = normalise(fixture("ipvsadm-Ln.txt")).splitlines()
    assert lab[:3] == real[:3]  # the headers
    start = lab.index("SCTP 10.96.0.11:96 rr")
    assert lab[start : start + 3] == real[3:6]


def test_every_kernel_nft_line_is_in_the_labs_ruleset() -> None:
    cluster = _guest_service_cluster("nftables", "10.96.0.12", 97)
    lab = normalise(nodetools.run(cluster, cluster.nodes[0], "nft list ruleset")[1]).splitlines()
    real = normalise(fixture("nft-list-ruleset.txt")).splitlines()
    # The guest's table is a subset of kube-proxy's; each of its lines must read the same here,
    # and each of its set/map elements must be an element here (the lab also has `kubernetes`).
    missing = [line for line in real if line not in lab and "elements = {" not in line]
    assert missing == []
    lab_items = set(_items("\n".join(lab)))
    real_items = _items("\n".join(real))
    assert real_items == [
        "10.96.0.12",
        "10.96.0.12 . sctp . 97 : goto service-C24XJXMN-sctp-guest/sctp-svc/sctp/sctp",
    ]
    assert set(real_items) <= lab_items
    endpoint_chains = [ln for ln in real if ln.startswith("\tchain endpoint-")]
    assert len(endpoint_chains) == 2 and all(c in lab for c in endpoint_chains)


def _items(text: str) -> list[str]:
    return [
        item.strip()
        for block in re.findall(r"elements = \{ (.*?) \}", text, re.DOTALL)
        for item in block.split(",")
    ]
