"""The lab's node rules take the forms the real components write, and the battery's rule
matching (kernel/battery/nodeparse.py) reads the lab's text the same way as the real capture.

Real captures (tests/fixtures/realcluster/, nothing there written by this project):

- `portmap-iptables-sctp-hostport.txt`: the reference CNI portmap plugin v1.10.0 on the real
  cluster's node (kubelet v1.36.3), an SCTP hostPort: `CNI-HOSTPORT-DNAT` -> `CNI-DN-<hash>`.
- `guest-kube-proxy-nftables-sctp.txt`: kube-proxy v1.36.3 in nftables mode; the `kubernetes`
  Service has no endpoints there, so its element in `no-endpoint-services` is real kube-proxy's
  no-endpoint form, with the service port's name as a comment; and its whole skeleton (sets,
  maps, fixed chains and their rules, the SCTP service chain's one `dnat ip to numgen random
  mod 1 map { 0 : ip . port }`) is the form the lab writes for profiles at 1.36 and later
  (lab/nftables.py), with the cluster's addresses as placeholders.

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


# ---- kube-proxy's nftables form: from 1.36 the service chain DNATs through one map
#
# pkg/proxy/nftables/proxier.go: v1.35.4 writes an `endpoint-` chain per endpoint
# (writeServiceToEndpointRules, `numgen random mod N vmap`) and a `mark-for-masquerade` chain;
# v1.36.3 (and v1.37.2) writes writeServiceToEndpointDNATs' `dnat ip addr . port to numgen
# random mod N map { … }` in the service chain, the `hairpin-connections` set, and the
# masquerade mark as a rule of `services` and of the `external-` chains.

REAL_1_36 = "guest-kube-proxy-nftables-sctp.txt"
_NFT_BLOCK = re.compile(r"^\t(set|map|chain) (\S+) \{\n(.*?)^\t\}$", re.M | re.S)
# What differs per cluster: the pod CIDR (localDetector), the Service CIDR (cluster-ips-check).
_CIDRS = {"10.88.0.0/16": "<pod cidr>", "10.244.0.0/16": "<pod cidr>"}
_SERVICE_CIDRS = {"10.0.0.0/24": "<service cidr>", "10.96.0.0/16": "<service cidr>"}


def _blocks(ruleset: str) -> list[tuple[str, str, list[str]]]:
    """(kind, name, lines) of each set, map and chain of `nft list table ip kube-proxy`."""
    return [
        (kind, name, [line.strip() for line in body.splitlines()])
        for kind, name, body in _NFT_BLOCK.findall(ruleset)
    ]


def _skeleton(ruleset: str) -> list[tuple[str, str, list[str]]]:
    """Every set's and map's declaration (no elements) and every fixed chain with its rules,
    the addresses of the cluster put as placeholders; per-service chains left out."""
    out = []
    for kind, name, lines in _blocks(ruleset):
        if kind == "chain" and name.startswith(("service-", "external-", "endpoint-")):
            continue
        kept = []
        for line in lines:
            if line.startswith(("elements = ", "10.", "172.")):
                continue
            for real_cidr, placeholder in {**_CIDRS, **_SERVICE_CIDRS}.items():
                line = line.replace(real_cidr, placeholder)
            kept.append(line)
        out.append((kind, name, kept))
    return out


def _lab_1_36_sctp(version: str = "1.36.3", endpoints: int = 1) -> tuple[str, list[str]]:
    """The lab's ruleset for the real capture's Service (sctp-guest-proxy/sctp-svc, SCTP 9595,
    port name `sctp`), with ENDPOINTS ready pods; and those pods' IPs."""
    cluster, node = _lab("nftables", version)
    cluster.create_namespace({"metadata": {"name": "sctp-guest-proxy"}})
    for i in range(endpoints):
        cluster.create(
            "pods",
            "sctp-guest-proxy",
            {
                "metadata": {"name": f"srv{i}", "labels": {"app": "sctp-svc"}},
                "spec": {
                    "nodeName": node.name,
                    "containers": [
                        {
                            "name": "agnhost",
                            "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                            "args": ["porter"],
                            "ports": [{"containerPort": 9595, "protocol": "SCTP"}],
                        }
                    ],
                },
            },
        )
    cluster.create(
        "services",
        "sctp-guest-proxy",
        {
            "metadata": {"name": "sctp-svc"},
            "spec": {
                "clusterIP": "10.96.0.95",
                "selector": {"app": "sctp-svc"},
                "ports": [{"name": "sctp", "port": 9595, "protocol": "SCTP"}],
            },
        },
    )
    cluster.advance()
    ips = sorted(cluster.pod_rt[("sctp-guest-proxy", f"srv{i}")].ip for i in range(endpoints))
    return nodetools.run(cluster, node, "nft list ruleset")[1], ips


def _chain_rules(ruleset: str, name: str) -> list[str]:
    (rules,) = [lines for kind, n, lines in _blocks(ruleset) if kind == "chain" and n == name]
    return rules


