"""The emulated dataplane: the connect verdict of a client pod, curl and netexec's /dial.

It sees the cluster only through `DataplaneView`: the stored objects it reads, the pods'
and Services' runtime answers, and the one node-side effect it has (loading sctp.ko).
API-side checks (SCTP in specs, PodSecurity admission) are in `lab.admission`.
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qs, urlsplit

from lab import families
from lab.labels import selector_matches, service_selector_matches

if TYPE_CHECKING:
    from lab.nodes import Node
    from lab.runtime import PodRuntime

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

TIMEOUT, REFUSED, DNS = "TIMEOUT", "REFUSED", "DNS"
PodKey = tuple[str, str]


class DataplaneView(Protocol):
    """What the dataplane reads of a cluster (the facade provides it), and nothing more."""

    @property
    def profile(self) -> dict[str, Any]: ...
    @property
    def faults(self) -> dict[str, Any]: ...
    @property
    def dataplane(self) -> dict[str, Any]: ...
    @property
    def objects(self) -> dict[str, dict[PodKey, dict[str, Any]]]: ...
    @property
    def namespaces(self) -> dict[str, dict[str, Any]]: ...
    @property
    def nodes(self) -> list[Node]: ...
    @property
    def pod_rt(self) -> dict[PodKey, PodRuntime]: ...
    @property
    def ghost_pods(self) -> set[PodKey]: ...

    def now(self) -> float: ...
    def pod_is_ready(self, key: PodKey) -> bool: ...
    def lb_ip(self, key: PodKey) -> str | None: ...
    def service_backends(self, key: PodKey) -> list[tuple[PodKey, bool]]: ...
    def service_programmed(self, key: PodKey) -> bool: ...
    def resolve_target_port(self, svc_port: dict[str, Any], pod_key: PodKey) -> int | None: ...
    def module_load(self, node: Node, cause: str) -> None: ...


def pod_started(cluster: DataplaneView, key: PodKey) -> None:
    """Side effects of a pod starting on its node that no workload asked for (faults)."""
    if not cluster.faults.get("hostport_loads_module"):
        return
    pod = cluster.objects["pods"][key]
    for container in pod["spec"].get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("hostPort") and port.get("protocol") == "SCTP":
                node = cluster.nodes[cluster.pod_rt[key].node]
                cluster.module_load(
                    node,
                    f"pod {key[0]}/{key[1]} has an SCTP hostPort (hostport_loads_module fault)",
                )
                return


# ---------------------------------------------------------------- connect verdict


def connect_verdict(cluster: DataplaneView, client: PodKey, connect: Any) -> str | None:
    """None when the connection works, else the log agnhost `connect` writes.

    agnhost words it per protocol (test/images/agnhost/connect): TCP `TIMEOUT`, `REFUSED`;
    SCTP has no refused branch, so an ABORT reads `OTHER: connection refused`; UDP
    `TIMEOUT: …` and `REFUSED: …` with the Go error; `DNS: …` for every protocol.
    """
    if connect.protocol == "SCTP" and cluster.faults.get("no_kernel_sctp"):
        # agnhost's connectSCTP: socket(2) fails before any packet, printed as OTHER.
        return "OTHER: protocol not supported"
    word = connect_word(cluster, client, connect.host, connect.port, connect.protocol)
    return (
        None if word is None else agnhost_words(word, connect.host, connect.port, connect.protocol)
    )


def agnhost_words(word: str, host: str, port: int, protocol: str) -> str:
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if word == DNS:
        return f"DNS: lookup {host}: no such host"
    if protocol == "SCTP":
        return TIMEOUT if word == TIMEOUT else "OTHER: connection refused"
    if protocol == "UDP":
        if word == TIMEOUT:
            return f"TIMEOUT: read udp 10.244.0.1:40000->{target}: i/o timeout"
        return f"REFUSED: read udp 10.244.0.1:40000->{target}: read: connection refused"
    return word


def connect_word(
    cluster: DataplaneView, client: PodKey, host: str, port: int, protocol: str, pick: int = 0
) -> str | None:
    """None when the connection works, else TIMEOUT / REFUSED / DNS (protocol-neutral)."""
    target = resolve(cluster, client[0], host, port, protocol, pick)
    if isinstance(target, str):
        return target
    path, server, server_port = target
    if server in cluster.ghost_pods:
        return TIMEOUT  # a stale endpoint: the pod behind it is gone
    if protocol == "SCTP" and not cluster.dataplane[path]:
        return TIMEOUT
    if (
        protocol == "SCTP"
        and server == client
        and path != "pod_to_pod"
        and not cluster.dataplane.get("hairpin", True)
    ):
        return TIMEOUT  # no hairpin: a pod cannot reach itself through its own Service
    if not ingress_allowed(cluster, client, server, protocol, server_port):
        return TIMEOUT
    if (
        not cluster.pod_is_ready(server)
        or (protocol, server_port) not in cluster.pod_rt[server].workload.listens
    ):
        return REFUSED
    return None


# ---------------------------------------------------------------- curl (netexec, kube-proxy)

CURL_REFUSED, CURL_TIMEOUT = 7, 28  # curl's exit codes (couldn't connect, timed out)


def curl(cluster: DataplaneView, client: PodKey, url: str) -> tuple[int, str]:
    """(exit code, output) of `curl -s URL` in a pod: kube-proxy's /proxyMode or netexec /dial."""
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or 80
    pod = cluster.objects["pods"][client]
    if host in ("localhost", "127.0.0.1"):
        # Only a host-network pod shares the node's loopback, where kube-proxy listens.
        mode = cluster.profile["kube_proxy"]
        if port == 10249 and pod["spec"].get("hostNetwork") and mode != "none":
            if parts.path == "/proxyMode":
                return 0, mode  # kube-proxy writes the mode with no newline
            return 0, "404 page not found\n"
        return CURL_REFUSED, ""
    word = connect_word(cluster, client, host, port, "TCP")
    if word is not None:
        return (CURL_TIMEOUT if word == TIMEOUT else CURL_REFUSED), ""
    target = resolve(cluster, client[0], host, port, "TCP")
    assert not isinstance(target, str)
    dialer = target[1]
    if parts.path != "/dial" or not cluster.pod_rt[dialer].workload.netexec:
        return 0, "404 page not found\n"
    return 0, json.dumps(_dial(cluster, dialer, parse_qs(parts.query))) + "\n"


