"""The battery's rule matching, on the rules that the real kube-proxy wrote.

tests/fixtures/realcluster/ holds what upstream's kube-proxy (the release pinned in
cluster/release.env, built from its Go modules by cluster/build.sh) wrote into this kernel's
netfilter for hand-made Services of the real cluster (`make cluster`), captured by
cluster/capture-proxy-rules.sh (each file's header says how and when):

- sctp-capture/sctp-svc: ClusterIP 10.0.0.95, port 9595/SCTP, endpoint 10.88.0.11:9595;
- sctp-capture/tcp-svc: ClusterIP 10.0.0.80, port 8080/TCP, endpoint 10.88.0.10:8080.

`kube-proxy-MODE-tcp.txt` was captured with the TCP Service alone, `kube-proxy-MODE-sctp.txt`
with both. Unlike tests/fixtures/node/ (kube-proxy-style rules written by a script in the qemu
guest), nothing here was written by this project. No cluster needed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernel.battery import nodeparse

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "realcluster"
SCTP_VIP, SCTP_PORT, SCTP_ENDPOINT = "10.0.0.95", 9595, "10.88.0.11:9595"
TCP_VIP, TCP_PORT = "10.0.0.80", 8080


def capture(name: str) -> str:
    return (FIXTURES / name).read_text()


def pinned_release() -> str:
    text = (ROOT / "cluster" / "release.env").read_text()
    match = re.search(r"^KUBE_VERSION=(\S+)$", text, re.MULTILINE)
    assert match, "cluster/release.env pins no KUBE_VERSION"
    return match.group(1)


@pytest.mark.parametrize(
    "name",
    [
        "kube-proxy-iptables-sctp.txt",
        "kube-proxy-iptables-tcp.txt",
        "kube-proxy-nftables-sctp.txt",
        "kube-proxy-nftables-tcp.txt",
    ],
)
def test_each_capture_says_it_came_from_the_pinned_release(name: str) -> None:
    header = [ln for ln in capture(name).splitlines() if ln.startswith("#")]
    text = "\n".join(header)
    assert f"real kube-proxy {pinned_release()}" in text, (
        f"{name} was not captured from the pinned release: run cluster/capture-proxy-rules.sh"
    )
    assert "cluster/capture-proxy-rules.sh" in text


# ---- iptables mode: what service-iptables-rules reads


def test_the_battery_finds_the_sctp_service_path_in_real_iptables_rules() -> None:
    path = nodeparse.iptables_service_path(
        capture("kube-proxy-iptables-sctp.txt"), SCTP_VIP, SCTP_PORT
    )
    assert path is not None
    assert "-p sctp" in path.jump and f"-d {SCTP_VIP}/32" in path.jump
    assert path.chain.startswith("KUBE-SVC-")
    # The DNAT of the endpoint's KUBE-SEP chain, as service-iptables-rules requires.
    assert path.destinations == [SCTP_ENDPOINT]
    assert len(path.dnat) == 1 and path.dnat[0].startswith("-A KUBE-SEP-")


def test_the_sctp_rules_of_the_real_capture_are_the_sctp_services_only() -> None:
    text = capture("kube-proxy-iptables-sctp.txt")
    services = nodeparse.iptables_sctp_rules(text, chain_prefix="KUBE-SERVICES")
    assert len(services) == 1 and f"--dport {SCTP_PORT}" in services[0]
    assert nodeparse.iptables_sctp_rules(text, dport=TCP_PORT) == []
    assert nodeparse.iptables_sctp_rules(text, dest_ip=TCP_VIP) == []


def test_the_real_iptables_capture_demonstrates_the_iptables_proxier() -> None:
    modes = nodeparse.proxier_modes_with(
        SCTP_VIP,
        SCTP_PORT,
        "SCTP",
        iptables=capture("kube-proxy-iptables-sctp.txt"),
        ipvs="",
        nftables=capture("kube-proxy-nftables-tcp.txt"),
    )
    assert modes == ["iptables"]


def test_a_tcp_only_capture_matches_no_sctp_service() -> None:
    text = capture("kube-proxy-iptables-tcp.txt")
    # The TCP Service's rules are really there...
    assert re.search(rf"-A KUBE-SERVICES -d {TCP_VIP}/32 -p tcp .*--dport {TCP_PORT}", text)
    # ...and none of them passes for SCTP, whatever the VIP and port asked for.
    assert nodeparse.iptables_sctp_rules(text) == []
    assert nodeparse.iptables_service_path(text, TCP_VIP, TCP_PORT) is None
    assert nodeparse.iptables_service_path(text, SCTP_VIP, SCTP_PORT) is None
    no_modes = nodeparse.proxier_modes_with(
        SCTP_VIP, SCTP_PORT, "SCTP", iptables=text, ipvs="", nftables=""
    )
    assert no_modes == []


# ---- nftables mode


def test_the_battery_finds_the_sctp_element_in_real_nftables_rules() -> None:
    elements = nodeparse.nft_sctp_service_elements(capture("kube-proxy-nftables-sctp.txt"))
    assert len(elements) == 1
    ip, port, verdict = elements[0]
    assert (ip, port) == (SCTP_VIP, SCTP_PORT)
    assert verdict.startswith("goto service-") and "sctp-capture/sctp-svc/sctp" in verdict


@pytest.mark.parametrize(
    "name", ["kube-proxy-nftables-sctp.txt", "guest-kube-proxy-nftables-sctp.txt"]
)
def test_service_iptables_rules_follows_real_nftables_rules_to_the_endpoint(name: str) -> None:
    """v1.36's kube-proxy DNATs in the service chain itself, with a numgen map."""
    path = nodeparse.nft_service_path(capture(name), SCTP_VIP, SCTP_PORT)
    assert path is not None
    assert path.element.startswith(f"{SCTP_VIP} . sctp . {SCTP_PORT} : goto service-")
    assert path.destinations == ["10.88.0.11:9595"]
    assert path.dnat == [
        "meta l4proto sctp dnat ip to numgen random mod 1 map { 0 : 10.88.0.11 . 9595 }"
    ]
    assert nodeparse.nft_service_path(capture(name), SCTP_VIP, SCTP_PORT + 1) is None
    assert (
        nodeparse.nft_service_path(capture("kube-proxy-nftables-tcp.txt"), TCP_VIP, TCP_PORT)
        is None
    )


