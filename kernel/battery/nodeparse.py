"""Parsers for text collected on cluster nodes (lsmod, iptables-save, ipvsadm, nft, proxyMode).

These functions are the only place the battery interprets node output, so the qemu guest
tests can check them against real kernel tools. They are pure, never raise on odd input,
and ignore lines they do not understand (real output carries banners, warnings and
comments that vary between tool versions).
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from dataclasses import dataclass, field

__all__ = [
    "HostportPath",
    "IptablesServicePath",
    "IpvsService",
    "iptables_hostport_paths",
    "iptables_sctp_rules",
    "iptables_service_path",
    "iptables_table",
    "ipvs_sctp_services",
    "nft_sctp_service_elements",
    "nft_service_path",
    "proxy_mode",
    "sctp_module_loaded",
]

# Upstream e2e matches lsmod lines with `^\s*sctp\s+` (test/e2e/network/service.go).
_LSMOD_SCTP = re.compile(r"^\s*sctp\s+", re.MULTILINE)


def sctp_module_loaded(lsmod_text: str) -> bool:
    """True when `lsmod` output lists the sctp module (not merely a module that uses it)."""
    return bool(_LSMOD_SCTP.search(lsmod_text or ""))


def _rule_tokens(line: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError:  # an unbalanced quote in a comment: fall back to whitespace
        return line.split()


def _option_values(tokens: list[str], *names: str) -> list[str]:
    return [tokens[i + 1] for i, tok in enumerate(tokens[:-1]) if tok in names]


def _protocol_is_sctp(tokens: list[str]) -> bool:
    # `-p sctp`, `--protocol sctp`, and numeric 132 (iptables-save prints names, but
    # iptables-legacy on some distributions prints the number when /etc/protocols is absent).
    return any(v.lower() in ("sctp", "132") for v in _option_values(tokens, "-p", "--protocol"))


def _dest_matches(tokens: list[str], dest_ip: str) -> bool:
    wanted = dest_ip.split("/")[0]
    for value in _option_values(tokens, "-d", "--destination"):
        try:
            if ipaddress.ip_address(wanted) in ipaddress.ip_network(value, strict=False):
                return True
        except ValueError:
            if value.split("/")[0] == wanted:
                return True
    return False


def _dport_matches(tokens: list[str], dport: int) -> bool:
    for value in _option_values(tokens, "--dport", "--destination-port", "--dports"):
        for part in value.split(","):
            lo, _, hi = part.partition(":")
            try:
                if int(lo) <= dport <= int(hi or lo):
                    return True
            except ValueError:
                continue
    return False


def iptables_sctp_rules(
    save_text: str,
    *,
    dport: int | None = None,
    dest_ip: str | None = None,
    chain_prefix: str | None = None,
) -> list[str]:
    """The `-A` lines of `iptables-save` output that match SCTP and every given filter.

    `chain_prefix` matches the appended chain's name (`KUBE-SERVICES`, `KUBE-HOSTPORTS`,
    `KUBE-SVC-` …); `dest_ip` matches `-d` addresses and networks; `dport` matches
    `--dport` values, ranges and `multiport --dports` lists.
    """
    found: list[str] = []
    for raw in (save_text or "").splitlines():
        line = raw.strip()
        if not line.startswith("-A "):
            continue
        tokens = _rule_tokens(line)
        if len(tokens) < 2 or not _protocol_is_sctp(tokens):
            continue
        if chain_prefix is not None and not tokens[1].startswith(chain_prefix):
            continue
        if dest_ip is not None and not _dest_matches(tokens, dest_ip):
            continue
        if dport is not None and not _dport_matches(tokens, dport):
            continue
        found.append(line)
    return found


def iptables_table(save_text: str, table: str) -> str:
    """The lines of one table (`*nat` … `COMMIT`) of `iptables-save` output; "" when absent."""
    out: list[str] = []
    inside = False
    for raw in (save_text or "").splitlines():
        line = raw.strip()
        if line.startswith("*"):
            inside = line[1:] == table
            continue
        if inside and line == "COMMIT":
            inside = False
            continue
        if inside:
            out.append(line)
    return "\n".join(out) + ("\n" if out else "")


def _jump(tokens: list[str]) -> str:
    values = _option_values(tokens, "-j", "--jump")
    return values[-1] if values else ""


@dataclass
class IptablesServicePath:
    """How kube-proxy's nat table carries one SCTP ClusterIP: the jump, its chain, the DNATs."""

    jump: str  # the `-A KUBE-SERVICES … -p sctp … -j KUBE-SVC-…` line
    chain: str  # KUBE-SVC-…
    dnat: list[str] = field(default_factory=list)  # `-A KUBE-SEP-… -p sctp … -j DNAT …` lines
    destinations: list[str] = field(default_factory=list)  # "ip:port" of each DNAT


