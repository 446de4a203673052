"""The battery's node parsers read real kernel tools' output (captured in the qemu guest).

Fixtures in tests/fixtures/node/ come from lab/guest/capture_golden.sh: kube-proxy-style
rules for the SCTP service sctp-guest/sctp-svc:sctp (endpoints 10.0.2.2:8082 and
10.0.3.2:8082) at 10.96.0.10:95 (iptables), 10.96.0.11:96 (ipvs) and 10.96.0.12:97 (nftables).
No qemu needed.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kernel.battery import nodeparse
from tests.kernel.conclusions import iptables_conclusions, ipvs_conclusions, nft_conclusions

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "node"
ENDPOINTS = [("10.0.2.2", 8082), ("10.0.3.2", 8082)]


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_lsmod_before_any_socket_shows_no_sctp() -> None:
    assert not nodeparse.sctp_module_loaded(fixture("lsmod-before.txt"))


def test_lsmod_after_a_socket_shows_sctp_and_its_dependencies() -> None:
    after = fixture("lsmod-after.txt")
    assert nodeparse.sctp_module_loaded(after)
    for dep in ("libcrc32c", "udp_tunnel", "ip6_udp_tunnel"):
        assert any(line.split()[:1] == [dep] for line in after.splitlines()), dep


def test_iptables_save_has_the_kube_services_rule_for_the_sctp_cluster_ip() -> None:
    rules = nodeparse.iptables_sctp_rules(
        fixture("iptables-save.txt"), chain_prefix="KUBE-SERVICES", dest_ip="10.96.0.10", dport=95
    )
    assert len(rules) == 1
    assert "-j KUBE-SVC-" in rules[0]


def test_iptables_save_has_one_sctp_dnat_per_endpoint_in_kube_sep_chains() -> None:
    dnat = [
        r
        for r in nodeparse.iptables_sctp_rules(
            fixture("iptables-save.txt"), chain_prefix="KUBE-SEP-"
        )
        if "-j DNAT" in r
    ]
    targets = sorted(r.split("--to-destination ")[1] for r in dnat)
    assert targets == [f"{ip}:{port}" for ip, port in ENDPOINTS]


def test_iptables_filters_exclude_other_ports_and_addresses() -> None:
    text = fixture("iptables-save.txt")
    assert nodeparse.iptables_sctp_rules(text, dport=96) == []
    assert nodeparse.iptables_sctp_rules(text, dest_ip="10.96.0.11") == []


def test_ipvsadm_lists_the_sctp_virtual_service_with_masquerading_reals() -> None:
    services = nodeparse.ipvs_sctp_services(fixture("ipvsadm-Ln.txt"))
    assert len(services) == 1
    svc = services[0]
    assert (svc.vip, svc.port, svc.scheduler) == ("10.96.0.11", 96, "rr")
    assert sorted(svc.reals) == [(ip, port, "Masq") for ip, port in ENDPOINTS]


def test_nft_ruleset_has_the_sctp_element_of_the_service_ips_map() -> None:
    elements = nodeparse.nft_sctp_service_elements(fixture("nft-list-ruleset.txt"))
    assert len(elements) == 1
    ip, port, verdict = elements[0]
    assert (ip, port) == ("10.96.0.12", 97)
    assert verdict == "goto service-C24XJXMN-sctp-guest/sctp-svc/sctp/sctp"


def test_each_proxier_output_shows_no_sctp_service_of_the_other_kinds() -> None:
    assert nodeparse.ipvs_sctp_services(fixture("iptables-save.txt")) == []
    assert nodeparse.nft_sctp_service_elements(fixture("iptables-save.txt")) == []
    assert nodeparse.iptables_sctp_rules(fixture("ipvsadm-Ln.txt")) == []
    assert nodeparse.iptables_sctp_rules(fixture("nft-list-ruleset.txt")) == []


def test_the_network_policy_filter_allows_sctp_to_its_port() -> None:
    rules = nodeparse.iptables_sctp_rules(fixture("netpol-iptables-save.txt"), dport=8082)
    assert len(rules) == 1 and rules[0].endswith("-j ACCEPT")


def test_every_guest_check_passed_when_the_fixtures_were_captured() -> None:
    lines = fixture("results.txt").splitlines()
    assert lines, "results.txt is empty"
    assert [ln for ln in lines if not ln.startswith("PASS ")] == []


# ---- the lab's emulated node output for the same objects parses to the same conclusions


def _lab_cluster(proxier: str, port: int):
    cluster_mod = pytest.importorskip("lab.cluster")
    profiles = pytest.importorskip("lab.profiles")
    nodetools = pytest.importorskip("lab.nodetools")
    profile = profiles.validate_profile(
        {
            "name": f"golden-{proxier}",
            "plugin": "calico",
            "plugin_version": "3.28.0",
            "kubernetes_version": "1.31.2",
            "proxier": proxier,
            "nodes": 1,
        }
    )
    cluster = cluster_mod.Cluster(profile)
    node = cluster.nodes[0]
    before = nodetools.run(cluster, node, "lsmod")[1]
    cluster.create_namespace({"metadata": {"name": "sctp-guest"}})
    for name in ("srv1", "srv2"):
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
    cluster.create(
        "services",
        "sctp-guest",
        {
            "metadata": {"name": "sctp-svc"},
            "spec": {
                "selector": {"app": "sctp-guest"},
                "ports": [{"name": "sctp", "port": port, "targetPort": 8082, "protocol": "SCTP"}],
            },
        },
    )
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        cluster.advance()
        if all(cluster.pod_is_ready(("sctp-guest", n)) for n in ("srv1", "srv2")):
            break
        time.sleep(0.02)

    def out(cmd: str) -> str:
        return nodetools.run(cluster, node, cmd)[1]

    return before, out


def test_lab_iptables_output_reaches_the_same_conclusions_as_the_kernel() -> None:
    before, out = _lab_cluster("iptables", 95)
    assert iptables_conclusions(out("iptables-save")) == iptables_conclusions(
        fixture("iptables-save.txt")
    )
    assert nodeparse.sctp_module_loaded(before) == nodeparse.sctp_module_loaded(
        fixture("lsmod-before.txt")
    )
    assert nodeparse.sctp_module_loaded(out("lsmod")) == nodeparse.sctp_module_loaded(
        fixture("lsmod-after.txt")
    )


def test_lab_ipvs_output_reaches_the_same_conclusions_as_the_kernel() -> None:
    _before, out = _lab_cluster("ipvs", 96)
    lab, real = out("ipvsadm -Ln"), fixture("ipvsadm-Ln.txt")
    assert ipvs_conclusions(lab) == ipvs_conclusions(real)
    assert [s.port for s in nodeparse.ipvs_sctp_services(lab)] == [96]


def test_lab_nftables_output_reaches_the_same_conclusions_as_the_kernel() -> None:
    _before, out = _lab_cluster("nftables", 97)
    lab, real = out("nft list ruleset"), fixture("nft-list-ruleset.txt")
    assert nft_conclusions(lab) == nft_conclusions(real)
    assert [e[1] for e in nodeparse.nft_sctp_service_elements(lab)] == [97]