def test_the_real_nftables_capture_demonstrates_the_nftables_proxier() -> None:
    modes = nodeparse.proxier_modes_with(
        SCTP_VIP,
        SCTP_PORT,
        "SCTP",
        iptables=capture("kube-proxy-iptables-tcp.txt"),
        ipvs="",
        nftables=capture("kube-proxy-nftables-sctp.txt"),
    )
    assert modes == ["nftables"]


def test_a_tcp_only_nftables_capture_has_no_sctp_element() -> None:
    text = capture("kube-proxy-nftables-tcp.txt")
    assert re.search(rf"{re.escape(TCP_VIP)} \. tcp \. {TCP_PORT} : goto service-", text)
    assert nodeparse.nft_sctp_service_elements(text) == []
    no_modes = nodeparse.proxier_modes_with(
        SCTP_VIP, SCTP_PORT, "SCTP", iptables="", ipvs="", nftables=text
    )
    assert no_modes == []


# ---- hostPort: the reference portmap plugin on the real node (cluster/node.sh)


def test_the_real_portmap_rules_dnat_the_sctp_host_port_to_the_pod() -> None:
    nat = nodeparse.iptables_table(capture("portmap-iptables-sctp-hostport.txt"), "nat")
    dnat = [
        r
        for r in nodeparse.iptables_sctp_rules(nat, dport=SCTP_PORT, chain_prefix="CNI-DN-")
        if "-j DNAT" in r
    ]
    assert len(dnat) == 1 and dnat[0].endswith("--to-destination 10.88.0.5:9595")
    entry = nodeparse.iptables_sctp_rules(nat, dport=SCTP_PORT, chain_prefix="CNI-HOSTPORT-DNAT")
    assert len(entry) == 1 and "-m multiport --dports 9595" in entry[0]
    # portmap's chains are CNI-*: the in-tree kubenet hostport manager's KUBE-HOSTPORTS chain
    # (which hostport-kubenet reads) is gone from the kubelet since 1.24.
    assert nodeparse.iptables_sctp_rules(nat, chain_prefix="KUBE-HOSTPORTS") == []


