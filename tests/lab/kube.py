"""One lab cluster through the real `kubernetes` client (Kube), its profile, a fake clock, and
builders of the objects the lab tests create (namespaces, pods, services, hostexec)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from kubernetes import client, config

from lab.server import LabServer

BASE_PROFILE: dict[str, Any] = {
    "plugin": "calico",
    "plugin_version": "3.28.2",
    "kubernetes_version": "1.31.2",
    "proxier": "iptables",
    "nodes": 2,
    # Pods start at the first request after creation: no sleeping in tests.
    "faults": {"pod_start_delay_s": 0},
}


def profile(name: str = "c1", **overrides: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE_PROFILE)
    data["name"] = name
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key].update(value)
        else:
            data[key] = value
    return data


class FakeClock:
    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Kube:
    """The APIs of one lab cluster, as the battery builds them.

    Typed Any on purpose: the client's models make every field optional, and a test reads
    what the lab answered (a missing field fails the test where it is read)."""

    lab: LabServer
    name: str
    api_client: client.ApiClient

    @property
    def core(self) -> Any:
        return client.CoreV1Api(self.api_client)

    @property
    def net(self) -> Any:
        return client.NetworkingV1Api(self.api_client)

    @property
    def discovery(self) -> Any:
        return client.DiscoveryV1Api(self.api_client)

    @property
    def version(self) -> Any:
        return client.VersionApi(self.api_client)

    @property
    def state(self) -> Any:
        return self.lab.cluster(self.name)


def connect_kube(lab: LabServer, name: str) -> Kube:
    return Kube(lab, name, config.new_client_from_config_dict(lab.kubeconfig(name)))


# ---------------------------------------------------------------- object builders


def namespace(kube: Kube, name: str, labels: dict[str, str] | None = None) -> str:
    kube.core.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels=labels))
    )
    return name


def container(
    args: list[str],
    *,
    env: dict[str, str] | None = None,
    ports: list[tuple[int, str]] | None = None,
    command: list[str] | None = None,
    host_port: bool = False,
    privileged: bool = False,
) -> client.V1Container:
    return client.V1Container(
        name="c",
        image="registry.k8s.io/e2e-test-images/agnhost:2.53",
        args=args,
        command=command,
        env=[client.V1EnvVar(name=k, value=v) for k, v in (env or {}).items()] or None,
        ports=[
            client.V1ContainerPort(
                container_port=p, protocol=proto, host_port=p if host_port else None
            )
            for p, proto in ports or []
        ]
        or None,
        security_context=client.V1SecurityContext(privileged=True) if privileged else None,
    )


def pod(
    kube: Kube,
    ns: str,
    name: str,
    args: list[str],
    *,
    labels: dict[str, str] | None = None,
    node: str | None = None,
    restart: str = "Never",
    **kw: Any,
) -> Any:
    body = client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        spec=client.V1PodSpec(
            restart_policy=restart, node_name=node, containers=[container(args, **kw)]
        ),
    )
    return kube.core.create_namespaced_pod(ns, body)


def sctp_server(kube: Kube, ns: str, name: str, port: int = 5060, **kw: Any) -> Any:
    return pod(
        kube,
        ns,
        name,
        ["porter"],
        env={f"SERVE_SCTP_PORT_{port}": "foo"},
        ports=[(port, "SCTP")],
        labels=kw.pop("labels", {"app": name}),
        **kw,
    )


def run_client(
    kube: Kube, ns: str, name: str, target: str, protocol: str = "sctp", **kw: Any
) -> tuple[str, str]:
    """Create a connect pod and return (phase, log) once it has run."""
    pod(kube, ns, name, ["connect", target, f"--protocol={protocol}", "--timeout=5s"], **kw)
    got = kube.core.read_namespaced_pod(name, ns)
    return got.status.phase, kube.core.read_namespaced_pod_log(name, ns)


def service(
    kube: Kube,
    ns: str,
    name: str,
    selector: dict[str, str],
    port: int = 5060,
    protocol: str = "SCTP",
    svc_type: str = "ClusterIP",
    target_port: Any = None,
    cluster_ip: str | None = None,
) -> Any:
    return kube.core.create_namespaced_service(
        ns,
        client.V1Service(
            metadata=client.V1ObjectMeta(name=name, labels={"svc": name}),
            spec=client.V1ServiceSpec(
                type=svc_type,
                selector=selector,
                cluster_ip=cluster_ip,
                ports=[client.V1ServicePort(port=port, protocol=protocol, target_port=target_port)],
            ),
        ),
    )


def hostexec(kube: Kube, node: str, cmd: str, name: str = "hostexec") -> tuple[str, str, int]:
    """Run CMD on NODE the way upstream's hostexec pod does; (phase, log, exit code)."""
    body = client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(
            restart_policy="Never",
            host_network=True,
            node_name=node,
            containers=[
                client.V1Container(
                    name="agnhost-container",
                    image="registry.k8s.io/e2e-test-images/agnhost:2.53",
                    command=["nsenter", "--mount=/rootfs/proc/1/ns/mnt", "--", "sh", "-c", cmd],
                    security_context=client.V1SecurityContext(privileged=True),
                    volume_mounts=[client.V1VolumeMount(name="rootfs", mount_path="/rootfs")],
                )
            ],
            volumes=[
                client.V1Volume(name="rootfs", host_path=client.V1HostPathVolumeSource(path="/"))
            ],
        ),
    )
    kube.core.create_namespaced_pod("default", body)
    got = kube.core.read_namespaced_pod(name, "default")
    log = kube.core.read_namespaced_pod_log(name, "default")
    kube.core.delete_namespaced_pod(name, "default")
    return got.status.phase, log, got.status.container_statuses[0].state.terminated.exit_code
