"""The lab's node rules take the forms the real components write, and the battery's rule
matching (kernel/battery/nodeparse.py) reads the lab's text the same way as the real capture.

Real captures (tests/fixtures/realcluster/, nothing there written by this project):

- `portmap-iptables-sctp-hostport.txt`: the reference CNI portmap plugin v1.10.0 on the real
  cluster's node (kubelet v1.36.3), an SCTP hostPort: `CNI-HOSTPORT-DNAT` -> `CNI-DN-<hash>`.
- `guest-kube-proxy-nftables-sctp.txt`: kube-proxy v1.36.3 in nftables mode; the `kubernetes`
  Service has no endpoints there, so its element in `no-endpoint-services` is real kube-proxy's
  no-endpoint form, with the service port's name as a comment.

The lab writes portmap's form for a kubenet-style node from 1.24 on (the kubelet's own
hostport manager, KUBE-HOSTPORTS, went with dockershim in 1.24) and keeps the in-tree form for
profiles of older releases (lab/profiles/kubenet.yaml, 1.23.17).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from kernel.battery import nodeparse
from lab import nodetools
from lab.cluster import Cluster
from lab.guest import lab_golden
from lab.profiles import load_profiles, validate_profile

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "fixtures" / "realcluster"


def real(name: str) -> str:
    return (REAL / name).read_text()


def _lab(proxier: str, version: str, kubenet: bool = False) -> tuple[Cluster, Any]:
    profile = validate_profile(
        {
            "name": "forms",
            "plugin": "kubenet" if kubenet else "calico",
            "plugin_version": version,
            "kubernetes_version": version,
            "proxier": proxier,
            "nodes": 2,
            "kubenet": kubenet,
            "faults": {"pod_start_delay_s": 0},
        }
    )
    cluster = Cluster(profile, clock=lambda: lab_golden.FIXED_CLOCK)
    return cluster, cluster.nodes[1]


def _hostport_pod(cluster: Cluster, port: int) -> str:
    cluster.create(
        "pods",
        "default",
        {
            "metadata": {"name": "pause-sctp"},
            "spec": {
                "containers": [
                    {
                        "name": "pause",
                        "image": "registry.k8s.io/pause:3.10.2",
                        "ports": [{"containerPort": port, "hostPort": port, "protocol": "SCTP"}],
                    }
                ]
            },
        },
    )
    cluster.advance()
    return str(cluster.pod_rt[("default", "pause-sctp")].ip)


def _shape(text: str, port: int, pod_ip: str) -> list[str]:
    """portmap's nat lines with what differs per node and pod (the network's name, sandbox id,
    chain hash, pod subnet and IP, port) put as placeholders."""
    lines = [ln for ln in nodeparse.iptables_table(text, "nat").splitlines() if "CNI-" in ln]
    out = []
    for line in lines:
        line = re.sub(r"CNI-DN-[0-9a-f]{21}", "CNI-DN-<hash>", line)
        line = re.sub(
            r'name: \\"[^"\\]+\\" id: \\"[0-9a-f]{64}\\"', 'name: \\"<net>\\" id: <id>', line
        )
        line = line.replace(f"{pod_ip}:{port}", "<pod>:<port>")
        line = re.sub(r"-s \d+\.\d+\.\d+\.0/24 ", "-s <pod subnet> ", line)
        line = re.sub(rf"\b{port}\b", "<port>", line)
        out.append(line)
    return sorted(out)


REAL_HOSTPORT = (9595, "10.88.0.5")


def test_a_1_36_kubenet_node_writes_portmaps_chains_line_for_line() -> None:
    cluster, node = _lab("iptables", "1.36.3", kubenet=True)
    port = 5060
    ip = _hostport_pod(cluster, port)
    lab = nodetools.run(cluster, node, "iptables-save")[1]
    assert _shape(lab, port, ip) == _shape(
        real("portmap-iptables-sctp-hostport.txt"), *REAL_HOSTPORT
    )
    assert "KUBE-HOSTPORTS" not in lab and "KUBE-HP-" not in lab


def test_the_battery_reads_the_labs_hostport_as_the_real_one() -> None:
    cluster, node = _lab("iptables", "1.36.3", kubenet=True)
    ip = _hostport_pod(cluster, 5060)
    lab = nodetools.run(cluster, node, "iptables-save")[1]
    real_port, real_ip = REAL_HOSTPORT
    (lab_path,) = nodeparse.iptables_hostport_paths(lab, 5060)
    (real_path,) = nodeparse.iptables_hostport_paths(
        real("portmap-iptables-sctp-hostport.txt"), real_port
    )
    for path, ip_port in ((lab_path, f"{ip}:5060"), (real_path, f"{real_ip}:{real_port}")):
        assert path.entry.split()[:4] == ["-A", "CNI-HOSTPORT-DNAT", "-p", "sctp"]
        assert re.fullmatch(r"CNI-DN-[0-9a-f]{21}", path.chain)
        assert len(path.dnat) == 1 and path.destinations == [ip_port]
    # The same rules in hostport-kubenet's other reading: the SCTP rules of the pod chain.
    for text, port in ((lab, 5060), (real("portmap-iptables-sctp-hostport.txt"), real_port)):
        nat = nodeparse.iptables_table(text, "nat")
        pod_chain = nodeparse.iptables_sctp_rules(nat, dport=port, chain_prefix="CNI-DN-")
        assert [r for r in pod_chain if "-j DNAT" in r] and len(pod_chain) == 3
        entry = nodeparse.iptables_sctp_rules(nat, dport=port, chain_prefix="CNI-HOSTPORT-DNAT")
        assert len(entry) == 1 and f"-m multiport --dports {port}" in entry[0]
        assert nodeparse.iptables_sctp_rules(nat, chain_prefix="KUBE-HOSTPORTS") == []


def test_a_1_23_kubenet_node_keeps_the_kubelets_own_hostport_chains() -> None:
    cluster, node = _lab("iptables", "1.23.17", kubenet=True)
    ip = _hostport_pod(cluster, 5060)
    lab = nodetools.run(cluster, node, "iptables-save")[1]
    (path,) = nodeparse.iptables_hostport_paths(lab, 5060)
    assert path.entry.startswith("-A KUBE-HOSTPORTS -p sctp ")
    assert path.chain.startswith("KUBE-HP-") and path.destinations == [f"{ip}:5060"]
    assert "CNI-HOSTPORT" not in lab


def test_the_profiles_that_write_the_old_hostport_form_model_releases_before_1_24() -> None:
    profiles = ROOT / "lab" / "profiles"
    every = [*load_profiles(profiles), *load_profiles(profiles / "situations")]
    kubenet = [p for p in every if p["kubenet"]]
    assert kubenet, "no lab profile has a kubenet node"
    old = [
        p["name"]
        for p in kubenet
        if tuple(map(int, p["kubernetes_version"].split(".")[:2])) < (1, 24)
    ]
    assert old == ["kubenet"]  # lab/profiles/kubenet.yaml: 1.23.17, kubenet's last release


# ---- kube-proxy's nftables no-endpoint elements

_NO_ENDPOINT = re.compile(
    r"(?:elements = \{ |,\s*)?(?P<key>\S+ \. (?P<proto>[a-z]+) \. \d+) "
    r'comment "(?P<comment>[^"]+)" : goto reject-chain'
)


def _map_body(ruleset: str, name: str) -> str:
    found = re.search(rf"\tmap {name} \{{\n(.*?)\n\t\}}", ruleset, re.S)
    assert found, f"no map {name}"
    return found.group(1)


def _map_elements(ruleset: str, name: str) -> list[re.Match[str]]:
    return list(_NO_ENDPOINT.finditer(_map_body(ruleset, name)))


@pytest.mark.parametrize("version", ["1.35.4", "1.36.3"])
def test_the_labs_no_endpoint_elements_carry_the_service_port_name_as_kube_proxy_writes(
    version: str,
) -> None:
    real_text = real("guest-kube-proxy-nftables-sctp.txt")
    (real_el,) = _map_elements(real_text, "no-endpoint-services")
    assert (real_el["key"], real_el["comment"]) == (
        "10.0.0.1 . tcp . 443",
        "default/kubernetes:https",
    )
    cluster, node = _lab("nftables", version)
    cluster.create_namespace({"metadata": {"name": "ns"}})
    cluster.create(
        "services",
        "ns",
        {
            "metadata": {"name": "sctp-np"},
            "spec": {
                "type": "NodePort",
                "clusterIP": "10.96.0.96",
                "selector": {"app": "nobody"},
                "ports": [{"name": "sctp", "port": 5060, "protocol": "SCTP", "nodePort": 30960}],
            },
        },
    )
    cluster.advance()
    lab = nodetools.run(cluster, node, "nft list ruleset")[1]
    (lab_el,) = _map_elements(lab, "no-endpoint-services")
    assert (lab_el["key"], lab_el["comment"]) == ("10.96.0.96 . sctp . 5060", "ns/sctp-np:sctp")
    nodeports = _map_body(lab, "no-endpoint-nodeports")
    assert 'elements = { sctp . 30960 comment "ns/sctp-np:sctp" : goto reject-chain }' in nodeports
    # The helper chain's comment, as real kube-proxy writes it.
    helper = '\tchain reject-chain {\n\t\tcomment "helper for @no-endpoint-services / @no-endpoint-nodeports"\n'
    assert helper in real_text and helper in lab
    # The battery reads both the same way: the element is found, and proves the nftables mode.
    assert ("10.96.0.96", 5060, "goto reject-chain") in nodeparse.nft_sctp_service_elements(lab)
    assert nodeparse.proxier_modes_with(
        "10.96.0.96", 5060, "sctp", iptables="", ipvs="", nftables=lab
    ) == ["nftables"]
    assert nodeparse.proxier_modes_with(
        "10.0.0.1", 443, "tcp", iptables="", ipvs="", nftables=real_text
    ) == ["nftables"]
