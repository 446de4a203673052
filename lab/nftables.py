"""`nft list ruleset` on an emulated node: kube-proxy's nftables mode (pkg/proxy/nftables)."""

from __future__ import annotations

from lab.kubeproxy import POD_CIDR, NodeView, ServicePort, rule_hash


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


def nft_ruleset(cluster: NodeView, ports: list[ServicePort]) -> str:
    """`nft list ruleset` of kube-proxy's nftables mode, built from PORTS (`service_ports`)."""
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
            # Each element names its service port (`Comment: &svcPortNameString` in
            # pkg/proxy/nftables/proxier.go at 1.34 to 1.36, cut to 128 characters at 1.37),
            # as the real kube-proxy v1.36.3 wrote: `10.0.0.1 . tcp . 443 comment
            # "default/kubernetes:https" : goto reject-chain` (tests/fixtures/realcluster/
            # guest-kube-proxy-nftables-sctp.txt); a LoadBalancer IP gets its own element.
            reject = f'comment "{sp.spn}" : goto reject-chain'
            no_endpoint.append(f"{sp.cluster_ip} . {sp.proto} . {sp.port} {reject}")
            if sp.lb_ip:
                no_endpoint.append(f"{sp.lb_ip} . {sp.proto} . {sp.port} {reject}")
            if sp.node_port:
                no_endpoint_nodeports.append(f"{sp.proto} . {sp.node_port} {reject}")
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
