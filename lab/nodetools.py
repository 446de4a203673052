"""What node inspection commands print, in the real tools' formats.

The outputs follow kube-proxy (pkg/proxy/iptables, ipvs, nftables), kubenet's hostport manager
(pkg/kubelet/network/hostport), kmod's lsmod and ipvsadm, so the battery's parsers meet the
same text here as on a real node.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import ipaddress
import re
import shlex
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from lab.nodes import Node
    from lab.runtime import PodRuntime

Key = tuple[str, str]


class NodeView(Protocol):
    """What the node tools read of a cluster (its runtime provides it), and nothing more."""

    @property
    def profile(self) -> dict[str, Any]: ...
    @property
    def objects(self) -> dict[str, dict[Key, dict[str, Any]]]: ...
    @property
    def nodes(self) -> list[Node]: ...
    @property
    def pod_rt(self) -> dict[Key, PodRuntime]: ...

    def clock(self) -> float: ...
    def pod_is_ready(self, key: Key) -> bool: ...
    def lb_ip(self, key: Key) -> str | None: ...
    def service_backends(self, key: Key) -> list[tuple[Key, bool]]: ...
    def resolve_target_port(self, svc_port: dict[str, Any], pod_key: Key) -> int | None: ...


POD_CIDR = "10.244.0.0/16"


def _hash(text: str, length: int = 16) -> str:
    # kube-proxy's portProtoHash / hostportChainName: base32(sha256(...)) truncated.
    return base64.b32encode(hashlib.sha256(text.encode()).digest()).decode()[:length]


@dataclass
class ServicePort:
    namespace: str
    name: str
    port_name: str
    protocol: str  # upper-case
    cluster_ip: str | None
    port: int
    node_port: int | None
    lb_ip: str | None
    endpoints: list[tuple[str, int]]  # ready (ip, targetPort)

    @property
    def spn(self) -> str:
        # ServicePortName.String(): "ns/svc" plus ":port" only for a named port.
        return f"{self.namespace}/{self.name}" + (f":{self.port_name}" if self.port_name else "")

    @property
    def proto(self) -> str:
        return self.protocol.lower()


def service_ports(cluster: NodeView) -> list[ServicePort]:
    out: list[ServicePort] = []
    for key in sorted(cluster.objects["services"]):
        svc = cluster.objects["services"][key]
        spec = svc["spec"]
        if spec.get("type") == "ExternalName":
            continue
        cluster_ip = spec.get("clusterIP")
        if cluster_ip == "None":
            continue  # headless: kube-proxy ignores it
        for sp in spec.get("ports") or []:
            endpoints: list[tuple[str, int]] = []
            if key == ("default", "kubernetes"):
                endpoints = [(cluster.nodes[0].host_ip, 6443)]
            for pod, ready in cluster.service_backends(key):
                target = cluster.resolve_target_port(sp, pod)
                if ready and target is not None:
                    endpoints.append((cluster.pod_rt[pod].ip, target))
            out.append(
                ServicePort(
                    key[0],
                    key[1],
                    sp.get("name") or "",
                    sp.get("protocol", "TCP"),
                    cluster_ip,
                    sp["port"],
                    sp.get("nodePort"),
                    cluster.lb_ip(key),
                    sorted(set(endpoints)),
                )
            )
    return out


def _kube_router_ipvs(cluster: NodeView) -> bool:
    return cluster.profile.get("service_dataplane") == "kube-router-ipvs"


def kube_proxy_mode(cluster: NodeView) -> str:
    """The mode kube-proxy really runs (profile `kube_proxy`), not the one registered."""
    return str(cluster.profile.get("kube_proxy") or cluster.profile["proxier"])


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
        return 0, nft_ruleset(cluster)
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
    if proxier == "ipvs" or _kube_router_ipvs(cluster):
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


# ---------------------------------------------------------------- iptables-save


class _Table:
    def __init__(self, name: str, builtin: list[str]) -> None:
        self.name = name
        self.builtin = builtin
        self.chains: list[str] = []
        self.rules: dict[str, list[str]] = {}

    def chain(self, name: str) -> None:
        if name not in self.builtin and name not in self.chains:
            self.chains.append(name)

    def add(self, chain: str, rule: str) -> None:
        self.chain(chain)
        self.rules.setdefault(chain, []).append(f"-A {chain} {rule}")

    def render(self) -> str:
        order = self.builtin + sorted(self.chains)
        lines = [f"*{self.name}"]
        lines += [f":{c} ACCEPT [0:0]" for c in self.builtin]
        lines += [f":{c} - [0:0]" for c in sorted(self.chains)]
        for chain in order:
            lines += self.rules.get(chain, [])
        lines.append("COMMIT")
        return "\n".join(lines) + "\n"


def _kubelet_chains(nat: _Table, filt: _Table, mangle: _Table) -> None:
    for table in (nat, filt, mangle):
        table.chain("KUBE-KUBELET-CANARY")
    mangle.chain("KUBE-IPTABLES-HINT")
    filt.add("INPUT", "-j KUBE-FIREWALL")
    filt.add("OUTPUT", "-j KUBE-FIREWALL")
    filt.add(
        "KUBE-FIREWALL",
        "! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "
        '"block incoming localnet connections" -m conntrack ! --ctstate '
        "RELATED,ESTABLISHED,DNAT -j DROP",
    )


def _masq_chains(nat: _Table) -> None:
    nat.add(
        "POSTROUTING", '-m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING'
    )
    nat.add("KUBE-MARK-MASQ", "-j MARK --set-xmark 0x4000/0x4000")
    nat.add("KUBE-POSTROUTING", "-m mark ! --mark 0x4000/0x4000 -j RETURN")
    nat.add("KUBE-POSTROUTING", "-j MARK --set-xmark 0x4000/0x0")
    nat.add(
        "KUBE-POSTROUTING",
        '-m comment --comment "kubernetes service traffic requiring SNAT" '
        "-j MASQUERADE --random-fully",
    )


def _iptables_proxier(cluster: NodeView, nat: _Table, filt: _Table) -> None:
    _masq_chains(nat)
    nat.chain("KUBE-PROXY-CANARY")
    filt.chain("KUBE-PROXY-CANARY")
    for chain in ("PREROUTING", "OUTPUT"):
        nat.add(chain, '-m comment --comment "kubernetes service portals" -j KUBE-SERVICES')
    nat.chain("KUBE-NODEPORTS")
    for chain in ("INPUT", "FORWARD", "OUTPUT"):
        filt.add(
            chain,
            '-m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer '
            'firewall" -j KUBE-PROXY-FIREWALL',
        )
    filt.add(
        "INPUT", '-m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS'
    )
    filt.add(
        "INPUT",
        '-m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible '
        'service portals" -j KUBE-EXTERNAL-SERVICES',
    )
    filt.add("FORWARD", '-m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD')
    filt.add(
        "FORWARD",
        '-m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" '
        "-j KUBE-SERVICES",
    )
    filt.add(
        "OUTPUT",
        '-m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" '
        "-j KUBE-SERVICES",
    )
    filt.chain("KUBE-EXTERNAL-SERVICES")
    filt.chain("KUBE-PROXY-FIREWALL")
    filt.chain("KUBE-NODEPORTS")
    filt.chain("KUBE-SERVICES")
    filt.add("KUBE-FORWARD", "-m conntrack --ctstate INVALID -j DROP")
    filt.add(
        "KUBE-FORWARD",
        '-m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT',
    )
    filt.add(
        "KUBE-FORWARD",
        '-m comment --comment "kubernetes forwarding conntrack rule" -m conntrack '
        "--ctstate RELATED,ESTABLISHED -j ACCEPT",
    )
    for sp in service_ports(cluster):
        p = sp.proto
        if not sp.endpoints:
            # No endpoints: kube-proxy rejects in the filter table and writes no NAT rules.
            filt.add(
                "KUBE-SERVICES",
                f"-d {sp.cluster_ip}/32 "
                + _match(p, f"{sp.spn} has no endpoints", sp.port)
                + " -j REJECT --reject-with icmp-port-unreachable",
            )
            if sp.node_port:
                # iptables-save prints -p first, then the matches in the order kube-proxy gave them.
                filt.add(
                    "KUBE-EXTERNAL-SERVICES",
                    f"-p {p} -m comment --comment "
                    f"{_quote(sp.spn + ' has no endpoints')} -m addrtype --dst-type LOCAL "
                    f"-m {p} --dport {sp.node_port} -j REJECT --reject-with icmp-port-unreachable",
                )
            continue
        svc_chain = "KUBE-SVC-" + _hash(sp.spn + p)
        ext_chain = "KUBE-EXT-" + _hash(sp.spn + p)
        nat.add(
            "KUBE-SERVICES",
            f"-d {sp.cluster_ip}/32 "
            + _match(p, f"{sp.spn} cluster IP", sp.port)
            + f" -j {svc_chain}",
        )
        if sp.lb_ip:
            nat.add(
                "KUBE-SERVICES",
                f"-d {sp.lb_ip}/32 "
                + _match(p, f"{sp.spn} loadbalancer IP", sp.port)
                + f" -j {ext_chain}",
            )
        if sp.node_port:
            nat.add("KUBE-NODEPORTS", _match(p, sp.spn, sp.node_port) + f" -j {ext_chain}")
            nat.add(
                ext_chain,
                f'-m comment --comment "masquerade traffic for {sp.spn} external '
                'destinations" -j KUBE-MARK-MASQ',
            )
            nat.add(ext_chain, f"-j {svc_chain}")
        nat.add(
            svc_chain,
            f"! -s {POD_CIDR} -d {sp.cluster_ip}/32 "
            + _match(p, f"{sp.spn} cluster IP", sp.port)
            + " -j KUBE-MARK-MASQ",
        )
        count = len(sp.endpoints)
        for i, (ip, target) in enumerate(sp.endpoints):
            endpoint = f"{ip}:{target}"
            sep = "KUBE-SEP-" + _hash(sp.spn + p + endpoint)
            stat = ""
            if i < count - 1:
                stat = f" -m statistic --mode random --probability {_probability(count - i)}"
            nat.add(svc_chain, f'-m comment --comment "{sp.spn} -> {endpoint}"{stat} -j {sep}')
            nat.add(sep, f"-s {ip}/32 -m comment --comment {_quote(sp.spn)} -j KUBE-MARK-MASQ")
            nat.add(
                sep,
                f"-p {p} -m comment --comment {_quote(sp.spn)} -m {p} -j DNAT "
                f"--to-destination {endpoint}",
            )
    nat.add(
        "KUBE-SERVICES",
        '-m comment --comment "kubernetes service nodeports; NOTE: this must be '
        'the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS',
    )


def _match(proto: str, comment: str, port: int) -> str:
    return f"-p {proto} -m comment --comment {_quote(comment)} -m {proto} --dport {port}"


_NO_QUOTE = re.compile(r"[_\-0-9a-zA-Z]+")


def _quote(comment: str) -> str:
    """libxtables' xtables_save_string: bare only when every character is in [_-0-9a-zA-Z],
    else double-quoted with `"`, `\\` and `'` escaped by a backslash ("ns/svc:port" is quoted)."""
    if _NO_QUOTE.fullmatch(comment):
        return comment
    return '"' + re.sub(r"([\"\\'])", r"\\\1", comment) + '"'


def _probability(remaining: int) -> str:
    """`-m statistic --probability` as iptables-save prints it back: kube-proxy writes
    %0.10f of 1/n, the kernel keeps round(p * 2^31), libxt_statistic prints %.11f of that."""
    written = float(f"{1.0 / remaining:0.10f}")
    return f"{round(written * 0x80000000) / 0x80000000:.11f}"


def _ipvs_proxier(cluster: NodeView, nat: _Table, filt: _Table) -> None:
    _masq_chains(nat)
    for chain in ("PREROUTING", "OUTPUT"):
        nat.add(chain, '-m comment --comment "kubernetes service portals" -j KUBE-SERVICES')
    nat.add("KUBE-LOAD-BALANCER", "-j KUBE-MARK-MASQ")
    protos = sorted({sp.protocol for sp in service_ports(cluster) if sp.node_port})
    for proto in protos:
        suffix = "" if proto == "TCP" else ("-HASH" if proto == "SCTP" else "")
        nat.add(
            "KUBE-NODE-PORT",
            f'-p {proto.lower()} -m comment --comment "Kubernetes nodeport '
            f'{proto} port for masquerade purpose" -m set --match-set '
            f"KUBE-NODE-PORT-{proto}{suffix} dst{',dst' if suffix else ''} "
            "-j KUBE-MARK-MASQ",
        )
    nat.chain("KUBE-NODE-PORT")
    nat.add(
        "KUBE-SERVICES",
        f'! -s {POD_CIDR} -m comment --comment "Kubernetes service cluster ip + '
        'port for masquerade purpose" -m set --match-set KUBE-CLUSTER-IP '
        "dst,dst -j KUBE-MARK-MASQ",
    )
    nat.add("KUBE-SERVICES", "-m addrtype --dst-type LOCAL -j KUBE-NODE-PORT")
    nat.add("KUBE-SERVICES", "-m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT")
    filt.add("INPUT", '-m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-FILTER')
    filt.add("INPUT", '-m comment --comment "kube-proxy firewall rules" -j KUBE-PROXY-FIREWALL')
    filt.add("INPUT", '-m comment --comment "kubernetes health check rules" -j KUBE-NODE-PORT')
    filt.add("FORWARD", '-m comment --comment "kube-proxy firewall rules" -j KUBE-PROXY-FIREWALL')
    filt.add("FORWARD", '-m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD')
    filt.add(
        "KUBE-FORWARD",
        '-m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT',
    )
    filt.add("KUBE-IPVS-FILTER", "-m set --match-set KUBE-LOAD-BALANCER dst,dst -j RETURN")
    filt.add("KUBE-IPVS-FILTER", "-m set --match-set KUBE-CLUSTER-IP dst,dst -j RETURN")
    filt.add(
        "KUBE-IPVS-FILTER",
        "-m conntrack --ctstate NEW -m set --match-set KUBE-IPVS-IPS dst "
        "-j REJECT --reject-with icmp-port-unreachable",
    )
    filt.chain("KUBE-PROXY-FIREWALL")
    filt.chain("KUBE-NODE-PORT")


def _hostports(cluster: NodeView, node: Node, nat: _Table) -> None:
    nat.chain("KUBE-HOSTPORTS")
    for chain in ("PREROUTING", "OUTPUT"):
        nat.add(
            chain,
            '-m comment --comment "kube hostport portals" -m addrtype --dst-type LOCAL '
            "-j KUBE-HOSTPORTS",
        )
    for key in sorted(cluster.objects["pods"]):
        rt = cluster.pod_rt[key]
        pod = cluster.objects["pods"][key]
        if rt.node != node.index or not cluster.pod_is_ready(key) or pod["spec"].get("hostNetwork"):
            continue
        full_name = f"{key[1]}_{key[0]}"  # kubelet's pod full name: name_namespace
        for container in pod["spec"].get("containers") or []:
            for port in container.get("ports") or []:
                host_port = port.get("hostPort")
                if not host_port:
                    continue
                proto = port.get("protocol", "TCP")
                p = proto.lower()
                chain = "KUBE-HP-" + _hash(f"{host_port}{proto}{full_name}")
                comment = f'"{full_name} hostport {host_port}"'
                nat.add(
                    "KUBE-HOSTPORTS",
                    f"-p {p} -m comment --comment {comment} -m {p} --dport {host_port} -j {chain}",
                )
                nat.add(chain, f"-s {rt.ip}/32 -m comment --comment {comment} -j KUBE-MARK-MASQ")
                nat.add(
                    chain,
                    f"-p {p} -m comment --comment {comment} -m {p} -j DNAT "
                    f"--to-destination {rt.ip}:{port['containerPort']}",
                )


def iptables_save(cluster: NodeView, node: Node, table: str | None = None) -> str:
    nat = _Table("nat", ["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"])
    filt = _Table("filter", ["INPUT", "FORWARD", "OUTPUT"])
    mangle = _Table("mangle", ["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"])
    _kubelet_chains(nat, filt, mangle)
    proxier = kube_proxy_mode(cluster)
    if proxier == "iptables":
        _iptables_proxier(cluster, nat, filt)
    elif proxier == "ipvs":
        _ipvs_proxier(cluster, nat, filt)
    if cluster.profile["kubenet"]:
        _hostports(cluster, node, nat)
    when = datetime.fromtimestamp(cluster.clock(), tz=UTC).strftime("%a %b %d %H:%M:%S %Y")
    out = []
    for t in (mangle, filt, nat):
        if table and t.name != table:
            continue
        out.append(f"# Generated by iptables-save v1.8.9 (nf_tables) on {when}\n")
        out.append(t.render())
        out.append(f"# Completed on {when}\n")
    return "".join(out)


# ---------------------------------------------------------------- ipvsadm


def ipvsadm(cluster: NodeView) -> str:
    head = (
        "IP Virtual Server version 1.2.1 (size=4096)\n"
        "Prot LocalAddress:Port Scheduler Flags\n"
        "  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n"
    )
    # kube-router's service proxy programs IPVS the way kube-proxy's ipvs mode does.
    if kube_proxy_mode(cluster) != "ipvs" and not _kube_router_ipvs(cluster):
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


# ---------------------------------------------------------------- nft


def _nft_hash(name: str) -> str:
    # kube-proxy nftables hashAndTruncate: base32(sha256(name))[:8] + "-" + name.
    return _hash(name, 8) + "-" + name


def _elements(items: list[str], per_line: int = 1) -> str:
    """nft's set_expr_print/calculate_delim: a map's elements one per line, an address set's
    two per line ("Break lines on existing sets"), continuation lines indented as nft does."""
    out = ""
    for i, item in enumerate(items):
        if i:
            out += ",\n\t\t\t     " if i % per_line == 0 else ", "
        out += item
    return "elements = { " + out + " }"


def nft_ruleset(cluster: NodeView) -> str:
    if kube_proxy_mode(cluster) != "nftables":
        return ""
    ports = service_ports(cluster)
    cluster_ips = sorted(
        {sp.cluster_ip for sp in ports if sp.cluster_ip},
        key=lambda ip: tuple(int(x) for x in ip.split(".")),
    )
    service_elems: list[str] = []
    no_endpoint: list[str] = []
    no_endpoint_nodeports: list[str] = []
    nodeport_elems: list[str] = []
    chains: list[str] = []
    for sp in ports:
        base = f"{sp.namespace}/{sp.name}/{sp.proto}/{sp.port_name}"
        svc_chain = "service-" + _nft_hash(base)
        ext_chain = "external-" + _nft_hash(base)
        if not sp.endpoints:
            no_endpoint.append(f"{sp.cluster_ip} . {sp.proto} . {sp.port} : goto reject-chain")
            if sp.node_port:
                no_endpoint_nodeports.append(f"{sp.proto} . {sp.node_port} : goto reject-chain")
            continue
        service_elems.append(f"{sp.cluster_ip} . {sp.proto} . {sp.port} : goto {svc_chain}")
        if sp.lb_ip:
            service_elems.append(f"{sp.lb_ip} . {sp.proto} . {sp.port} : goto {ext_chain}")
        if sp.node_port:
            nodeport_elems.append(f"{sp.proto} . {sp.node_port} : goto {ext_chain}")
        if sp.lb_ip or sp.node_port:
            chains.append(
                f"\tchain {ext_chain} {{\n\t\tjump mark-for-masquerade\n"
                f"\t\tgoto {svc_chain}\n\t}}\n"
            )
        vmap = []
        ep_chains = []
        for i, (ip, target) in enumerate(sp.endpoints):
            ep_chain = "endpoint-" + _nft_hash(f"{base}__{ip}/{target}")
            vmap.append(f"{i} : goto {ep_chain}")
            ep_chains.append(
                f"\tchain {ep_chain} {{\n\t\tip saddr {ip} jump mark-for-masquerade\n"
                f"\t\tmeta l4proto {sp.proto} dnat to {ip}:{target}\n\t}}\n"
            )
        chains.append(
            f"\tchain {svc_chain} {{\n"
            f"\t\tip daddr {sp.cluster_ip} {sp.proto} dport {sp.port} ip saddr != "
            f"{POD_CIDR} jump mark-for-masquerade\n"
            f"\t\tnumgen random mod {len(sp.endpoints)} vmap {{ {', '.join(vmap)} }}\n\t}}\n"
        )
        chains += ep_chains
    parts = [
        "table ip kube-proxy {\n",
        '\tcomment "rules for kube-proxy"\n',
        '\tset cluster-ips {\n\t\ttype ipv4_addr\n\t\tcomment "Active ClusterIPs"\n',
        f"\t\t{_elements(cluster_ips, per_line=2)}\n" if cluster_ips else "",
        "\t}\n\n",
        '\tset nodeport-ips {\n\t\ttype ipv4_addr\n\t\tcomment "IPs that accept NodePort traffic"\n',
        f"\t\t{_elements([n.host_ip for n in cluster.nodes], per_line=2)}\n\t}}\n\n",
        (
            "\tmap no-endpoint-services {\n\t\ttype ipv4_addr . inet_proto . inet_service : verdict\n"
            '\t\tcomment "vmap to drop or reject packets to services with no endpoints"\n'
        ),
        f"\t\t{_elements(no_endpoint)}\n" if no_endpoint else "",
        "\t}\n\n",
        (
            "\tmap no-endpoint-nodeports {\n\t\ttype inet_proto . inet_service : verdict\n"
            '\t\tcomment "vmap to drop or reject packets to service nodeports with no endpoints"\n'
        ),
        f"\t\t{_elements(no_endpoint_nodeports)}\n" if no_endpoint_nodeports else "",
        "\t}\n\n",
        (
            "\tmap service-ips {\n\t\ttype ipv4_addr . inet_proto . inet_service : verdict\n"
            '\t\tcomment "ClusterIP, ExternalIP and LoadBalancer IP traffic"\n'
        ),
        f"\t\t{_elements(service_elems)}\n" if service_elems else "",
        "\t}\n\n",
        (
            "\tmap service-nodeports {\n\t\ttype inet_proto . inet_service : verdict\n"
            '\t\tcomment "NodePort traffic"\n'
        ),
        f"\t\t{_elements(nodeport_elems)}\n" if nodeport_elems else "",
        "\t}\n\n",
        (
            "\tchain nat-prerouting {\n\t\ttype nat hook prerouting priority dstnat; policy accept;\n"
            "\t\tjump services\n\t}\n\n"
        ),
        (
            "\tchain nat-output {\n\t\ttype nat hook output priority -100; policy accept;\n"
            "\t\tjump services\n\t}\n\n"
        ),
        (
            "\tchain nat-postrouting {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n"
            "\t\tjump masquerading\n\t}\n\n"
        ),
        (
            "\tchain filter-input {\n\t\ttype filter hook input priority -110; policy accept;\n"
            "\t\tct state new jump service-endpoints-check\n"
            "\t\tct state new jump nodeport-endpoints-check\n\t}\n\n"
        ),
        (
            "\tchain nodeport-endpoints-check {\n"
            "\t\tip daddr @nodeport-ips meta l4proto . th dport vmap @no-endpoint-nodeports\n\t}\n\n"
        ),
        (
            "\tchain service-endpoints-check {\n"
            "\t\tip daddr . meta l4proto . th dport vmap @no-endpoint-services\n\t}\n\n"
        ),
        '\tchain reject-chain {\n\t\tcomment "helper for @no-endpoint-services"\n\t\treject\n\t}\n\n',
        "\tchain mark-for-masquerade {\n\t\tmeta mark set meta mark | 0x00004000\n\t}\n\n",
        (
            "\tchain masquerading {\n\t\tmeta mark & 0x00004000 == 0x00000000 return\n"
            "\t\tmeta mark set meta mark ^ 0x00004000\n\t\tmasquerade fully-random\n\t}\n\n"
        ),
        (
            "\tchain services {\n\t\tip daddr . meta l4proto . th dport vmap @service-ips\n"
            "\t\tip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports\n\t}\n"
        ),
    ]
    for chain in chains:
        parts.append("\n" + chain)
    parts.append("}\n")
    return "".join(parts)
