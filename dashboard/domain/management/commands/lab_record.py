"""Records the requests the battery and kubectl make against a real cluster, with its answers
(issue 37, item 5): the recording lab/replay.py replays against the lab. Writes
tests/fixtures/realcluster/api-recording.json by default (`make lab-record`)."""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from kernel.battery.base import DEFAULT_AGNHOST_IMAGE
from lab.replay import RECORDING, ROOT, body_of, parse_kubectl_log

NS = "sctp-battery-replay"
NS_RESTRICTED = "sctp-battery-replay-restricted"
# The battery's image, which `make cluster` imports (its node pulls nothing).
IMAGE = DEFAULT_AGNHOST_IMAGE
LABELS = {"sctp-dashboard/run-id": "replay", "app.kubernetes.io/managed-by": "sctp-dashboard"}


class Recorder:
    """Wraps `api_client.rest_client.request`: every request the client sends, and its answer."""

    def __init__(self, api: k8s.ApiClient) -> None:
        self.exchanges: list[dict[str, Any]] = []
        self.step = ""
        self.base = urllib.parse.urlsplit(api.configuration.host).path.rstrip("/")
        original: Any = api.rest_client.request

        def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            query = kwargs.get("query_params") or []
            headers = kwargs.get("headers") or {}
            split = urllib.parse.urlsplit(url)
            path = split.path[len(self.base) :] if split.path.startswith(self.base) else split.path
            query = [*urllib.parse.parse_qsl(split.query), *[(k, str(v)) for k, v in query]]
            entry: dict[str, Any] = {
                "step": self.step,
                "source": "python-client",
                "request": {
                    "method": method,
                    "path": path,
                    "query": [
                        [k, str(v).lower() if isinstance(v, bool) else str(v)] for k, v in query
                    ],
                    "content_type": headers.get("Content-Type"),
                    "accept": headers.get("Accept"),
                    "body": kwargs.get("body"),
                },
            }
            watching = any(k == "watch" and str(v).lower() == "true" for k, v in query)
            # kubernetes 32+: a RESTResponse, read here (it caches the body for the caller);
            # the ApiException of a 4xx is raised afterwards, from this answer.
            resp = original(method, url, *args, **kwargs)
            resp.read()
            body = body_of(resp.data or b"", "watch=true" if watching else "")
            if isinstance(body, dict) and body.get("kind") == "TokenRequest":
                body = {**body, "status": {**body.get("status", {}), "token": "<redacted>"}}
            entry["response"] = {"status": resp.status, "body": body}
            self.exchanges.append(entry)
            return resp

        api.rest_client.request = request  # type: ignore[method-assign]


