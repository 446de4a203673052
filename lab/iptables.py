"""`iptables-save` on an emulated node: kubelet's and kube-proxy's chains (iptables or ipvs
mode, pkg/proxy/iptables and ipvs) and, on a kubenet-style node, the hostPort chains: the CNI
portmap plugin's since 1.24, the kubelet's own hostport manager's (pkg/kubelet/network/hostport)
before.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lab.kubeproxy import POD_CIDR, NodeView, ServicePort, kube_proxy_mode, rule_hash
from lab.store import Key, version_tuple

if TYPE_CHECKING:
    from lab.nodes import Node
    from lab.runtime import PodRuntime


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


def _iptables_proxier(ports: list[ServicePort], nat: _Table, filt: _Table) -> None:
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
    for sp in ports:
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
        svc_chain = "KUBE-SVC-" + rule_hash(sp.spn + p)
        ext_chain = "KUBE-EXT-" + rule_hash(sp.spn + p)
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
            sep = "KUBE-SEP-" + rule_hash(sp.spn + p + endpoint)
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


def _ipvs_proxier(ports: list[ServicePort], nat: _Table, filt: _Table) -> None:
    _masq_chains(nat)
    for chain in ("PREROUTING", "OUTPUT"):
        nat.add(chain, '-m comment --comment "kubernetes service portals" -j KUBE-SERVICES')
    nat.add("KUBE-LOAD-BALANCER", "-j KUBE-MARK-MASQ")
    protos = sorted({sp.protocol for sp in ports if sp.node_port})
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


# The CNI network's name in portmap's rules (`name` of the conflist the runtime runs).
PORTMAP_NETWORK = "kubenet"


def _hostport_pods(cluster: NodeView, node: Node) -> list[tuple[Key, dict[str, Any], PodRuntime]]:
    """The ready, non-hostNetwork pods of NODE that declare a hostPort, by their key."""
    found = []
    for key in sorted(cluster.objects["pods"]):
        rt = cluster.pod_rt[key]
        pod = cluster.objects["pods"][key]
        if rt.node != node.index or not cluster.pod_is_ready(key) or pod["spec"].get("hostNetwork"):
            continue
        ports = [p for c in pod["spec"].get("containers") or [] for p in c.get("ports") or []]
        if any(p.get("hostPort") for p in ports):
            found.append((key, pod, rt))
    return found


def _portmap(cluster: NodeView, node: Node, nat: _Table) -> None:
    """The reference CNI portmap plugin's iptables backend (plugins/meta/portmap,
    portmap_iptables.go, v1.10.0), what a bridge/host-local/portmap node (kubenet's successor
    since the kubelet's own hostport manager went with dockershim in 1.24) writes: per pod,
    `CNI-HOSTPORT-DNAT -p PROTO -m comment --comment "dnat name: ... id: ..." -m multiport
    --dports PORTS -j CNI-DN-<hash>`, and in that chain the hairpin and localhost SETMARKs
    before the DNAT to the pod, as tests/fixtures/realcluster/portmap-iptables-sctp-hostport.txt.
    The top-level chains appear with the first hostPort pod (portmap returns early for a pod
    without port mappings)."""
    pods = _hostport_pods(cluster, node)
    if not pods:
        return
    for chain in ("PREROUTING", "OUTPUT"):
        nat.add(chain, "-m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT")
    nat.add(
        "POSTROUTING",
        '-m comment --comment "CNI portfwd requiring masquerade" -j CNI-HOSTPORT-MASQ',
    )
    nat.add("CNI-HOSTPORT-MASQ", "-m mark --mark 0x2000/0x2000 -j MASQUERADE")
    nat.add(
        "CNI-HOSTPORT-SETMARK",
        '-m comment --comment "CNI portfwd masquerade mark" -j MARK --set-xmark 0x2000/0x2000',
    )
    subnet = f"10.244.{node.index}.0/24"  # the node's podCIDR (lab.nodes)
    for _key, pod, rt in pods:
        # The sandbox's id, as containerd would give it: 64 hex digits, stable per pod.
        sandbox = hashlib.sha256(f"sandbox/{pod['metadata'].get('uid', '')}".encode()).hexdigest()
        chain = "CNI-DN-" + hashlib.sha512((PORTMAP_NETWORK + sandbox).encode()).hexdigest()[:21]
        comment = f'"dnat name: \\"{PORTMAP_NETWORK}\\" id: \\"{sandbox}\\""'
        maps = [
            (p.get("protocol", "TCP").lower(), p["hostPort"], p["containerPort"])
            for c in pod["spec"].get("containers") or []
            for p in c.get("ports") or []
            if p.get("hostPort")
        ]
        for proto in sorted({m[0] for m in maps}):
            ports = ",".join(str(m[1]) for m in maps if m[0] == proto)
            nat.add(
                "CNI-HOSTPORT-DNAT",
                f"-p {proto} -m comment --comment {comment} -m multiport --dports {ports} "
                f"-j {chain}",
            )
        for proto, host_port, container_port in maps:
            base = f"-p {proto} -m {proto} --dport {host_port}"
            nat.add(chain, f"-s {subnet} {base} -j CNI-HOSTPORT-SETMARK")
            nat.add(chain, f"-s 127.0.0.1/32 {base} -j CNI-HOSTPORT-SETMARK")
            nat.add(chain, f"{base} -j DNAT --to-destination {rt.ip}:{container_port}")


def _hostports(cluster: NodeView, node: Node, nat: _Table) -> None:
    """The kubelet's in-tree hostport manager (pkg/kubelet/network/hostport, kubenet until
    1.23): KUBE-HOSTPORTS -> KUBE-HP-<hash>."""
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
                chain = "KUBE-HP-" + rule_hash(f"{host_port}{proto}{full_name}")
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


def iptables_save(
    cluster: NodeView, node: Node, ports: list[ServicePort], table: str | None = None
) -> str:
    """`iptables-save` on NODE, kube-proxy's rules built from PORTS (`service_ports`)."""
    nat = _Table("nat", ["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"])
    filt = _Table("filter", ["INPUT", "FORWARD", "OUTPUT"])
    mangle = _Table("mangle", ["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"])
    _kubelet_chains(nat, filt, mangle)
    proxier = kube_proxy_mode(cluster)
    if proxier == "iptables":
        _iptables_proxier(ports, nat, filt)
    elif proxier == "ipvs":
        _ipvs_proxier(ports, nat, filt)
    if cluster.profile["kubenet"]:
        # Since 1.24 (dockershim and kubenet gone from the kubelet) a kubenet-style node runs
        # the reference bridge/host-local/portmap plugins: portmap's chains; before, the
        # kubelet's own hostport manager's.
        if version_tuple(cluster.profile["kubernetes_version"]) >= (1, 24):
            _portmap(cluster, node, nat)
        else:
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
