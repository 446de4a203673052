"""`nft list ruleset` on an emulated node: kube-proxy's nftables mode (pkg/proxy/nftables).

Two forms, as kube-proxy's release writes them (the profile's `kubernetes_version`, which its
kube-proxy image runs):

- before 1.36: a service chain `numgen random mod N vmap { 0 : goto endpoint-… }` to one
  endpoint chain per endpoint (hairpin `ip saddr … jump mark-for-masquerade`, then `dnat to
  ip:port`), masquerade marking in a `mark-for-masquerade` chain;
- from 1.36 (pkg/proxy/nftables/proxier.go at v1.36.3, `writeServiceToEndpointDNATs`): no
  endpoint chains, the service chain DNATs itself through one map, `meta l4proto sctp dnat ip
  to numgen random mod N map { 0 : ip . port, … }`; masquerade marking is a rule
  (`meta mark set meta mark | 0x00004000`) in `services` (ClusterIP traffic from off the
  cluster) and in each `external-` chain; hairpin traffic is the `hairpin-connections` set of
  this node's endpoints, masqueraded in `masquerading`; the LoadBalancerSourceRanges
  (`firewall-ips`, `firewall-check`) and ClusterIP (`cluster-ips-check`) filter chains are
  listed as the real v1.36.3 lists them (tests/fixtures/realcluster/
  guest-kube-proxy-nftables-sctp.txt). Services with ClientIP affinity keep endpoint chains
  there; the lab does not model affinity in its rules.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lab.kubeproxy import POD_CIDR, NodeView, ServicePort, rule_hash
from lab.runtime import SERVICE_CIDR
from lab.store import version_tuple

if TYPE_CHECKING:
    from lab.nodes import Node

# The release whose kube-proxy wrote the service chain's own DNAT map (no endpoint chains).
DNAT_MAP_RELEASE = (1, 36)


def _nft_hash(name: str) -> str:
    # kube-proxy nftables hashAndTruncate: base32(sha256(name))[:8] + "-" + name.
    return rule_hash(name, 8) + "-" + name


def _elements(items: list[str], per_line: int = 1) -> str:
    """nft's set_expr_print/calculate_delim: a map's elements one per line, an address set's
    two per line ("Break lines on existing sets"), continuation lines indented as nft does."""
    out = ""
    for i, item in enumerate(items):
        if i:
            out += ",\n\t\t\t     " if i % per_line == 0 else ", "
        out += item
    return "elements = { " + out + " }"


def nft_ruleset(cluster: NodeView, ports: list[ServicePort], node: Node | None = None) -> str:
    """`nft list ruleset` of kube-proxy's nftables mode on NODE, built from PORTS
    (`service_ports`), in the form of the profile's release."""
    if version_tuple(cluster.profile["kubernetes_version"]) >= DNAT_MAP_RELEASE:
        return _ruleset_1_36(cluster, ports, node)
    return _ruleset_before_1_36(cluster, ports)


def _sorted_ips(ports: list[ServicePort]) -> list[str]:
    return sorted(
        {sp.cluster_ip for sp in ports if sp.cluster_ip},
        key=lambda ip: tuple(int(x) for x in ip.split(".")),
    )


@dataclass
class _Maps:
    """The verdict maps' elements, filled the same way in every form (syncProxyRules)."""

    services: list[str] = field(default_factory=list)
    nodeports: list[str] = field(default_factory=list)
    no_endpoint: list[str] = field(default_factory=list)
    no_endpoint_nodeports: list[str] = field(default_factory=list)

    def add(self, sp: ServicePort) -> tuple[str, str, str] | None:
        """Files one service port; (base, service chain, external chain) when it has
        endpoints, None when it went to the no-endpoint maps.

        Each no-endpoint element names its service port (`Comment: &svcPortNameString` in
        pkg/proxy/nftables/proxier.go at 1.34 to 1.36, cut to 128 characters at 1.37), as the
        real kube-proxy v1.36.3 wrote: `10.0.0.1 . tcp . 443 comment "default/kubernetes:https"
        : goto reject-chain` (tests/fixtures/realcluster/guest-kube-proxy-nftables-sctp.txt);
        a LoadBalancer IP gets its own element."""
        if not sp.endpoints:
            reject = f'comment "{sp.spn}" : goto reject-chain'
            self.no_endpoint.append(f"{sp.cluster_ip} . {sp.proto} . {sp.port} {reject}")
            if sp.lb_ip:
                self.no_endpoint.append(f"{sp.lb_ip} . {sp.proto} . {sp.port} {reject}")
            if sp.node_port:
                self.no_endpoint_nodeports.append(f"{sp.proto} . {sp.node_port} {reject}")
            return None
        base = f"{sp.namespace}/{sp.name}/{sp.proto}/{sp.port_name}"
        svc_chain = "service-" + _nft_hash(base)
        ext_chain = "external-" + _nft_hash(base)
        self.services.append(f"{sp.cluster_ip} . {sp.proto} . {sp.port} : goto {svc_chain}")
        if sp.lb_ip:
            self.services.append(f"{sp.lb_ip} . {sp.proto} . {sp.port} : goto {ext_chain}")
        if sp.node_port:
            self.nodeports.append(f"{sp.proto} . {sp.node_port} : goto {ext_chain}")
        return base, svc_chain, ext_chain

    def file(self, ports: list[ServicePort]) -> Iterator[tuple[ServicePort, str, str, str]]:
        """Files every port; yields those with endpoints, with their chains, for the caller
        to write their chains."""
        for sp in ports:
            named = self.add(sp)
            if named is not None:
                yield (sp, *named)


