"""The emulated dataplane: API-side SCTP checks and the connect verdict of a client pod."""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING, Any

from lab.labels import selector_matches, service_selector_matches

if TYPE_CHECKING:
    from lab.cluster import Cluster

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

TIMEOUT, REFUSED, DNS = "TIMEOUT", "REFUSED", "DNS"
PodKey = tuple[str, str]


# ---------------------------------------------------------------- API-side checks


def protocol_causes(profile: dict[str, Any], protocol: str, field: str) -> list[tuple[str, str, str]]:
    """The 422 cause a real apiserver gives for a protocol (SCTP only with the feature gate)."""
    allowed = ["TCP", "UDP"] + (["SCTP"] if profile["sctp_feature_gate"] else [])
    if protocol in allowed:
        return []
    supported = ", ".join(f'"{p}"' for p in allowed)
    return [(field, "FieldValueNotSupported",
             f'Unsupported value: "{protocol}": supported values: {supported}')]


def has_sctp_port(kind: str, spec: dict[str, Any]) -> bool:
    if kind == "pods":
        ports = [p for c in spec.get("containers") or [] for p in c.get("ports") or []]
    elif kind == "services":
        ports = spec.get("ports") or []
    else:
        ports = [p for d in ("ingress", "egress") for r in spec.get(d) or [] for p in r.get("ports") or []]
    return any(p.get("protocol") == "SCTP" for p in ports)


def pod_security_violations(spec: dict[str, Any]) -> list[str]:
    """What the PodSecurity `baseline` level rejects, worded like the admission plugin."""
    out: list[str] = []
    privileged = [c["name"] for c in spec.get("containers") or []
                  if (c.get("securityContext") or {}).get("privileged")]
    if privileged:
        quoted = ", ".join(f'"{n}"' for n in privileged)
        word = "container" if len(privileged) == 1 else "containers"
        out.append(f"privileged ({word} {quoted} must not set securityContext.privileged=true)")
    host = [f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k)]
    if host:
        out.append(f"host namespaces ({', '.join(host)})")
    volumes = [v["name"] for v in spec.get("volumes") or [] if "hostPath" in v]
    if volumes:
        quoted = ", ".join(f'"{n}"' for n in volumes)
        word = "volume" if len(volumes) == 1 else "volumes"
        out.append(f"hostPath volumes ({word} {quoted})")
    return out


# ---------------------------------------------------------------- connect verdict


def connect_verdict(cluster: Cluster, client: PodKey, connect: Any) -> str | None:
    """None when the connection works, else the agnhost failure word (TIMEOUT/REFUSED/DNS)."""
    target = resolve(cluster, client[0], connect.host, connect.port, connect.protocol)
    if isinstance(target, str):
        return target
    path, server, port = target
    if connect.protocol == "SCTP" and not cluster.dataplane[path]:
        return TIMEOUT
    if not ingress_allowed(cluster, client, server, connect.protocol, port):
        return TIMEOUT
    if not cluster.pod_is_ready(server) or (connect.protocol, port) not in cluster.pod_rt[server].workload.listens:
        return REFUSED
    return None


def _ready_pod_by_ip(cluster: Cluster, ip: str) -> PodKey | None:
    # hostNetwork pods share their node's IP; those are nodes, not pod endpoints.
    for key, rt in cluster.pod_rt.items():
        if rt.started and rt.ip == ip and not cluster.objects["pods"][key]["spec"].get("hostNetwork"):
            return key
    return None