def iptables_service_path(save_text: str, vip: str, port: int) -> IptablesServicePath | None:
    """The nat-table path of SCTP `vip:port`, or None when kube-proxy wrote none.

    Only the nat table counts: the filter table's `… has no endpoints … -j REJECT` rule also
    names the VIP, the port and `-p sctp`, yet carries no traffic.
    """
    nat = iptables_table(save_text, "nat")
    for line in iptables_sctp_rules(nat, dport=port, dest_ip=vip, chain_prefix="KUBE-SERVICES"):
        chain = _jump(_rule_tokens(line))
        if not chain.startswith("KUBE-SVC-"):
            continue
        path = IptablesServicePath(jump=line, chain=chain)
        rules = [
            (raw.strip(), _rule_tokens(raw.strip()))
            for raw in nat.splitlines()
            if raw.strip().startswith("-A ")
        ]
        endpoints = [
            _jump(t)
            for _l, t in rules
            if len(t) > 1 and t[1] == chain and _jump(t).startswith("KUBE-SEP-")
        ]
        for text, tokens in rules:
            if (
                len(tokens) > 1
                and tokens[1] in endpoints
                and _jump(tokens) == "DNAT"
                and _protocol_is_sctp(tokens)
            ):
                path.dnat.append(text)
                path.destinations += _option_values(tokens, "--to-destination")
        return path
    return None


# Who writes a pod's hostPort into the nat table, and how: the entry chain holds one rule per
# hostPort (`-p sctp … --dport P` or `-m multiport --dports P`) jumping to a chain of the pod,
# whose rule DNATs to the pod. The reference CNI portmap plugin (iptables backend; what kubenet
# clusters run since the kubelet's own hostport manager went in 1.24): CNI-HOSTPORT-DNAT ->
# CNI-DN-<hash> (tests/fixtures/realcluster/portmap-iptables-sctp-hostport.txt). The in-tree
# kubenet hostport manager before 1.24: KUBE-HOSTPORTS -> KUBE-HP-<hash>.
HOSTPORT_CHAINS: tuple[tuple[str, str], ...] = (
    ("CNI-HOSTPORT-DNAT", "CNI-DN-"),
    ("KUBE-HOSTPORTS", "KUBE-HP-"),
)


@dataclass
class HostportPath:
    """How the nat table carries one SCTP hostPort: the entry rule, the pod's chain, its DNATs."""

    entry: str  # `-A CNI-HOSTPORT-DNAT -p sctp … --dports 5060 -j CNI-DN-…` (or KUBE-HOSTPORTS)
    chain: str  # CNI-DN-… (or KUBE-HP-…)
    dnat: list[str] = field(default_factory=list)  # the chain's `-p sctp … -j DNAT` lines
    destinations: list[str] = field(default_factory=list)  # "ip:port" of each DNAT


def iptables_hostport_paths(save_text: str, port: int) -> list[HostportPath]:
    """The nat-table paths of SCTP hostPort `port` that end in a DNAT (HOSTPORT_CHAINS).

    An entry rule whose pod chain has no SCTP DNAT carries nothing and is left out; the
    pod chain's own `-s … -j CNI-HOSTPORT-SETMARK` / `KUBE-MARK-MASQ` lines are not DNATs.
    """
    nat = iptables_table(save_text, "nat")
    rules = [
        (raw.strip(), _rule_tokens(raw.strip()))
        for raw in nat.splitlines()
        if raw.strip().startswith("-A ")
    ]
    paths: list[HostportPath] = []
    for entry_chain, pod_prefix in HOSTPORT_CHAINS:
        for line in iptables_sctp_rules(nat, dport=port, chain_prefix=entry_chain):
            tokens = _rule_tokens(line)
            chain = _jump(tokens)
            if tokens[1] != entry_chain or not chain.startswith(pod_prefix):
                continue
            path = HostportPath(entry=line, chain=chain)
            for text, t in rules:
                if (
                    len(t) > 1
                    and t[1] == chain
                    and _jump(t) == "DNAT"
                    and _protocol_is_sctp(t)
                    and (not _option_values(t, "--dport", "--dports") or _dport_matches(t, port))
                ):
                    path.dnat.append(text)
                    path.destinations += _option_values(t, "--to-destination")
            if path.dnat:
                paths.append(path)
    return paths


