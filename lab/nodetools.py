"""What node inspection commands print, in the real tools' formats.

The outputs follow kube-proxy (pkg/proxy/iptables, ipvs, nftables), kubenet's hostport manager
(pkg/kubelet/network/hostport), kmod's lsmod and ipvsadm, so the battery's parsers meet the
same text here as on a real node. The facts come from `lab.kubeproxy` (`service_ports`, looked
up here at each command) and the node itself; iptables and nft rules are printed by
`lab.iptables` and `lab.nftables`.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import shlex
from typing import TYPE_CHECKING

from lab import iptables, nftables
from lab.kubeproxy import NodeView, ServicePort, kube_proxy_mode, kube_router_ipvs, service_ports

if TYPE_CHECKING:
    from lab.nodes import Node

__all__ = ["NodeView", "ServicePort", "kube_proxy_mode", "run", "service_ports"]


# ---------------------------------------------------------------- command dispatch


def run(cluster: NodeView, node: Node, command: str) -> tuple[int, str]:
    """(exit code, output) of `sh -c COMMAND` on a node; supports `| grep PATTERN` filters."""
    stages = [s.strip() for s in command.split("|")]
    code, out = _run_one(cluster, node, stages[0])
    if code == 127:
        return code, out
    for stage in stages[1:]:
        argv = shlex.split(stage)
        if not argv or argv[0] != "grep":
            name = argv[0] if argv else stage
            return 127, f"sh: 1: {name}: not found\n"
        flags = [a for a in argv[1:] if a.startswith("-")]
        pattern = next((a for a in argv[1:] if not a.startswith("-")), "")
        ignore = any("i" in f for f in flags)
        invert = any("v" in f for f in flags)
        regex = re.compile(pattern, re.IGNORECASE if ignore else 0)
        lines = [ln for ln in out.splitlines() if bool(regex.search(ln)) != invert]
        out = "".join(ln + "\n" for ln in lines)
        code = 0 if lines else 1
    return code, out


def _run_one(cluster: NodeView, node: Node, command: str) -> tuple[int, str]:
    argv = shlex.split(command)
    if not argv:
        return 0, ""
    tool = argv[0].rsplit("/", 1)[-1]
    if tool == "lsmod":
        if cluster.profile["faults"].get("lsmod_fails"):
            return 1, "lsmod: ERROR: could not open '/proc/modules': No such file or directory\n"
        return 0, lsmod(cluster, node)
    if tool in ("iptables-save", "iptables-legacy-save", "iptables-nft-save"):
        table = None
        if "-t" in argv and argv.index("-t") + 1 < len(argv):
            table = argv[argv.index("-t") + 1]
        return 0, iptables_save(cluster, node, table)
    if tool in ("ip6tables-save",):
        return 0, ""
    if tool == "ipvsadm":
        return 0, ipvsadm(cluster)
    if tool == "nft" and argv[1:3] == ["list", "ruleset"]:
        return 0, nft_ruleset(cluster, node)
    if tool == "curl" and any(a.endswith(":10249/proxyMode") for a in argv):
        mode = kube_proxy_mode(cluster)
        return (7, "") if mode == "none" else (0, mode)
    if tool == "cat" and argv[1:] == ["/proc/sys/kernel/osrelease"]:
        return 0, "6.8.0-45-generic\n"
    if tool == "true":
        return 0, ""
    return 127, f"sh: {argv[0]}: not found\n"


# ---------------------------------------------------------------- lsmod

_BASE_MODULES: list[tuple[str, int, int, str]] = [
    ("xt_comment", 12288, 0, ""),
    ("xt_mark", 12288, 0, ""),
    ("xt_conntrack", 12288, 0, ""),
    ("nf_conntrack_netlink", 57344, 0, ""),
    ("xt_MASQUERADE", 16384, 0, ""),
    ("xt_addrtype", 12288, 0, ""),
    ("nft_compat", 20480, 0, ""),
    ("nf_tables", 376832, 1, "nft_compat"),
    ("br_netfilter", 32768, 0, ""),
    ("bridge", 421888, 1, "br_netfilter"),
    ("stp", 12288, 1, "bridge"),
    ("llc", 16384, 2, "bridge,stp"),
    ("overlay", 212992, 0, ""),
    ("nf_nat", 61440, 2, "nft_chain_nat,xt_MASQUERADE"),
    ("nf_conntrack", 196608, 4, "xt_conntrack,nf_nat,nf_conntrack_netlink,xt_MASQUERADE"),
    ("nf_defrag_ipv6", 24576, 1, "nf_conntrack"),
    ("nf_defrag_ipv4", 12288, 1, "nf_conntrack"),
    ("veth", 45056, 0, ""),
    ("ip_tables", 32768, 0, ""),
    ("x_tables", 65536, 6, "xt_comment,xt_mark,xt_conntrack,nft_compat,xt_MASQUERADE,xt_addrtype"),
    ("autofs4", 57344, 2, ""),
]


def _lsmod_line(name: str, size: int, used: int, holders: str) -> str:
    # kmod: printf("%-19s %8lu  %d", …) then " holder,holder" when there are holders.
    line = f"{name:<19} {size:>8}  {used}"
    return line + (f" {holders}" if holders else "") + "\n"


def lsmod(cluster: NodeView, node: Node) -> str:
    modules = list(_BASE_MODULES)
    proxier = kube_proxy_mode(cluster)
    if proxier == "ipvs" or kube_router_ipvs(cluster):
        modules = [
            ("ip_vs_rr", 12288, 4, ""),
            ("ip_vs_wrr", 12288, 0, ""),
            ("ip_vs_sh", 12288, 0, ""),
            ("ip_vs", 200704, 10, "ip_vs_rr,ip_vs_sh,ip_vs_wrr"),
            *modules,
        ]
    if proxier == "nftables":
        modules = [
            ("nft_chain_nat", 12288, 4, ""),
            ("nft_numgen", 12288, 2, ""),
            ("nft_ct", 24576, 6, ""),
            *modules,
        ]
    if node.sctp_loaded:
        # Newest modules first, as /proc/modules lists them.
        modules = [
            ("sctp", 434176, 4, ""),
            ("ip6_udp_tunnel", 16384, 1, "sctp"),
            ("udp_tunnel", 32768, 1, "sctp"),
            *modules,
        ]
        modules = [
            (n, s, u + 1, (h + ",sctp").lstrip(",")) if n == "libcrc32c" else (n, s, u, h)
            for n, s, u, h in modules
        ]
        if not any(m[0] == "libcrc32c" for m in modules):
            modules.append(("libcrc32c", 12288, 3, "nf_conntrack,nf_nat,sctp"))
    return "Module                  Size  Used by\n" + "".join(_lsmod_line(*m) for m in modules)


# ---------------------------------------------------------------- ipvsadm


def ipvsadm(cluster: NodeView) -> str:
    head = (
        "IP Virtual Server version 1.2.1 (size=4096)\n"
        "Prot LocalAddress:Port Scheduler Flags\n"
        "  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n"
    )
    # kube-router's service proxy programs IPVS the way kube-proxy's ipvs mode does.
    if kube_proxy_mode(cluster) != "ipvs" and not kube_router_ipvs(cluster):
        return head
    virtuals: list[tuple[str, str, int, list[tuple[str, int]]]] = []
    for sp in service_ports(cluster):
        virtuals.append((sp.protocol, sp.cluster_ip or "", sp.port, sp.endpoints))
        if sp.lb_ip:
            virtuals.append((sp.protocol, sp.lb_ip, sp.port, sp.endpoints))
        if sp.node_port:
            for node in cluster.nodes:
                virtuals.append((sp.protocol, node.host_ip, sp.node_port, sp.endpoints))

    def cmp_services(
        a: tuple[str, str, int, list[tuple[str, int]]],
        b: tuple[str, str, int, list[tuple[str, int]]],
    ) -> int:
        return (IP_PROTO[a[0]] - IP_PROTO[b[0]]) or _addr_cmp(a[1], b[1]) or (a[2] - b[2])

    def cmp_dests(a: tuple[str, int], b: tuple[str, int]) -> int:
        return _addr_cmp(a[0], b[0]) or (a[1] - b[1])

    lines = []
    for proto, vip, port, reals in sorted(virtuals, key=functools.cmp_to_key(cmp_services)):
        # ipvsadm 1.31 print_service_entry: "%-4s %s %s" (so "TCP  …" and "SCTP …").
        lines.append(f"{proto:<4} {vip}:{port} rr\n")
        for ip, target in sorted(reals, key=functools.cmp_to_key(cmp_dests)):
            lines.append(f"  -> {f'{ip}:{target}':<28} {'Masq':<7} {1:<6} {0:<10} {0:<10}\n")
    return head + "".join(lines)


IP_PROTO = {"TCP": 6, "UDP": 17, "SCTP": 132}


def _addr_cmp(a: str, b: str) -> int:
    """`ntohl(a) - ntohl(b)` stored in an int, as ipvsadm compares: 172.18.x sorts before 10.96.x."""
    diff = (int(ipaddress.IPv4Address(a)) - int(ipaddress.IPv4Address(b))) & 0xFFFFFFFF
    return diff - (1 << 32) if diff & 0x80000000 else diff


def ipvsadm_commands(cluster: NodeView) -> list[str]:
    """`ipvsadm -A/-a` commands that build the virtual servers `ipvsadm -Ln` lists (golden capture)."""
    flag = {"TCP": "-t", "UDP": "-u", "SCTP": "--sctp-service"}
    out: list[str] = []
    for line in ipvsadm(cluster).splitlines()[3:]:
        if not line.startswith("  ->"):
            proto, vip_port, sched = line.split()
            service = f"{flag[proto]} {vip_port}"
            out.append(f"ipvsadm -A {service} -s {sched}")
        else:
            real = line.split()[1]
            out.append(f"ipvsadm -a {service} -r {real} -m -w 1")
    return out


def iptables_save(cluster: NodeView, node: Node, table: str | None = None) -> str:
    return iptables.iptables_save(cluster, node, service_ports(cluster), table)


def nft_ruleset(cluster: NodeView, node: Node | None = None) -> str:
    if kube_proxy_mode(cluster) != "nftables":
        return ""
    return nftables.nft_ruleset(cluster, service_ports(cluster), node)