# ---- the same release's kube-proxy in the qemu guest (python -m lab.guest.real_proxy): real
# kernel SCTP and IPVS, a real SCTP association through sctp-guest-proxy/sctp-svc
# (10.0.0.95:9595/SCTP -> 10.88.0.11:9595) in each mode before these rules were captured.

GUEST_ENDPOINT = ("10.88.0.11", 9595)


def guest_capture(mode: str) -> str:
    return capture(f"guest-kube-proxy-{mode}-sctp.txt")


@pytest.mark.parametrize("mode", ["iptables", "ipvs", "nftables"])
def test_each_guest_capture_came_from_the_pinned_release_in_its_mode(mode: str) -> None:
    header = "\n".join(ln for ln in guest_capture(mode).splitlines() if ln.startswith("#"))
    assert f"real kube-proxy {pinned_release()}" in header and f"mode {mode}," in header
    assert f"Kubernetes {pinned_release()} ({mode})" in header  # `kube-proxy --version` there
    assert "lab.guest.real_proxy" in header


def test_the_battery_finds_the_sctp_path_in_the_guests_iptables_rules() -> None:
    text = guest_capture("iptables")
    path = nodeparse.iptables_service_path(text, SCTP_VIP, SCTP_PORT)
    assert path is not None and "-p sctp" in path.jump
    assert path.destinations == ["10.88.0.11:9595"]
    modes = nodeparse.proxier_modes_with(
        SCTP_VIP, SCTP_PORT, "SCTP", iptables=text, ipvs="", nftables=""
    )
    assert modes == ["iptables"]


def test_the_battery_finds_the_sctp_virtual_service_in_the_guests_ipvs_rules() -> None:
    text = guest_capture("ipvs")
    services = nodeparse.ipvs_sctp_services(text)
    assert [(s.vip, s.port, s.scheduler) for s in services] == [(SCTP_VIP, SCTP_PORT, "rr")]
    assert services[0].reals == [(*GUEST_ENDPOINT, "Masq")]
    modes = nodeparse.proxier_modes_with(
        SCTP_VIP, SCTP_PORT, "SCTP", iptables="", ipvs=text, nftables=""
    )
    assert modes == ["ipvs"]
    # The kubernetes Service's TCP virtual service is there too, and is no SCTP service.
    assert re.search(r"^TCP\s+10\.0\.0\.1:443 rr", text, re.MULTILINE)
    assert (
        nodeparse.proxier_modes_with("10.0.0.1", 443, "SCTP", iptables="", ipvs=text, nftables="")
        == []
    )


def test_the_battery_finds_the_sctp_element_in_the_guests_nftables_rules() -> None:
    text = guest_capture("nftables")
    elements = nodeparse.nft_sctp_service_elements(text)
    assert [(ip, port) for ip, port, _ in elements] == [(SCTP_VIP, SCTP_PORT)]
    assert "sctp-guest-proxy/sctp-svc/sctp" in elements[0][2]
    modes = nodeparse.proxier_modes_with(
        SCTP_VIP, SCTP_PORT, "SCTP", iptables="", ipvs="", nftables=text
    )
    assert modes == ["nftables"]


# ---- what hostport-kubenet reads: the hostPort's nat-table path to the pod


def test_the_hostport_path_follows_portmaps_real_chains_to_the_pod() -> None:
    paths = nodeparse.iptables_hostport_paths(capture("portmap-iptables-sctp-hostport.txt"), 9595)
    assert len(paths) == 1
    path = paths[0]
    assert path.entry.startswith("-A CNI-HOSTPORT-DNAT -p sctp ")
    assert "-m multiport --dports 9595 -j CNI-DN-7e9c32ad76658c1c7d640" in path.entry
    assert path.chain == "CNI-DN-7e9c32ad76658c1c7d640"
    # The pod chain's two SETMARK rules (hairpin and loopback masquerade) are not DNATs.
    assert path.dnat == [
        (
            "-A CNI-DN-7e9c32ad76658c1c7d640 -p sctp -m sctp --dport 9595 -j DNAT "
            "--to-destination 10.88.0.5:9595"
        )
    ]
    assert path.destinations == ["10.88.0.5:9595"]