def _try(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except ApiException as exc:
        return exc


def _pod(name: str, ports: list[tuple[int, str]], labels: dict[str, str]) -> dict[str, Any]:
    from kernel.battery import pods

    return pods.pause_pod(name, IMAGE, [pods.port(p, proto) for p, proto in ports], labels, None)


def _namespace(name: str, enforce: str) -> dict[str, Any]:
    """A namespace of the recording under Pod Security level `enforce`."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": {**LABELS, "pod-security.kubernetes.io/enforce": enforce},
        },
    }


def battery_steps(api: k8s.ApiClient, rec: Recorder) -> None:
    """The battery's calls, with its own bodies (kernel.battery.pods), in a run's order."""
    from kernel.battery import pods

    # Any, as kernel/ holds them: the battery sends plain dicts, which the typed stubs refuse.
    core: Any = k8s.CoreV1Api(api)
    net: Any = k8s.NetworkingV1Api(api)
    disc: Any = k8s.DiscoveryV1Api(api)
    apps: Any = k8s.AppsV1Api(api)
    version: Any = k8s.VersionApi(api)

    def step(name: str, fn: Callable[[], Any]) -> Any:
        rec.step = name
        return _try(fn)

    raw = {"_preload_content": False}
    step("version", lambda: version.get_code(**raw))
    step("nodes", lambda: core.list_node(**raw))
    step("daemonsets", lambda: apps.list_daemon_set_for_all_namespaces(**raw))
    step("configmaps-kube-system", lambda: core.list_namespaced_config_map("kube-system", **raw))
    ns_body = _namespace(NS, "privileged")
    step("namespace-create", lambda: core.create_namespace(ns_body))
    step("namespace-create-again-409", lambda: core.create_namespace(ns_body))
    bad_ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "Sctp_Bad"}}
    step("namespace-create-invalid-422", lambda: core.create_namespace(bad_ns))
    svc = pods.service("sctp-declare", {"app": "sctp-declare"}, 5060, 5060)
    step("service-create", lambda: core.create_namespaced_service(NS, svc))
    step("service-create-again-409", lambda: core.create_namespaced_service(NS, svc))
    step("service-read", lambda: core.read_namespaced_service("sctp-declare", NS))
    lower = pods.service("sctp-lower", {"app": "x"}, 5060, 5060, protocol="sctp")
    step("service-create-protocol-sctp-422", lambda: core.create_namespaced_service(NS, lower))
    nodeport = pods.service("sctp-np", {"app": "x"}, 95, 8082, service_type="NodePort")
    step("service-create-nodeport", lambda: core.create_namespaced_service(NS, nodeport))
    step("endpoints-before-pod", lambda: core.read_namespaced_endpoints("sctp-declare", NS))
    sel = "kubernetes.io/service-name=sctp-declare"
    step(
        "endpointslices-before-pod",
        lambda: disc.list_namespaced_endpoint_slice(NS, label_selector=sel),
    )
    pod = _pod("sctp-declare", [(5060, "SCTP")], {"app": "sctp-declare"})
    step("pod-created", lambda: core.create_namespaced_pod(NS, pod))
    step("pod-create-again-409", lambda: core.create_namespaced_pod(NS, pod))
    bad_pod = _pod("sctp-badport", [(5060, "sctp")], {})
    step("pod-create-protocol-sctp-422", lambda: core.create_namespaced_pod(NS, bad_pod))
    read = step("pod-read", lambda: core.read_namespaced_pod("sctp-declare", NS))
    rv = read.metadata.resource_version if not isinstance(read, ApiException) else None
    time.sleep(1.0)  # let the scheduler (real) or the lab's start act on the pod
    step(
        "pod-watch",
        lambda: core.list_namespaced_pod(
            NS,
            field_selector="metadata.name=sctp-declare",
            resource_version=rv,
            timeout_seconds=2,
            watch=True,
            _preload_content=False,
            _request_timeout=10,
        ),
    )
    step("pod-read-after-watch", lambda: core.read_namespaced_pod("sctp-declare", NS))
    step("pods-list", lambda: core.list_namespaced_pod(NS))
    step("pod-log", lambda: core.read_namespaced_pod_log("sctp-declare", NS))
    step("endpoints-with-pod", lambda: core.read_namespaced_endpoints("sctp-declare", NS))
    step(
        "endpointslices-with-pod",
        lambda: disc.list_namespaced_endpoint_slice(NS, label_selector=sel),
    )
    step("pod-read-missing-404", lambda: core.read_namespaced_pod("nosuch", NS))
    step("pod-in-missing-namespace-404", lambda: core.create_namespaced_pod("nosuch-ns", pod))
    policy = pods.network_policy(
        "sctp-declare", {"app": "sctp-declare"}, [{"ports": [{"protocol": "SCTP", "port": 5060}]}]
    )
    step("netpol-create", lambda: net.create_namespaced_network_policy(NS, policy))
    step("netpol-read", lambda: net.read_namespaced_network_policy("sctp-declare", NS))
    bad_policy = pods.network_policy("sctp-bad", {}, [{"ports": [{"protocol": "sctp", "port": 1}]}])
    step(
        "netpol-create-protocol-sctp-422",
        lambda: net.create_namespaced_network_policy(NS, bad_policy),
    )
    step("netpol-delete", lambda: net.delete_namespaced_network_policy("sctp-declare", NS))
    step(
        "netpol-delete-again-404", lambda: net.delete_namespaced_network_policy("sctp-declare", NS)
    )
    step(
        "pod-delete", lambda: core.delete_namespaced_pod("sctp-declare", NS, grace_period_seconds=0)
    )
    step(
        "pod-delete-again-404",
        lambda: core.delete_namespaced_pod("sctp-declare", NS, grace_period_seconds=0),
    )
    # Node access: a privileged hostexec pod, let through under enforce=privileged and refused
    # by Pod Security admission under enforce=restricted (the battery's 403 "admission" path).
    hostexec = pods.hostexec_pod("hostexec-1", IMAGE, "replay-node", "lsmod")
    hostexec["spec"].pop("nodeName", None)
    step("hostexec-create", lambda: core.create_namespaced_pod(NS, hostexec))
    restricted = _namespace(NS_RESTRICTED, "restricted")
    step("namespace-restricted-create", lambda: core.create_namespace(restricted))
    step(
        "hostexec-create-restricted-403",
        lambda: core.create_namespaced_pod(NS_RESTRICTED, hostexec),
    )
    # kernel/serviceaccount.py: the battery's own account and a token for it.
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sctp-battery"}}
    step("serviceaccount-create", lambda: core.create_namespaced_service_account(NS, account))
    token = k8s.AuthenticationV1TokenRequest(
        spec=k8s.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
    )
    step(
        "serviceaccount-token",
        lambda: core.create_namespaced_service_account_token("sctp-battery", NS, token),
    )
    step(
        "serviceaccount-token-missing-404",
        lambda: core.create_namespaced_service_account_token("nosuch", NS, token),
    )
    managed = "app.kubernetes.io/managed-by=sctp-dashboard"
    step("namespaces-list-managed", lambda: core.list_namespace(label_selector=managed))
    step("namespace-delete", lambda: core.delete_namespace(NS))
    step("namespace-restricted-delete", lambda: core.delete_namespace(NS_RESTRICTED))
    step("namespace-delete-missing-404", lambda: core.delete_namespace("nosuch-ns"))


# The README's "Looking inside the lab with kubectl", and two of the battery's objects.
KUBECTL: list[tuple[str, list[str]]] = [
    ("kubectl-get-pods-A", ["get", "pods", "-A"]),
    ("kubectl-get-nodes-wide", ["get", "nodes", "-o", "wide"]),
    ("kubectl-explain-protocol", ["explain", "service.spec.ports.protocol"]),
    ("kubectl-get-ns-missing", ["get", "namespace", "nosuch-ns"]),
]


def record_kubectl(kubectl: str, kubeconfig: str) -> list[dict[str, Any]]:
    exchanges: list[dict[str, Any]] = []
    for step, args in KUBECTL:
        with tempfile.TemporaryDirectory() as cache:
            done = subprocess.run(
                [kubectl, "--kubeconfig", kubeconfig, "--cache-dir", cache, "-v=9", *args],
                capture_output=True,
                text=True,
                timeout=60,
            )
        exchanges += parse_kubectl_log(step, done.stderr)
    return exchanges


def record(kubeconfig: str, kubectl: str | None) -> dict[str, Any]:
    api = k8s_config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    rec = Recorder(api)
    battery_steps(api, rec)
    version = next(e for e in rec.exchanges if e["step"] == "version")["response"]["body"]
    exchanges = rec.exchanges
    if kubectl:
        exchanges = exchanges + record_kubectl(kubectl, kubeconfig)
    nodes = [str(n.metadata.name) for n in k8s.CoreV1Api(api).list_node().items if n.metadata]
    api.close()
    where = (
        f"`make cluster` with its node(s) {', '.join(nodes)} up (kubelet, containerd, kube-proxy)"
        if nodes
        else "control plane only (etcd, kube-apiserver, kube-controller-manager, "
        "kube-scheduler; no kubelet)"
    )
    return {
        "attribution": (
            f"Recorded from kube-apiserver {version.get('gitVersion')} built from source "
            f"(cluster/build.sh: upstream's k8s.io/kubernetes module at the tag), {where}, "
            "by `manage.py lab_record`."
        ),
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "exchanges": exchanges,
    }


class Command(BaseCommand):
    help = "Record the battery's and kubectl's requests with a real cluster's answers."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--kubeconfig", default=str(ROOT / "var" / "cluster" / "kubeconfig"))
        parser.add_argument("--kubectl", default=str(ROOT / "var" / "cluster" / "bin" / "kubectl"))
        parser.add_argument("--out", default=str(RECORDING))

    def handle(self, *args: Any, **options: Any) -> None:
        kubectl = options["kubectl"] if Path(options["kubectl"]).is_file() else None
        data = record(options["kubeconfig"], kubectl)
        Path(options["out"]).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        self.stdout.write(f"{len(data['exchanges'])} exchanges recorded into {options['out']}")
