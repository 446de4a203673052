"""Manifests of the pods the battery creates (see docs/lab-protocol.md, "Pods the battery creates").

Pure functions returning plain dicts: the kubernetes client sends dicts as they are, and the
lab reads the same fields a kubelet would.
"""

from __future__ import annotations

import re
from typing import Any

# Upstream's host_exec.go: enter the host's mount namespace through a hostPath of `/`.
HOSTEXEC_PREFIX = ["nsenter", "--mount=/rootfs/proc/1/ns/mnt", "--", "sh", "-c"]
# Where the node refuses the pod its PID 1's mount namespace (`nsenter: can't open
# '/rootfs/proc/1/ns/mnt': Permission denied`: a node whose root lacks ptrace access to PID 1,
# as the real cluster's host here), the same command runs chrooted into the node's root (the
# hostPath `/`): the node's own binaries and files, in the node's network namespace (the pod
# is hostNetwork), so iptables-save, nft and lsmod read the node's kernel state as before.
HOSTEXEC_CHROOT_PREFIX = ["chroot", "/rootfs", "sh", "-c"]
NSENTER_REFUSED = "nsenter: can't open '/rootfs/proc/1/ns/mnt': Permission denied"
PROXY_MODE_CMD = "curl -q -s --connect-timeout 1 http://localhost:10249/proxyMode"

LABEL_ROLE = "sctp-dashboard/role"


def dns_label(text: str, limit: int = 63) -> str:
    """A lowercase DNS label made from `text` (node and run names may hold dots, capitals…)."""
    label = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return label[:limit].rstrip("-") or "x"


def _pod(
    name: str,
    image: str,
    *,
    args: list[str] | None = None,
    command: list[str] | None = None,
    env: dict[str, str] | None = None,
    ports: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    node: str | None = None,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "agnhost", "image": image}
    if command:
        container["command"] = command
    if args:
        container["args"] = args
    if env:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    if ports:
        container["ports"] = ports
    spec: dict[str, Any] = {
        "containers": [container],
        "restartPolicy": "Never",
        # The battery deletes whole namespaces; nothing inside needs a graceful stop.
        "terminationGracePeriodSeconds": 0,
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
    }


def port(number: int, protocol: str, host_port: int | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"containerPort": number, "protocol": protocol}
    if host_port is not None:
        entry["hostPort"] = host_port
    return entry


def pause_pod(
    name: str, image: str, ports: list[dict[str, Any]], labels: dict[str, str], node: str | None
) -> dict[str, Any]:
    """Declares ports without opening sockets: basic tests must not load sctp.ko."""
    return _pod(name, image, args=["pause"], ports=ports, labels=labels, node=node)


def porter_pod(
    name: str, image: str, sctp_port: int, labels: dict[str, str], node: str | None
) -> dict[str, Any]:
    """An SCTP server (upstream's choice for SCTP connectivity tests)."""
    return _pod(
        name,
        image,
        args=["porter"],
        env={f"SERVE_SCTP_PORT_{sctp_port}": "foo"},
        ports=[port(sctp_port, "SCTP")],
        labels=labels,
        node=node,
    )


def porter_multi_pod(
    name: str, image: str, sctp_ports: tuple[int, ...], labels: dict[str, str], node: str | None
) -> dict[str, Any]:
    """An SCTP server on several ports (upstream's netpol model serves 80 and 81)."""
    return _pod(
        name,
        image,
        args=["porter"],
        env={f"SERVE_SCTP_PORT_{p}": "foo" for p in sctp_ports},
        ports=[port(p, "SCTP") for p in sctp_ports],
        labels=labels,
        node=node,
    )


PROBER_CONTAINER = "prober"


def prober_script(targets: list[str], protocol: str, timeout_s: int, interval_s: float) -> str:
    """A loop probing every target in parallel each round, as upstream's netpol prober execs
    `agnhost connect` in the long-lived model pod (test/e2e/network/netpol/kubemanager.go).

    Its log is the battery's reading (no exec permission): `round N start`, one
    `probe N HOST:PORT ok` or `probe N HOST:PORT fail WORDS` per target, `round N done`.
    """
    listed = " ".join(targets)
    return (
        'n=0; while true; do n=$((n+1)); echo "round $n start"; '
        f"for t in {listed}; do "
        f'( if out=$(/agnhost connect "$t" --protocol={protocol.lower()} '
        f'--timeout={max(1, int(timeout_s))}s 2>&1); then echo "probe $n $t ok"; '
        'else echo "probe $n $t fail $(echo $out | head -c 160)"; fi ) & '
        'done; wait; echo "round $n done"; '
        f"sleep {interval_s:g}; done"
    )


def netpol_model_pod(
    name: str,
    image: str,
    sctp_ports: tuple[int, ...],
    labels: dict[str, str],
    node: str | None,
    prober: str,
) -> dict[str, Any]:
    """Upstream's netpol model pod (porter serving SCTP on `sctp_ports`) with a second container
    that probes from the pod itself, created before any policy and kept for the whole test."""
    body = porter_multi_pod(name, image, sctp_ports, labels, node)
    body["spec"]["containers"].append(
        {"name": PROBER_CONTAINER, "image": image, "command": ["sh", "-c", prober]}
    )
    return body


