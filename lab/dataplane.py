"""The emulated dataplane: API-side SCTP checks and the connect verdict of a client pod."""

from __future__ import annotations

import ipaddress
import json
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from lab import families
from lab.errors import ApiError
from lab.labels import selector_matches, service_selector_matches

if TYPE_CHECKING:
    from lab.cluster import Cluster

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

TIMEOUT, REFUSED, DNS = "TIMEOUT", "REFUSED", "DNS"
PodKey = tuple[str, str]


# ---------------------------------------------------------------- API-side checks


def protocol_causes(
    profile: dict[str, Any], protocol: str, field: str
) -> list[tuple[str, str, str]]:
    """The 422 cause a real apiserver gives for a protocol (SCTP only with the feature gate)."""
    allowed = ["TCP", "UDP"] + (["SCTP"] if profile["sctp_feature_gate"] else [])
    if protocol in allowed:
        return []
    supported = ", ".join(f'"{p}"' for p in allowed)
    return [
        (
            field,
            "FieldValueNotSupported",
            f'Unsupported value: "{protocol}": supported values: {supported}',
        )
    ]


def has_sctp_port(kind: str, spec: dict[str, Any]) -> bool:
    if kind == "pods":
        ports = [p for c in spec.get("containers") or [] for p in c.get("ports") or []]
    elif kind == "services":
        ports = spec.get("ports") or []
    else:
        ports = [
            p
            for d in ("ingress", "egress")
            for r in spec.get(d) or []
            for p in r.get("ports") or []
        ]
    return any(p.get("protocol") == "SCTP" for p in ports)


def pod_security_violations(spec: dict[str, Any]) -> list[str]:
    """What the PodSecurity `baseline` level rejects, worded like the admission plugin.

    In its checks' order (by check ID: hostNamespaces, hostPathVolumes, hostPorts,
    privileged), as `violates PodSecurity "baseline:latest": host namespaces (…), …` lists them.
    """
    out: list[str] = []
    host = [f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k)]
    if host:
        out.append(f"host namespaces ({', '.join(host)})")
    volumes = [v["name"] for v in spec.get("volumes") or [] if "hostPath" in v]
    if volumes:
        quoted = ", ".join(f'"{n}"' for n in volumes)
        word = "volume" if len(volumes) == 1 else "volumes"
        out.append(f"hostPath volumes ({word} {quoted})")
    host_ports = [
        (c["name"], p["hostPort"])
        for c in spec.get("containers") or []
        for p in c.get("ports") or []
        if p.get("hostPort")
    ]
    if host_ports:
        names = sorted({f'"{n}"' for n, _p in host_ports})
        ports = ", ".join(str(p) for _n, p in host_ports)
        if len(host_ports) == 1:
            out.append(f"hostPort (container {names[0]} uses hostPort {ports})")
        else:
            word = "container" if len(names) == 1 else "containers"
            verb = "uses" if len(names) == 1 else "use"
            out.append(f"hostPort ({word} {', '.join(names)} {verb} hostPorts {ports})")
    privileged = [
        c["name"]
        for c in spec.get("containers") or []
        if (c.get("securityContext") or {}).get("privileged")
    ]
    if privileged:
        quoted = ", ".join(f'"{n}"' for n in privileged)
        word = "container" if len(privileged) == 1 else "containers"
        out.append(f"privileged ({word} {quoted} must not set securityContext.privileged=true)")
    return out


WEBHOOK = "pod-policy.example.com"


def admission_refusal(profile: dict[str, Any], name: str, spec: dict[str, Any]) -> ApiError | None:
    """How admission refuses a privileged pod (`admission.privileged_pods`), or None.

    forbid: Pod Security admission (403 Forbidden, its own words); webhook-deny: a validating
    webhook (400 BadRequest, the apiserver's `admission webhook ... denied the request`).
    """
    mode = profile["admission"]["privileged_pods"]
    if mode == "allow":
        return None
    violations = pod_security_violations(spec)
    if not violations:
        return None
    if mode == "webhook-deny":
        return ApiError(
            400,
            f'admission webhook "{WEBHOOK}" denied the request: privileged '
            "pods, host namespaces and hostPath volumes are not allowed",
            reason="BadRequest",
        )
    return ApiError(
        403,
        f'pods "{name}" is forbidden: violates PodSecurity '
        f'"baseline:latest": {", ".join(violations)}',
        details={"name": name, "kind": "pods"},
    )


def pod_started(cluster: Cluster, key: PodKey) -> None:
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


def connect_verdict(cluster: Cluster, client: PodKey, connect: Any) -> str | None:
    """None when the connection works, else the log agnhost `connect` writes.

    agnhost words it per protocol (test/images/agnhost/connect): TCP `TIMEOUT`, `REFUSED`;
    SCTP has no refused branch, so an ABORT reads `OTHER: connection refused`; UDP
    `TIMEOUT: …` and `REFUSED: …` with the Go error; `DNS: …` for every protocol.
    """
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
    cluster: Cluster, client: PodKey, host: str, port: int, protocol: str, pick: int = 0
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


def curl(cluster: Cluster, client: PodKey, url: str) -> tuple[int, str]:
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


def _dial(cluster: Cluster, dialer: PodKey, query: dict[str, list[str]]) -> dict[str, list[str]]:
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


def _ready_pod_by_ip(cluster: Cluster, ip: str) -> PodKey | None:
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
    cluster: Cluster, client_ns: str, host: str, port: int, protocol: str, pick: int = 0
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


def _through_service(
    cluster: Cluster,
    key: PodKey,
    port: int,
    protocol: str,
    path: str,
    node_port: bool = False,
    pick: int = 0,
) -> tuple[str, PodKey, int] | str:
    svc = cluster.objects["services"][key]
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


def _cilium_service_lb(cluster: Cluster) -> bool:
    """Cilium's eBPF (its kube-proxy replacement, or GKE Dataplane V2's) carries Services."""
    return cluster.profile.get("service_dataplane") == "cilium-ebpf"


# ---------------------------------------------------------------- NetworkPolicy


def policy_types(spec: dict[str, Any]) -> list[str]:
    return spec.get("policyTypes") or (["Ingress"] + (["Egress"] if spec.get("egress") else []))


def ingress_allowed(
    cluster: Cluster, client: PodKey, server: PodKey, protocol: str, port: int
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
    cluster: Cluster,
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


def _ports_match(
    cluster: Cluster,
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
    "admission_refusal",
    "connect_verdict",
    "curl",
    "has_sctp_port",
    "ingress_allowed",
    "pod_security_violations",
    "pod_started",
    "protocol_causes",
    "resolve",
    "service_selector_matches",
]