def test_the_labs_1_36_nftables_ruleset_has_the_real_v1_36_3_skeleton() -> None:
    real_text = real(REAL_1_36)
    lab, (pod_ip,) = _lab_1_36_sctp()
    # Same sets, maps and fixed chains, in the same order, with the same rules.
    assert _skeleton(lab) == _skeleton(real_text)
    # The SCTP Service: the same service-ips element and chain name (the same hash of
    # `sctp-guest-proxy/sctp-svc/sctp/sctp`), the chain's one rule the same DNAT map.
    chain = "service-TIR6ZLUK-sctp-guest-proxy/sctp-svc/sctp/sctp"
    assert f"10.0.0.95 . sctp . 9595 : goto {chain}" in real_text
    assert f"10.96.0.95 . sctp . 9595 : goto {chain}" in lab
    shape = "meta l4proto sctp dnat ip to numgen random mod 1 map {{ 0 : {} . 9595 }}"
    assert _chain_rules(real_text, chain) == [shape.format("10.88.0.11")]
    assert _chain_rules(lab, chain) == [shape.format(pod_ip)]
    # No endpoint chains, no mark-for-masquerade chain: in neither.
    for text in (lab, real_text):
        names = [name for _kind, name, _lines in _blocks(text)]
        assert not [n for n in names if n.startswith("endpoint-")]
        assert "mark-for-masquerade" not in names and "jump mark-for-masquerade" not in text
    # The lab's pod runs on this node: its hairpin element, as syncProxyRules adds local ones.
    hairpin = {n: lines for _k, n, lines in _blocks(lab)}["hairpin-connections"]
    assert f"elements = {{ {pod_ip} . {pod_ip} . sctp . 9595 }}" in hairpin
    # The battery reads both the same way.
    for text, vip, ip in ((lab, "10.96.0.95", pod_ip), (real_text, "10.0.0.95", "10.88.0.11")):
        path = nodeparse.nft_service_path(text, vip, 9595)
        assert path is not None and path.chain == chain
        assert path.destinations == [f"{ip}:9595"] and len(path.dnat) == 1
        assert nodeparse.proxier_modes_with(
            vip, 9595, "sctp", iptables="", ipvs="", nftables=text
        ) == ["nftables"]


def test_the_labs_1_36_service_chain_maps_every_endpoint_in_one_rule() -> None:
    lab, ips = _lab_1_36_sctp(endpoints=3)
    chain = "service-TIR6ZLUK-sctp-guest-proxy/sctp-svc/sctp/sctp"
    (rule,) = _chain_rules(lab, chain)
    elements = ", ".join(f"{i} : {ip} . 9595" for i, ip in enumerate(ips))
    assert rule == f"meta l4proto sctp dnat ip to numgen random mod 3 map {{ {elements} }}"
    path = nodeparse.nft_service_path(lab, "10.96.0.95", 9595)
    assert path is not None and path.destinations == [f"{ip}:9595" for ip in ips]


def test_the_labs_1_36_external_chain_marks_for_masquerade_itself() -> None:
    # writeServiceToEndpointDNATs' era (v1.36.3 proxier.go, externalTrafficPolicy Cluster):
    # `mark set mark or 0x4000` with the comment "masquerade", then the service chain.
    cluster, node = _lab("nftables", "1.36.3")
    lab = nodetools.run(cluster, node, "nft list ruleset")[1]
    assert "external-" not in lab  # only the kubernetes Service, a ClusterIP
    cluster.create_namespace({"metadata": {"name": "ns"}})
    cluster.create(
        "pods",
        "ns",
        {
            "metadata": {"name": "srv", "labels": {"app": "np"}},
            "spec": {
                "containers": [
                    {
                        "name": "agnhost",
                        "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                        "args": ["porter"],
                        "ports": [{"containerPort": 5060, "protocol": "SCTP"}],
                    }
                ]
            },
        },
    )
    cluster.create(
        "services",
        "ns",
        {
            "metadata": {"name": "np"},
            "spec": {
                "type": "NodePort",
                "selector": {"app": "np"},
                "ports": [{"name": "sctp", "port": 5060, "protocol": "SCTP", "nodePort": 30960}],
            },
        },
    )
    cluster.advance()
    lab = nodetools.run(cluster, node, "nft list ruleset")[1]
    names = [name for _kind, name, _lines in _blocks(lab)]
    (ext,) = [n for n in names if n.startswith("external-")]
    svc = ext.replace("external-", "service-", 1)
    assert ext.endswith("-ns/np/sctp/sctp") and svc in names
    assert f"sctp . 30960 : goto {ext}" in lab
    assert _chain_rules(lab, ext) == [
        'meta mark set meta mark | 0x00004000 comment "masquerade"',
        f"goto {svc}",
    ]


def test_before_1_36_the_lab_keeps_the_endpoint_chain_form() -> None:
    lab, (pod_ip,) = _lab_1_36_sctp("1.35.4")
    chain = "service-TIR6ZLUK-sctp-guest-proxy/sctp-svc/sctp/sctp"
    rules = _chain_rules(lab, chain)
    (vmap,) = [r for r in rules if r.startswith("numgen random mod 1 vmap { 0 : goto endpoint-")]
    endpoint = vmap.split("goto ")[1].rstrip(" }")
    assert _chain_rules(lab, endpoint) == [
        f"ip saddr {pod_ip} jump mark-for-masquerade",
        f"meta l4proto sctp dnat to {pod_ip}:9595",
    ]
    assert "chain mark-for-masquerade {" in lab and "hairpin-connections" not in lab
    path = nodeparse.nft_service_path(lab, "10.96.0.95", 9595)
    assert path is not None and path.destinations == [f"{pod_ip}:9595"]


def test_no_shipped_nftables_profile_runs_1_36_yet() -> None:
    # So the lab's goldens (tests/fixtures/node/lab-nft-list-ruleset.txt, written at 1.31.2
    # by lab.guest.lab_golden) and every shipped profile keep the endpoint-chain form; the
    # 1.36 form is tested above and in tests/kernel/battery/test_basic_tests_on_the_lab.py.
    profiles = ROOT / "lab" / "profiles"
    every = [*load_profiles(profiles), *load_profiles(profiles / "situations")]
    nft = {p["name"]: p["kubernetes_version"] for p in every if p["kube_proxy"] == "nftables"}
    assert nft == {"ovn-nftables": "1.35.4"}