def _ruleset_before_1_36(cluster: NodeView, ports: list[ServicePort]) -> str:
    cluster_ips = _sorted_ips(ports)
    maps = _Maps()
    chains: list[str] = []
    for sp, base, svc_chain, ext_chain in maps.file(ports):
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
        f"\t\t{_elements(maps.no_endpoint)}\n" if maps.no_endpoint else "",
        "\t}\n\n",
        (
            "\tmap no-endpoint-nodeports {\n\t\ttype inet_proto . inet_service : verdict\n"
            '\t\tcomment "vmap to drop or reject packets to service nodeports with no endpoints"\n'
        ),
        f"\t\t{_elements(maps.no_endpoint_nodeports)}\n" if maps.no_endpoint_nodeports else "",
        "\t}\n\n",
        (
            "\tmap service-ips {\n\t\ttype ipv4_addr . inet_proto . inet_service : verdict\n"
            '\t\tcomment "ClusterIP, ExternalIP and LoadBalancer IP traffic"\n'
        ),
        f"\t\t{_elements(maps.services)}\n" if maps.services else "",
        "\t}\n\n",
        (
            "\tmap service-nodeports {\n\t\ttype inet_proto . inet_service : verdict\n"
            '\t\tcomment "NodePort traffic"\n'
        ),
        f"\t\t{_elements(maps.nodeports)}\n" if maps.nodeports else "",
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
        '\tchain reject-chain {\n\t\tcomment "helper for @no-endpoint-services / @no-endpoint-nodeports"\n\t\treject\n\t}\n\n',
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


_MASQ_MARK = "meta mark set meta mark | 0x00004000"


def _set(kind: str, name: str, typ: str, comment: str, elements: list[str], per_line: int) -> str:
    body = f'\t{kind} {name} {{\n\t\ttype {typ}\n\t\tcomment "{comment}"\n'
    if elements:
        body += f"\t\t{_elements(elements, per_line)}\n"
    return body + "\t}\n"


def _chain(name: str, *rules: str) -> str:
    return f"\tchain {name} {{\n" + "".join(f"\t\t{r}\n" for r in rules) + "\t}\n"