def _dial(
    cluster: DataplaneView, dialer: PodKey, query: dict[str, list[str]]
) -> dict[str, list[str]]:
    """netexec's /dial: send `request` `tries` times from the dialer pod, collect the answers."""

    def arg(name: str, default: str = "") -> str:
        return (query.get(name) or [default])[0]

    protocol = arg("protocol", "http").upper()
    protocol = "TCP" if protocol == "HTTP" else protocol
    host, request = arg("host"), arg("request")
    try:
        port, tries = int(arg("port")), max(1, int(arg("tries", "1")))
    except ValueError:
        return {"errors": ["invalid port or tries"]}
    if protocol not in ("TCP", "UDP", "SCTP"):
        return {"errors": [f"unsupported protocol {arg('protocol')}"]}
    if protocol == "SCTP":
        node = cluster.nodes[cluster.pod_rt[dialer].node]
        pod_name = f"{dialer[0]}/{dialer[1]}"
        cluster.module_load(node, f"pod {pod_name} dialled over SCTP (netexec /dial)")
    responses: list[str] = []
    errors: list[str] = []
    target = f"{host}:{port}"
    source = f"{cluster.pod_rt[dialer].ip}:{40000 + len(cluster.pod_rt)}"
    for attempt in range(tries):
        word = connect_word(cluster, dialer, host, port, protocol, pick=attempt)
        server = resolve(cluster, dialer[0], host, port, protocol, attempt)
        if word is None and not isinstance(server, str):
            rt = cluster.pod_rt[server[1]]
            if request == "hostname" and rt.workload.netexec:
                spec = cluster.objects["pods"][server[1]]["spec"]
                responses.append(spec.get("hostname") or server[1][1])
                continue
            word = TIMEOUT  # connected, but no answer to the request
        proto = protocol.lower()
        if word == TIMEOUT:
            errors.append(
                f"reading from {proto} connection failed. err:'read {proto} "
                f"{source}->{target}: i/o timeout'"
            )
        elif word == DNS:
            errors.append(f"dial {proto} {target}: lookup {host}: no such host")
        else:
            errors.append(f"dial {proto} {target}: connect: connection refused")
    out: dict[str, list[str]] = {"responses": responses}
    if errors:
        out["errors"] = errors
    return out


def _ready_pod_by_ip(cluster: DataplaneView, ip: str) -> PodKey | None:
    # hostNetwork pods share their node's IP; those are nodes, not pod endpoints.
    for key, rt in cluster.pod_rt.items():
        if (
            rt.started
            and rt.ip == ip
            and not cluster.objects["pods"][key]["spec"].get("hostNetwork")
        ):
            return key
    return None