def netexec_tcp_udp_pod(
    name: str, image: str, tcp_udp_port: int, labels: dict[str, str], node: str | None
) -> dict[str, Any]:
    """TCP and UDP on one port, no SCTP socket (so it cannot load sctp.ko)."""
    return _pod(
        name,
        image,
        args=["netexec", f"--http-port={tcp_udp_port}", f"--udp-port={tcp_udp_port}"],
        ports=[port(tcp_udp_port, "TCP"), port(tcp_udp_port, "UDP")],
        labels=labels,
        node=node,
    )


def netexec_pod(
    name: str,
    image: str,
    labels: dict[str, str],
    node: str | None,
    *,
    http_port: int,
    sctp_port: int | None = None,
    udp_port: int | None = None,
) -> dict[str, Any]:
    """agnhost netexec: answers `hostname` with the pod's name on every port it serves, and
    its HTTP /dial makes it a test container (upstream's NetworkingTestConfig pods)."""
    args = ["netexec", f"--http-port={http_port}"]
    ports = [port(http_port, "TCP")]
    if udp_port is not None:
        args.append(f"--udp-port={udp_port}")
        ports.append(port(udp_port, "UDP"))
    if sctp_port is not None:
        args.append(f"--sctp-port={sctp_port}")
        ports.append(port(sctp_port, "SCTP"))
    return _pod(name, image, args=args, ports=ports, labels=labels, node=node)


def curl_pod(
    name: str, image: str, url: str, max_time: int, labels: dict[str, str], node: str | None
) -> dict[str, Any]:
    """One `curl` (the agnhost image ships it); stdout is the answer, read from the log."""
    return _pod(
        name,
        image,
        command=["curl", "-g", "-q", "-s", "--max-time", str(max(1, int(max_time))), url],
        labels=labels,
        node=node,
    )


def proxy_mode_pod(name: str, image: str, node: str) -> dict[str, Any]:
    """A host-network pod whose own container asks kube-proxy for its mode, as upstream's
    ProxyMode does (no nsenter, no privilege: only the node's network namespace)."""
    manifest = _pod(
        name,
        image,
        command=["sh", "-c", PROXY_MODE_CMD],
        labels={LABEL_ROLE: "proxy-mode"},
        node=node,
    )
    manifest["spec"]["hostNetwork"] = True
    manifest["spec"]["tolerations"] = [{"operator": "Exists"}]
    return manifest


def connect_target(host: str, port_number: int) -> str:
    return f"[{host}]:{port_number}" if ":" in host else f"{host}:{port_number}"


def client_pod(
    name: str,
    image: str,
    host: str,
    port_number: int,
    protocol: str,
    timeout_s: int,
    labels: dict[str, str],
    node: str | None,
) -> dict[str, Any]:
    """One `agnhost connect`: the pod's phase is the verdict, its log says why (no exec)."""
    return _pod(
        name,
        image,
        args=[
            "connect",
            connect_target(host, port_number),
            f"--protocol={protocol.lower()}",
            f"--timeout={max(1, int(timeout_s))}s",
        ],
        labels=labels,
        node=node,
    )


def hostexec_pod(
    name: str, image: str, node: str, cmd: str, chroot: bool = False
) -> dict[str, Any]:
    """A privileged one-shot pod that runs `cmd` in the node's mount namespace (or, with
    `chroot`, chrooted into the node's root: HOSTEXEC_CHROOT_PREFIX)."""
    manifest = _pod(
        name,
        image,
        command=[*(HOSTEXEC_CHROOT_PREFIX if chroot else HOSTEXEC_PREFIX), cmd],
        labels={LABEL_ROLE: "hostexec"},
        node=node,
    )
    spec = manifest["spec"]
    spec["hostNetwork"] = True
    spec["containers"][0]["securityContext"] = {"privileged": True}
    spec["containers"][0]["volumeMounts"] = [{"name": "rootfs", "mountPath": "/rootfs"}]
    spec["volumes"] = [{"name": "rootfs", "hostPath": {"path": "/"}}]
    # Node inspection must run even on tainted nodes (upstream host_exec tolerates all).
    spec["tolerations"] = [{"operator": "Exists"}]
    return manifest


def service(
    name: str,
    selector: dict[str, str],
    port_number: int,
    target_port: int,
    protocol: str = "SCTP",
    service_type: str = "ClusterIP",
    port_name: str | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {
            "type": service_type,
            "selector": dict(selector),
            "ports": [
                {
                    "name": port_name or f"{protocol.lower()}-{port_number}",
                    "port": port_number,
                    "targetPort": target_port,
                    "protocol": protocol,
                }
            ],
        },
    }


def network_policy(
    name: str,
    pod_selector: dict[str, str],
    ingress: list[dict[str, Any]],
) -> dict[str, Any]:
    """An ingress policy; `ingress=[]` is default-deny for the selected pods."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name},
        "spec": {
            "podSelector": {"matchLabels": dict(pod_selector)} if pod_selector else {},
            "policyTypes": ["Ingress"],
            "ingress": ingress,
        },
    }