def resolve(cluster: Cluster, client_ns: str, host: str, port: int,
            protocol: str) -> tuple[str, PodKey, int] | str:
    """(dataplane path, server pod, port on the pod) or a failure word."""
    try:
        ipaddress.ip_address(host)
        is_ip = True
    except ValueError:
        is_ip = False
    if is_ip:
        pod = _ready_pod_by_ip(cluster, host)
        if pod is not None:
            return "pod_to_pod", pod, port
        for key, svc in cluster.objects["services"].items():
            if svc["spec"].get("clusterIP") == host:
                return _through_service(cluster, key, port, protocol, "via_service")
            if cluster.lb_ip(key) == host:
                return _through_service(cluster, key, port, protocol, "via_load_balancer")
        for node in cluster.nodes:
            if node.host_ip == host:
                for key, svc in cluster.objects["services"].items():
                    if any(p.get("nodePort") == port and p.get("protocol", "TCP") == protocol
                           for p in svc["spec"].get("ports") or []):
                        return _through_service(cluster, key, port, protocol, "via_service",
                                                node_port=True)
                return REFUSED
        # Nobody owns this address: packets go nowhere.
        return TIMEOUT
    key = _service_by_name(cluster, client_ns, host)
    if key is None:
        return DNS
    svc = cluster.objects["services"][key]
    if svc["spec"].get("clusterIP") == "None":
        # A headless name resolves straight to the ready pods' IPs.
        ready = [pod for pod, ok in cluster.service_backends(key) if ok]
        if not ready:
            return DNS
        return "pod_to_pod", ready[0], port
    return _through_service(cluster, key, port, protocol, "via_service")


def _service_by_name(cluster: Cluster, client_ns: str, host: str) -> PodKey | None:
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


def _through_service(cluster: Cluster, key: PodKey, port: int, protocol: str, path: str,
                     node_port: bool = False) -> tuple[str, PodKey, int] | str:
    svc = cluster.objects["services"][key]
    field = "nodePort" if node_port else "port"
    svc_port = next((p for p in svc["spec"].get("ports") or []
                     if p.get(field) == port and p.get("protocol", "TCP") == protocol), None)
    if svc_port is None:
        # kube-proxy rejects traffic to a service IP on a port the service does not have.
        return REFUSED
    for pod, ready in cluster.service_backends(key):
        if not ready:
            continue
        target = cluster.resolve_target_port(svc_port, pod)
        if target is not None:
            # Real kube-proxy picks at random; the lab picks the oldest endpoint, reproducibly.
            return path, pod, target
    return REFUSED


# ---------------------------------------------------------------- NetworkPolicy


def policy_types(spec: dict[str, Any]) -> list[str]:
    return spec.get("policyTypes") or (["Ingress"] + (["Egress"] if spec.get("egress") else []))


def ingress_allowed(cluster: Cluster, client: PodKey, server: PodKey, protocol: str, port: int) -> bool:
    mode = cluster.dataplane["network_policy"]
    if mode == "none":
        return True
    server_labels = cluster.objects["pods"][server]["metadata"].get("labels")
    policies = [p for (ns, _n), p in cluster.objects["networkpolicies"].items()
                if ns == server[0] and "Ingress" in policy_types(p["spec"])
                and selector_matches(p["spec"].get("podSelector") or {}, server_labels)]
    if not policies:
        return True
    if mode == "no-sctp" and protocol == "SCTP":
        return False
    for policy in policies:
        for rule in policy["spec"].get("ingress") or []:
            if _peers_match(cluster, rule.get("from"), server[0], client) and \
                    _ports_match(cluster, rule.get("ports"), server, protocol, port, mode):
                return True
    return False


def _peers_match(cluster: Cluster, peers: list[dict[str, Any]] | None, policy_ns: str,
                 client: PodKey) -> bool:
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
                    ip in ipaddress.ip_network(e, strict=False) for e in block.get("except") or []):
                return True
            continue
        if host_network:
            # Traffic from the host network carries the node IP; pod selectors never match it.
            continue
        ns_selector = peer.get("namespaceSelector")
        pod_selector = peer.get("podSelector")
        if ns_selector is not None:
            ns_obj = cluster.namespaces.get(client[0])
            if ns_obj is None or not selector_matches(ns_selector, ns_obj["metadata"].get("labels")):
                continue
        elif client[0] != policy_ns:
            continue
        if pod_selector is not None and not selector_matches(pod_selector, pod["metadata"].get("labels")):
            continue
        return True
    return False


def _ports_match(cluster: Cluster, ports: list[dict[str, Any]] | None, server: PodKey,
                 protocol: str, port: int, mode: str) -> bool:
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
                if cport.get("name") == want and cport.get("protocol", "TCP") == protocol \
                        and cport.get("containerPort") == port:
                    return True
    return False


__all__ = ["connect_verdict", "ingress_allowed", "resolve", "protocol_causes", "has_sctp_port",
           "pod_security_violations", "service_selector_matches"]