def resolve(
    cluster: DataplaneView, client_ns: str, host: str, port: int, protocol: str, pick: int = 0
) -> tuple[str, PodKey, int] | str:
    """(dataplane path, server pod, port on the pod) or a failure word."""
    try:
        ipaddress.ip_address(host)
        is_ip = True
    except ValueError:
        is_ip = False
    if is_ip:
        dialled = host
        host, family = families.unmap(cluster, host)
        if family is None:
            return TIMEOUT  # an address of a family the cluster does not have
        pod = _ready_pod_by_ip(cluster, host)
        if pod is not None:
            return "pod_to_pod", pod, port
        for key, svc in cluster.objects["services"].items():
            spec = svc["spec"]
            if dialled in (spec.get("clusterIPs") or [spec.get("clusterIP")]):
                if (
                    protocol == "SCTP"
                    and families.is_secondary(cluster, family)
                    and not cluster.dataplane.get("secondary_family", True)
                ):
                    return TIMEOUT  # the plugin bug `secondary_family: false` emulates
                return _through_service(cluster, key, port, protocol, "via_service", pick=pick)
            if cluster.lb_ip(key) == host:
                return _through_service(
                    cluster, key, port, protocol, "via_load_balancer", pick=pick
                )
        for node in cluster.nodes:
            if node.host_ip == host:
                if (
                    protocol == "SCTP"
                    and families.is_secondary(cluster, family)
                    and not cluster.dataplane.get("secondary_family", True)
                ):
                    return TIMEOUT
                for key, svc in cluster.objects["services"].items():
                    if any(
                        p.get("nodePort") == port and p.get("protocol", "TCP") == protocol
                        for p in svc["spec"].get("ports") or []
                    ):
                        return _through_service(
                            cluster, key, port, protocol, "via_node_port", node_port=True, pick=pick
                        )
                return REFUSED
        # Nobody owns this address: packets go nowhere.
        return TIMEOUT
    named = _service_by_name(cluster, client_ns, host)
    if named is None:
        return DNS
    svc = cluster.objects["services"][named]
    if svc["spec"].get("clusterIP") == "None":
        # A headless name resolves straight to the ready pods' IPs.
        ready = [pod for pod, ok in cluster.service_backends(named) if ok]
        if not ready:
            return DNS
        return "pod_to_pod", ready[0], port
    return _through_service(cluster, named, port, protocol, "via_service", pick=pick)