@dataclass
class IpvsService:
    vip: str
    port: int
    scheduler: str
    reals: list[tuple[str, int, str]] = field(default_factory=list)


def _split_host_port(text: str) -> tuple[str, int] | None:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def ipvs_sctp_services(ipvsadm_text: str) -> list[IpvsService]:
    """The SCTP virtual services of `ipvsadm -Ln` output, each with its real servers.

    Real output: a 3-line header, then `SCTP  10.96.0.10:95 rr` lines each followed by
    `  -> 10.244.1.5:8082  Masq  1  0  0` lines (and `TCP`/`UDP`/`FWM` services we skip).
    """
    services: list[IpvsService] = []
    current: IpvsService | None = None
    for raw in (ipvsadm_text or "").splitlines():
        fields = raw.split()
        if not fields:
            continue
        head = fields[0].upper()
        if head in ("TCP", "UDP", "SCTP", "FWM"):
            current = None
            if head != "SCTP" or len(fields) < 2:
                continue
            hostport = _split_host_port(fields[1])
            if hostport is None:
                continue
            scheduler = fields[2] if len(fields) > 2 else ""
            current = IpvsService(vip=hostport[0], port=hostport[1], scheduler=scheduler)
            services.append(current)
        elif head == "->" and current is not None and len(fields) >= 2:
            hostport = _split_host_port(fields[1])
            if hostport is None:  # the column header line "-> RemoteAddress:Port Forward …"
                continue
            forward = fields[2] if len(fields) > 2 else ""
            current.reals.append((hostport[0], hostport[1], forward))
    return services


# One element of a kube-proxy nftables verdict map: `10.96.0.10 . sctp . 95 : goto service-…`,
# or, as kube-proxy writes the `no-endpoint-services` and `no-endpoint-nodeports` elements, with
# the service port's name as a comment before the verdict:
# `10.0.0.1 . tcp . 443 comment "default/kubernetes:https" : goto reject-chain`
# (tests/fixtures/realcluster/guest-kube-proxy-nftables-sctp.txt).
_NFT_COMMENT = r'(?:\s+comment\s+"[^"]*")?'
_NFT_ELEMENT = re.compile(
    r"(?P<ip>[0-9a-fA-F.:]+)\s*\.\s*(?P<proto>sctp|132)\s*\.\s*(?P<port>\d+)"
    + _NFT_COMMENT
    + r"\s*:\s*(?P<verdict>[^,}]+)"
)


def nft_sctp_service_elements(ruleset_text: str) -> list[tuple[str, int, str]]:
    """(ip, port, verdict) for each `ip . sctp . port : verdict` map element of `nft list ruleset`.

    kube-proxy's nftables mode keys `service-ips` (and `service-nodeports`) by
    `ipv4_addr . inet_proto . inet_service`; elements may span several lines inside
    `elements = { … }`, so the text is scanned as a whole, not line by line.
    """
    found: list[tuple[str, int, str]] = []
    for match in _NFT_ELEMENT.finditer(ruleset_text or ""):
        ip = match.group("ip")
        try:
            ipaddress.ip_address(ip)
        except ValueError:
            continue
        found.append((ip, int(match.group("port")), " ".join(match.group("verdict").split())))
    return found