def test_no_hostport_path_for_another_port_or_protocol() -> None:
    text = capture("portmap-iptables-sctp-hostport.txt")
    assert nodeparse.iptables_hostport_paths(text, 5060) == []
    as_tcp = text.replace("-p sctp -m sctp", "-p tcp -m tcp").replace("-p sctp", "-p tcp")
    assert nodeparse.iptables_hostport_paths(as_tcp, 9595) == []


def test_an_entry_rule_whose_pod_chain_has_no_dnat_carries_nothing() -> None:
    text = "\n".join(
        line
        for line in capture("portmap-iptables-sctp-hostport.txt").splitlines()
        if "-j DNAT" not in line
    )
    assert nodeparse.iptables_hostport_paths(text, 9595) == []


def test_the_in_tree_hostport_managers_chains_still_count() -> None:
    # The kubelet's own hostport manager (kubenet before 1.24), as the lab writes it.
    text = "\n".join(
        [
            "*nat",
            ":KUBE-HOSTPORTS - [0:0]",
            ":KUBE-HP-GJ3TFVVSCLGOZ4DX - [0:0]",
            (
                '-A KUBE-HOSTPORTS -p sctp -m comment --comment "hp_a hostport 5060" -m sctp '
                "--dport 5060 -j KUBE-HP-GJ3TFVVSCLGOZ4DX"
            ),
            (
                '-A KUBE-HP-GJ3TFVVSCLGOZ4DX -s 10.244.1.3/32 -m comment --comment "hp_a hostport '
                '5060" -j KUBE-MARK-MASQ'
            ),
            (
                '-A KUBE-HP-GJ3TFVVSCLGOZ4DX -p sctp -m comment --comment "hp_a hostport 5060" '
                "-m sctp -j DNAT --to-destination 10.244.1.3:5060"
            ),
            "COMMIT",
        ]
    )
    (path,) = nodeparse.iptables_hostport_paths(text, 5060)
    assert path.chain == "KUBE-HP-GJ3TFVVSCLGOZ4DX"
    assert path.destinations == ["10.244.1.3:5060"]


# ---- kube-proxy's nftables no-endpoint elements carry the service port's name as a comment


def test_the_no_endpoint_element_with_its_comment_is_read() -> None:
    # Real: `10.0.0.1 . tcp . 443 comment "default/kubernetes:https" : goto reject-chain` in
    # the `no-endpoint-services` map (the guest's kube-proxy v1.36.3, nftables mode).
    text = guest_capture("nftables")
    assert '10.0.0.1 . tcp . 443 comment "default/kubernetes:https" : goto reject-chain' in text
    modes = nodeparse.proxier_modes_with(
        "10.0.0.1", 443, "tcp", iptables="", ipvs="", nftables=text
    )
    assert modes == ["nftables"]
    # The same form for an SCTP Service without endpoints (kube-proxy writes the protocol's
    # name as the key's middle part, and the comment as it does for TCP).
    sctp = text.replace(
        '10.0.0.1 . tcp . 443 comment "default/kubernetes:https"',
        '10.0.0.96 . sctp . 5060 comment "ns/sctp-np:sctp"',
    )
    assert nodeparse.proxier_modes_with(
        "10.0.0.96", 5060, "sctp", iptables="", ipvs="", nftables=sctp
    ) == ["nftables"]
    assert ("10.0.0.96", 5060, "goto reject-chain") in nodeparse.nft_sctp_service_elements(sctp)
    # A port that only begins with the wanted one is another port.
    assert (
        nodeparse.proxier_modes_with("10.0.0.96", 506, "sctp", iptables="", ipvs="", nftables=sctp)
        == []
    )


def test_the_batterys_own_hostport_on_the_real_node_is_found_again() -> None:
    # What hostport-kubenet read on the real node (its 5060/SCTP pod), fed back to the parser.
    text = capture("battery-hostport-kubenet-evidence.txt")
    (path,) = nodeparse.iptables_hostport_paths(text, 5060)
    assert path.chain == "CNI-DN-e81df6075111154b9368d"
    assert path.destinations == ["10.88.0.3:5060"]
    assert nodeparse.iptables_hostport_paths(text, 9595) == []