def _ruleset_1_36(cluster: NodeView, ports: list[ServicePort], node: Node | None) -> str:
    """kube-proxy v1.36's form (setupNFTables and syncProxyRules at v1.36.3), in the order
    `nft list table ip kube-proxy` prints it: sets and maps, then chains, each as created."""
    # The node's own endpoints (EndpointSlice nodeName = this node): `IsLocal()`.
    local_ips = (
        {rt.ip for rt in cluster.pod_rt.values() if rt.node == node.index} if node else set()
    )
    hairpin: list[str] = []
    maps = _Maps()
    chains: list[str] = []
    for sp, _base, svc_chain, ext_chain in maps.file(ports):
        for ip, target in sp.endpoints:
            element = f"{ip} . {ip} . {sp.proto} . {target}"
            if ip in local_ips and element not in hairpin:
                hairpin.append(element)
        if sp.lb_ip or sp.node_port:
            # externalTrafficPolicy Cluster: masquerade, then the cluster policy chain.
            chains.append(
                _chain(ext_chain, f'{_MASQ_MARK} comment "masquerade"', f"goto {svc_chain}")
            )
        dnat_map = ", ".join(
            f"{i} : {ip} . {target}" for i, (ip, target) in enumerate(sp.endpoints)
        )
        chains.append(
            _chain(
                svc_chain,
                f"meta l4proto {sp.proto} dnat ip to numgen random mod {len(sp.endpoints)} "
                f"map {{ {dnat_map} }}",
            )
        )
    addr_svc = "ipv4_addr . inet_proto . inet_service"
    sets = [
        _set(
            "set",
            "hairpin-connections",
            "ipv4_addr . ipv4_addr . inet_proto . inet_service",
            "service hairpin connections",
            hairpin,
            1,
        ),
        _set("set", "cluster-ips", "ipv4_addr", "Active ClusterIPs", _sorted_ips(ports), 2),
        _set(
            "set",
            "nodeport-ips",
            "ipv4_addr",
            "IPs that accept NodePort traffic",
            [n.host_ip for n in cluster.nodes],
            2,
        ),
        _set(
            "map",
            "no-endpoint-services",
            f"{addr_svc} : verdict",
            "vmap to drop or reject packets to services with no endpoints",
            maps.no_endpoint,
            1,
        ),
        _set(
            "map",
            "no-endpoint-nodeports",
            "inet_proto . inet_service : verdict",
            "vmap to drop or reject packets to service nodeports with no endpoints",
            maps.no_endpoint_nodeports,
            1,
        ),
        _set(
            "map",
            "firewall-ips",
            f"{addr_svc} : verdict",
            "destinations that are subject to LoadBalancerSourceRanges",
            [],
            1,
        ),
        _set(
            "map",
            "service-ips",
            f"{addr_svc} : verdict",
            "ClusterIP, ExternalIP and LoadBalancer IP traffic",
            maps.services,
            1,
        ),
        _set(
            "map",
            "service-nodeports",
            "inet_proto . inet_service : verdict",
            "NodePort traffic",
            maps.nodeports,
            1,
        ),
    ]
    new = "ct state new jump "
    fixed = [
        _chain(
            "filter-prerouting-pre-dnat",
            "type filter hook prerouting priority dstnat - 10; policy accept;",
            new + "firewall-check",
        ),
        _chain(
            "filter-output-pre-dnat",
            "type filter hook output priority -110; policy accept;",
            new + "firewall-check",
        ),
        _chain(
            "filter-input",
            "type filter hook input priority filter; policy accept;",
            new + "nodeport-endpoints-check",
            new + "service-endpoints-check",
        ),
        _chain(
            "filter-forward",
            "type filter hook forward priority filter; policy accept;",
            new + "service-endpoints-check",
            new + "cluster-ips-check",
        ),
        _chain(
            "filter-output",
            "type filter hook output priority filter; policy accept;",
            new + "service-endpoints-check",
            new + "cluster-ips-check",
        ),
        _chain(
            "nat-prerouting",
            "type nat hook prerouting priority dstnat; policy accept;",
            "jump services",
        ),
        _chain("nat-output", "type nat hook output priority -100; policy accept;", "jump services"),
        _chain(
            "nat-postrouting",
            "type nat hook postrouting priority srcnat; policy accept;",
            "jump masquerading",
        ),
        _chain(
            "nodeport-endpoints-check",
            "ip daddr @nodeport-ips meta l4proto . th dport vmap @no-endpoint-nodeports",
        ),
        _chain(
            "service-endpoints-check",
            "ip daddr . meta l4proto . th dport vmap @no-endpoint-services",
        ),
        _chain("firewall-check", "ip daddr . meta l4proto . th dport vmap @firewall-ips"),
        _chain(
            "services",
            f"ip daddr @cluster-ips ip saddr != {POD_CIDR} {_MASQ_MARK} "
            'comment "masquerade clusterIP traffic from outside cluster"',
            "ip daddr . meta l4proto . th dport vmap @service-ips",
            "ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports",
        ),
        _chain(
            "masquerading",
            "meta mark & 0x00004000 != 0x00000000 meta mark set meta mark ^ 0x00004000 "
            "masquerade fully-random",
            "ct status dnat ip saddr . ip daddr . meta l4proto . th dport @hairpin-connections "
            "masquerade fully-random",
        ),
        _chain(
            "cluster-ips-check",
            'ip daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"',
            f'ip daddr {SERVICE_CIDR} drop comment "Drop traffic to unallocated ClusterIPs"',
        ),
        _chain(
            "reject-chain",
            'comment "helper for @no-endpoint-services / @no-endpoint-nodeports"',
            "reject",
        ),
    ]
    body = "\n".join([*sets, *fixed, *chains])
    return 'table ip kube-proxy {\n\tcomment "rules for kube-proxy"\n' + body + "}\n"