def proxier_modes_with(
    vip: str, port: int, protocol: str, *, iptables: str, ipvs: str, nftables: str
) -> list[str]:
    """The kube-proxy modes whose own tables carry service `vip:port/protocol`.

    iptables: a nat-table `KUBE-SERVICES` rule for the VIP and port jumping to a KUBE-SVC
    chain; ipvs: an `ipvsadm -Ln` virtual service; nftables: a `service-ips` (or
    `no-endpoint-services`) element `vip . proto . port`. A node that switched modes may
    keep both: the caller takes a mode only when exactly one is found.
    """
    proto = protocol.lower()
    modes: list[str] = []
    for raw in iptables_table(iptables, "nat").splitlines():
        tokens = _rule_tokens(raw.strip())
        if (
            len(tokens) > 1
            and tokens[1] == "KUBE-SERVICES"
            and _dest_matches(tokens, vip)
            and _dport_matches(tokens, port)
            and _jump(tokens).startswith("KUBE-SVC-")
            and proto in [v.lower() for v in _option_values(tokens, "-p", "--protocol")]
        ):
            modes.append("iptables")
            break
    for raw in (ipvs or "").splitlines():
        fields = raw.split()
        if (
            len(fields) >= 2
            and fields[0].lower() == proto
            and _split_host_port(fields[1]) == (vip, port)
        ):
            modes.append("ipvs")
            break
    element = re.compile(
        rf"(?<![0-9.]){re.escape(vip)}\s*\.\s*{proto}\s*\.\s*{port}(?!\d){_NFT_COMMENT}\s*:"
    )
    if element.search(nftables or ""):
        modes.append("nftables")
    return modes


_PROXY_MODES = ("iptables", "ipvs", "nftables", "kernelspace", "userspace")


def proxy_mode(text: str) -> str | None:
    """The mode kube-proxy reports on :10249/proxyMode, or None for anything else (errors, HTML)."""
    value = (text or "").strip().lower()
    return value if value in _PROXY_MODES else None


_NFT_CHAIN = re.compile(r"^\s*chain\s+(\S+)\s*\{\s*$")
# A DNAT as kube-proxy's nftables mode writes it: `dnat to 10.88.0.4:5060` in an endpoint
# chain, or (v1.36) one map in the service chain:
# `dnat ip to numgen random mod 1 map { 0 : 10.88.0.11 . 9595 }`.
_NFT_DNAT_TO = re.compile(r"\bdnat\b(?:\s+ip6?)?\s+to\s+(\[?[0-9a-fA-F.:]+?\]?):(\d+)\b")
_NFT_DNAT_MAP = re.compile(r"\d+\s*:\s*([0-9a-fA-F.:]+)\s*\.\s*(\d+)")


def nft_chains(ruleset_text: str) -> dict[str, list[str]]:
    """Chain name -> its rule lines, from `nft list ruleset` (every table)."""
    chains: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in (ruleset_text or "").splitlines():
        line = raw.strip()
        m = _NFT_CHAIN.match(raw)
        if m:
            current = chains.setdefault(m.group(1), [])
        elif line == "}":
            current = None
        elif current is not None and line:
            current.append(line)
    return chains


@dataclass
class NftServicePath:
    """How kube-proxy's nftables mode carries one SCTP ClusterIP: the map element, its service
    chain, the DNAT rules (in it, or in the endpoint chains it jumps to)."""

    element: str  # `vip . sctp . port : goto service-…`
    chain: str
    dnat: list[str] = field(default_factory=list)
    destinations: list[str] = field(default_factory=list)  # "ip:port" of each DNAT


def nft_service_path(ruleset_text: str, vip: str, port: int) -> NftServicePath | None:
    """The nftables path of SCTP `vip:port` (a `service-ips` element going to a service chain
    that DNATs), or None when kube-proxy wrote none. A `no-endpoint-services` element (`goto
    reject-chain`) carries no traffic and does not count."""
    chains = nft_chains(ruleset_text)
    for ip, element_port, verdict in nft_sctp_service_elements(ruleset_text):
        if ip != vip or element_port != port:
            continue
        words = verdict.split()
        if len(words) != 2 or words[0] not in ("goto", "jump"):
            continue
        if not words[1].startswith("service-"):
            continue
        path = NftServicePath(f"{ip} . sctp . {port} : {verdict}", words[1])
        lines = list(chains.get(words[1], []))
        for line in chains.get(words[1], []):
            lines += [
                rule
                for target in re.findall(r"(?:goto|jump)\s+(endpoint-\S+?)(?=[,\s}]|$)", line)
                for rule in chains.get(target, [])
            ]
        for line in lines:
            if not re.search(r"\bdnat\b", line):
                continue
            found = [f"{a.strip('[]')}:{b}" for a, b in _NFT_DNAT_TO.findall(line)]
            if "map" in line:
                found += [f"{a}:{b}" for a, b in _NFT_DNAT_MAP.findall(line.split("map", 1)[1])]
            if found:
                path.dnat.append(line)
                path.destinations += found
        return path
    return None
