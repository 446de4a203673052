"""Print the rules kube-proxy writes for one SCTP ClusterIP service, for iptables-restore or nft -f.

Chain names use kube-proxy's own hashing (pkg/proxy/iptables: ``KUBE-SVC-`` +
base32(sha256(portname + protocol))[:16], ``KUBE-SEP-`` with the endpoint appended;
pkg/proxy/nftables: ``service-`` + base32(sha256(ns/svc/proto/port))[:8] + ``-ns/svc/proto/port``,
``endpoint-`` likewise with ``__ip/port``), so the real tools print what a node would show.

    python3 kube_rules.py iptables VIP PORT NS/SVC:PORTNAME IP:TPORT [IP:TPORT …]
    python3 kube_rules.py nftables VIP PORT NS/SVC:PORTNAME IP:TPORT [IP:TPORT …]
"""

from __future__ import annotations

import base64
import hashlib
import sys


def _b32(text: str) -> str:
    return base64.b32encode(hashlib.sha256(text.encode()).digest()).decode()


def iptables(vip: str, port: int, name: str, endpoints: list[str]) -> str:
    svc = "KUBE-SVC-" + _b32(name + "sctp")[:16]
    seps = ["KUBE-SEP-" + _b32(name + "sctp" + ep)[:16] for ep in endpoints]
    lines = ["*nat"]
    chains = ["KUBE-SERVICES", "KUBE-POSTROUTING", "KUBE-MARK-MASQ", svc, *seps]
    lines += [f":{c} - [0:0]" for c in chains]
    lines += [
        '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
        '-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
        '-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING',
        "-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000",
        "-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN",
        "-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0",
        (
            '-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" '
            "-j MASQUERADE --random-fully"
        ),
        (
            f'-A KUBE-SERVICES -d {vip}/32 -p sctp -m comment --comment "{name} cluster IP" '
            f"-m sctp --dport {port} -j {svc}"
        ),
    ]
    for i, (ep, sep) in enumerate(zip(endpoints, seps, strict=True)):
        remaining = len(endpoints) - i
        prob = (
            ""
            if remaining == 1
            else (f" -m statistic --mode random --probability {1 / remaining:.11f}")
        )
        lines.append(f'-A {svc} -m comment --comment "{name} -> {ep}"{prob} -j {sep}')
    for ep, sep in zip(endpoints, seps, strict=True):
        ip = ep.split(":")[0]
        lines.append(f'-A {sep} -s {ip}/32 -m comment --comment "{name}" -j KUBE-MARK-MASQ')
        lines.append(
            f'-A {sep} -p sctp -m comment --comment "{name}" -m sctp -j DNAT --to-destination {ep}'
        )
    lines.append("COMMIT")
    return "\n".join(lines) + "\n"


def nftables(vip: str, port: int, name: str, endpoints: list[str]) -> str:
    ns_svc, _, portname = name.partition(":")
    base = f"{ns_svc}/sctp/{portname}"
    svc_chain = f"service-{_b32(base)[:8]}-{base}"
    ep_chains = []
    for ep in endpoints:
        ip, _, tport = ep.partition(":")
        ep_name = f"{base}__{ip}/{tport}"
        ep_chains.append((ip, tport, f"endpoint-{_b32(ep_name)[:8]}-{ep_name}"))
    t = "ip kube-proxy"
    lines = [
        f'add table {t} {{ comment "rules for kube-proxy" ; }}',
        f'add set {t} cluster-ips {{ type ipv4_addr ; comment "Active ClusterIPs" ; }}',
        (
            f"add map {t} service-ips {{ type ipv4_addr . inet_proto . inet_service : verdict ; "
            'comment "ClusterIP, ExternalIP and LoadBalancer IP traffic" ; }'
        ),
        (
            f"add map {t} service-nodeports {{ type inet_proto . inet_service : verdict ; "
            'comment "NodePort traffic" ; }'
        ),
        f"add chain {t} mark-for-masquerade",
        f"add chain {t} masquerading",
        f"add chain {t} nat-output {{ type nat hook output priority -100 ; }}",
        f"add chain {t} nat-postrouting {{ type nat hook postrouting priority 100 ; }}",
        f"add chain {t} nat-prerouting {{ type nat hook prerouting priority -100 ; }}",
        f"add chain {t} services",
        f"add rule {t} mark-for-masquerade mark set mark or 0x4000",
        f"add rule {t} masquerading mark and 0x4000 == 0 return",
        f"add rule {t} masquerading mark set mark xor 0x4000",
        f"add rule {t} masquerading masquerade fully-random",
        f"add rule {t} nat-output jump services",
        f"add rule {t} nat-postrouting jump masquerading",
        f"add rule {t} nat-prerouting jump services",
        f"add rule {t} services ip daddr . meta l4proto . th dport vmap @service-ips",
        f"add chain {t} {svc_chain}",
    ]
    # Chains before the rules that jump to them, as kube-proxy orders its transaction.
    lines += [f"add chain {t} {chain}" for _, _, chain in ep_chains]
    vmap = " , ".join(f"{i} : goto {c}" for i, (_, _, c) in enumerate(ep_chains))
    lines.append(f"add rule {t} {svc_chain} numgen random mod {len(ep_chains)} vmap {{ {vmap} }}")
    for ip, tport, chain in ep_chains:
        lines += [
            f"add rule {t} {chain} ip saddr {ip} jump mark-for-masquerade",
            f"add rule {t} {chain} meta l4proto sctp dnat to {ip}:{tport}",
        ]
    lines += [
        f"add element {t} cluster-ips {{ {vip} }}",
        f"add element {t} service-ips {{ {vip} . sctp . {port} : goto {svc_chain} }}",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) < 5 or argv[0] not in ("iptables", "nftables"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, vip, port, name, *endpoints = argv
    writer = iptables if mode == "iptables" else nftables
    sys.stdout.write(writer(vip, int(port), name, endpoints))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