def _service_by_name(cluster: DataplaneView, client_ns: str, host: str) -> PodKey | None:
    name = host.rstrip(".").lower()
    for suffix in (".svc.cluster.local", ".svc"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    parts = name.split(".")
    if len(parts) == 1:
        key = (client_ns, parts[0])
    elif len(parts) == 2:
        key = (parts[1], parts[0])
    else:
        return None
    return key if key in cluster.objects["services"] else None


def _through_service(
    cluster: DataplaneView,
    key: PodKey,
    port: int,
    protocol: str,
    path: str,
    node_port: bool = False,
    pick: int = 0,
) -> tuple[str, PodKey, int] | str:
    svc = cluster.objects["services"][key]
    if not cluster.service_programmed(key):
        return TIMEOUT  # kube-proxy has not written its rules yet: packets go nowhere
    field = "nodePort" if node_port else "port"
    svc_port = next(
        (
            p
            for p in svc["spec"].get("ports") or []
            if p.get(field) == port and p.get("protocol", "TCP") == protocol
        ),
        None,
    )
    if svc_port is None:
        # kube-proxy rejects traffic to a service IP on a port the service does not have.
        return REFUSED
    backends = [
        (pod, target)
        for pod, ready in cluster.service_backends(key)
        if ready
        for target in [cluster.resolve_target_port(svc_port, pod)]
        if target is not None
    ]
    if not backends:
        return REFUSED
    # Real kube-proxy picks at random; the lab takes the endpoints in turn (oldest first), so
    # `pick` = 0, 1, 2… (netexec's tries) reaches each of them, reproducibly.
    index = pick % len(backends)
    pod, target = backends[index]
    if protocol == "SCTP":
        if cluster.dataplane["endpoints_reachable"] == "one" and index > 0:
            return TIMEOUT
        if _cilium_service_lb(cluster) and target != svc_port["port"]:
            # Cilium's eBPF service translation for SCTP keeps the port: targetPort must
            # equal port (docs.cilium.io, SCTP limitations), so 95 -> 8082 goes nowhere.
            return TIMEOUT
    return path, pod, target


def _cilium_service_lb(cluster: DataplaneView) -> bool:
    """Cilium's eBPF (its kube-proxy replacement, or GKE Dataplane V2's) carries Services."""
    return cluster.profile.get("service_dataplane") == "cilium-ebpf"


# ---------------------------------------------------------------- NetworkPolicy


def policy_types(spec: dict[str, Any]) -> list[str]:
    return spec.get("policyTypes") or (["Ingress"] + (["Egress"] if spec.get("egress") else []))


def ingress_allowed(
    cluster: DataplaneView, client: PodKey, server: PodKey, protocol: str, port: int
) -> bool:
    mode = cluster.dataplane["network_policy"]
    if mode == "none":
        return True
    if mode == "deny-all":
        # The over-blocking plugin: any ingress policy in the namespace stops all its pods.
        return not any(
            ns == server[0] and "Ingress" in policy_types(p["spec"])
            for (ns, _n), p in cluster.objects["networkpolicies"].items()
        )
    server_labels = cluster.objects["pods"][server]["metadata"].get("labels")
    policies = [
        p
        for (ns, _n), p in cluster.objects["networkpolicies"].items()
        if ns == server[0]
        and "Ingress" in policy_types(p["spec"])
        and selector_matches(p["spec"].get("podSelector") or {}, server_labels)
    ]
    if not policies:
        return True
    if mode == "no-sctp" and protocol == "SCTP":
        return False
    for policy in policies:
        for rule in policy["spec"].get("ingress") or []:
            if _peers_match(
                cluster, rule.get("from"), server[0], client, protocol
            ) and _ports_match(cluster, rule.get("ports"), server, protocol, port, mode):
                return True
    return False


def _peers_match(
    cluster: DataplaneView,
    peers: list[dict[str, Any]] | None,
    policy_ns: str,
    client: PodKey,
    protocol: str = "TCP",
) -> bool:
    if not peers:
        return True
    pod = cluster.objects["pods"][client]
    rt = cluster.pod_rt[client]
    host_network = bool(pod["spec"].get("hostNetwork"))
    for peer in peers:
        block = peer.get("ipBlock")
        if block:
            ip = ipaddress.ip_address(rt.ip)
            if ip in ipaddress.ip_network(block["cidr"], strict=False) and not any(
                ip in ipaddress.ip_network(e, strict=False) for e in block.get("except") or []
            ):
                return True
            continue
        if host_network:
            # Traffic from the host network carries the node IP; pod selectors never match it.
            continue
        if not _learned(cluster, client):
            continue  # the CNI has not learned this source pod yet (cni_pod_learn_delay_s)
        ns_selector = peer.get("namespaceSelector")
        pod_selector = peer.get("podSelector")
        if (
            ns_selector is not None
            and protocol == "SCTP"
            and not cluster.dataplane["namespace_selector"]
        ):
            continue  # the plugin bug `namespace_selector: false` emulates
        if ns_selector is not None:
            ns_obj = cluster.namespaces.get(client[0])
            if ns_obj is None or not selector_matches(
                ns_selector, ns_obj["metadata"].get("labels")
            ):
                continue
        elif client[0] != policy_ns:
            continue
        if pod_selector is not None and not selector_matches(
            pod_selector, pod["metadata"].get("labels")
        ):
            continue
        return True
    return False


def _learned(cluster: DataplaneView, pod: PodKey) -> bool:
    """Whether the plugin knows the pod as a policy peer yet (fault cni_pod_learn_delay_s)."""
    delay = float(cluster.faults.get("cni_pod_learn_delay_s") or 0.0)
    if delay <= 0:
        return True
    rt = cluster.pod_rt[pod]
    return rt.started and cluster.now() >= rt.start_at + delay


def _ports_match(
    cluster: DataplaneView,
    ports: list[dict[str, Any]] | None,
    server: PodKey,
    protocol: str,
    port: int,
    mode: str,
) -> bool:
    if not ports:
        return True
    effective = []
    for entry in ports:
        proto = entry.get("protocol", "TCP")
        if proto == "SCTP" and mode == "sctp-as-tcp":
            proto = "TCP"  # the plugin bug this mode emulates
        elif proto == "SCTP" and mode == "no-sctp":
            continue
        effective.append((proto, entry.get("port"), entry.get("endPort")))
    # A rule whose only ports were dropped allows nothing (it must not widen to "all ports").
    for proto, want, end in effective:
        if proto != protocol:
            continue
        if want is None:
            return True
        if isinstance(want, int) or (isinstance(want, str) and want.isdigit()):
            low = int(want)
            if low == port or (end is not None and low <= port <= int(end)):
                return True
            continue
        for container in cluster.objects["pods"][server]["spec"].get("containers") or []:
            for cport in container.get("ports") or []:
                if (
                    cport.get("name") == want
                    and cport.get("protocol", "TCP") == protocol
                    and cport.get("containerPort") == port
                ):
                    return True
    return False


__all__ = [
    "connect_verdict",
    "curl",
    "ingress_allowed",
    "pod_started",
    "resolve",
    "service_selector_matches",
]
