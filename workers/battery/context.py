"""What a test can do to a cluster: create objects, wait for pods, inspect nodes, connect.

`RunContext` holds what the whole run shares (the API, the chosen nodes, the probed node
access); `TestContext` is one test's namespace and evidence. Every wait is bounded by the
cluster's `Timeouts` and polls through `RunContext.tick`, which heartbeats and honours
cancellation.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException

from workers.battery import nodeparse, pods
from workers.battery.permissions import denial_reason, missing_permission
from workers.battery.base import (
    MANAGED_BY_LABEL,
    MANAGED_BY_VALUE,
    RUN_ID_LABEL,
    BatteryReport,
    ClusterSpec,
    TestError,
    TestSkipped,
)
from workers.kube import Kube, api_error_message

FINISHED_PHASES = ("Succeeded", "Failed")
CONNECT_WORDS = ("TIMEOUT", "REFUSED", "DNS", "OTHER")


class Cancelled(Exception):
    """should_cancel() said so: stop the run, clean up, report."""


class NodeAccessForbidden(Exception):
    """The API refused a hostexec pod (403): this cluster gives the battery no node access."""


@dataclass
class ConnectResult:
    ok: bool
    word: str  # "" on success, else TIMEOUT / REFUSED / DNS / OTHER / exit code text
    log: str
    pod: str

    def describe(self) -> str:
        return "connected" if self.ok else (self.word or "failed")


class RunContext:
    def __init__(
        self,
        kube: Kube,
        spec: ClusterSpec,
        run_id: str,
        report: BatteryReport,
        on_progress: Callable[[], None] | None = None,
        should_cancel: Callable[[], bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kube = kube
        self.spec = spec
        self.run_id = run_id
        self.report = report
        self.on_progress = on_progress
        self.should_cancel = should_cancel
        self.clock = clock
        self.nodes: list[str] = []
        self.node_access: bool | None = None
        self.node_access_reason = ""
        self.proxier_detected: str | None = None
        self.feature_gate: str | None = None
        self.cancelled = False
        self.no_endpoint_slices = False
        self.deleted_namespaces: set[str] = set()
        self._names = itertools.count(1)

    # --- heartbeat, cancellation, sleeping ---------------------------------------------

    def tick(self) -> None:
        if self.on_progress is not None:
            self.on_progress()
        if self.should_cancel is not None and self.should_cancel():
            raise Cancelled("the run was cancelled")

    def pause(self, seconds: float) -> None:
        """Sleep in slices short enough to heartbeat and notice cancellation."""
        end = self.clock() + seconds
        while True:
            self.tick()
            left = end - self.clock()
            if left <= 0:
                return
            time.sleep(min(left, 1.0))

    def unique(self, prefix: str) -> str:
        return f"{prefix}-{next(self._names)}"

    # --- namespaces -----------------------------------------------------------------------

    def namespace_name(self, suffix: str) -> str:
        run_part = pods.dns_label(self.run_id, 40)
        name = f"{self.spec.namespace_prefix}{run_part}"
        if suffix:
            name = f"{name}-{suffix}"
        if len(name) > 63:
            import hashlib

            digest = hashlib.sha1(self.run_id.encode()).hexdigest()[:10]
            name = f"{self.spec.namespace_prefix}{digest}-{suffix}"[:63].rstrip("-")
        return name

    def labels(self) -> dict[str, str]:
        labels = {RUN_ID_LABEL: pods.dns_label(self.run_id), MANAGED_BY_LABEL: MANAGED_BY_VALUE}
        if self.spec.node_access:
            # Like upstream e2e namespaces that need hostexec pods: Pod Security admission
            # must let them through; a cluster that forbids them still answers 403.
            labels["pod-security.kubernetes.io/enforce"] = "privileged"
        return labels

    def create_namespace(self, suffix: str) -> str:
        name = self.namespace_name(suffix)
        body = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "labels": self.labels()},
        }
        # A retried create that meets 409 went through the first time; nothing is read back
        # (the object is not used), so the role needs no `get namespaces`.
        self.kube.call(self.kube.core.create_namespace, body, adopt=lambda: None)
        if name not in self.report.namespaces_created:
            self.report.namespaces_created.append(name)
        return name

    def delete_namespace(self, name: str) -> str | None:
        """Delete (asynchronously, as the API does); an error message, or None when done."""
        if name in self.deleted_namespaces:
            return None
        try:
            self.kube.call(self.kube.core.delete_namespace, name)
            self.deleted_namespaces.add(name)
        except ApiException as exc:
            if exc.status == 404:
                self.deleted_namespaces.add(name)
                return None
            return f"deleting namespace {name}: {denial_reason(exc) or api_error_message(exc)}"
        except Exception as exc:  # noqa: BLE001 - cleanup must never hide the run's own outcome
            return f"deleting namespace {name}: {exc}"
        return None


class TestContext:
    __test__ = False  # not a pytest test class

    def __init__(self, run: RunContext, namespace: str) -> None:
        self.run = run
        self.namespace = namespace
        self.evidence: list[str] = []

    @property
    def spec(self) -> ClusterSpec:
        return self.run.spec

    @property
    def kube(self) -> Kube:
        return self.run.kube

    @property
    def image(self) -> str:
        return self.run.spec.agnhost_image

    def note(self, line: str) -> None:
        self.evidence.append(line)

    def node(self, index: int) -> str | None:
        """The index-th battery node (wrapping around on small clusters)."""
        if not self.run.nodes:
            return None
        return self.run.nodes[index % len(self.run.nodes)]

    # --- generic objects ----------------------------------------------------------------

    def create(
        self, create: Callable[..., Any], read: Callable[..., Any], body: dict[str, Any]
    ) -> Any:
        name = body["metadata"]["name"]
        return self.kube.call(
            create, self.namespace, body, adopt=lambda: read(name, self.namespace)
        )

    def create_pod(self, body: dict[str, Any]) -> Any:
        return self.create(
            self.kube.core.create_namespaced_pod, self.kube.core.read_namespaced_pod, body
        )

    def create_service(self, body: dict[str, Any]) -> Any:
        return self.create(
            self.kube.core.create_namespaced_service, self.kube.core.read_namespaced_service, body
        )

    def create_policy(self, body: dict[str, Any]) -> Any:
        return self.create(
            self.kube.networking.create_namespaced_network_policy,
            self.kube.networking.read_namespaced_network_policy,
            body,
        )

    def delete_policy(self, name: str) -> None:
        try:
            self.kube.call(
                self.kube.networking.delete_namespaced_network_policy, name, self.namespace
            )
        except ApiException as exc:
            if exc.status != 404:
                raise

    # --- pods -----------------------------------------------------------------------------

    def wait_pod(self, name: str, phases: tuple[str, ...], timeout: float) -> Any:
        """Poll the pod until its phase is one of `phases`; TestError on timeout."""
        deadline = self.run.clock() + timeout
        phase = "unknown"
        while True:
            self.run.tick()
            pod = self.kube.call(self.kube.core.read_namespaced_pod, name, self.namespace)
            phase = (pod.status.phase if pod.status else None) or "Pending"
            if phase in phases:
                return pod
            if phase in FINISHED_PHASES and "Running" in phases:
                raise TestError(
                    f"pod {name} ended {phase} instead of running: {self.pod_log(name)[-300:]!r}"
                )
            if self.run.clock() >= deadline:
                raise TestError(
                    f"pod {name} did not reach {'/'.join(phases)} within {timeout:g}s "
                    f"(phase {phase})"
                )
            self.run.pause(self.spec.timeouts.poll_interval)

    def pod_log(self, name: str) -> str:
        try:
            text = self.kube.call(self.kube.core.read_namespaced_pod_log, name, self.namespace)
        except ApiException as exc:
            if missing_permission(exc):
                raise  # the battery's role lacks pods/log: an error, not a log that says so
            return f"(log unavailable: {api_error_message(exc)})"
        return text if isinstance(text, str) else str(text)

    def start_server(self, body: dict[str, Any]) -> Any:
        """Create a server pod and wait until it runs; the pod (with its IP) is returned."""
        name = body["metadata"]["name"]
        self.create_pod(body)
        pod = self.wait_pod(name, ("Running",), self.spec.timeouts.pod_start)
        self.note(f"pod {name} running on {pod.spec.node_name} at {pod.status.pod_ip}")
        return pod

    def run_oneshot(self, body: dict[str, Any], timeout: float) -> tuple[Any, str]:
        """Create a one-shot pod, wait for Succeeded/Failed, return (pod, log)."""
        name = body["metadata"]["name"]
        self.create_pod(body)
        pod = self.wait_pod(name, FINISHED_PHASES, timeout)
        return pod, self.pod_log(name)

    # --- node inspection ----------------------------------------------------------------

    def hostexec(self, node: str, cmd: str) -> tuple[bool, str]:
        """Run `cmd` on `node` through a privileged pod; (succeeded, output).

        A 403 means the cluster forbids node access: raised as NodeAccessForbidden.
        """
        return self.hostexec_nodes([node], cmd)[node]

    def hostexec_nodes(self, nodes: list[str], cmd: str) -> dict[str, tuple[bool, str]]:
        """`hostexec` on several nodes at once: all pods are created before any is awaited."""
        names: dict[str, str] = {}
        for node in nodes:
            name = self.run.unique(f"hostexec-{pods.dns_label(node, 30)}")
            try:
                self.create_pod(pods.hostexec_pod(name, self.image, node, cmd))
            except ApiException as exc:
                if exc.status == 403 and not missing_permission(exc):
                    raise NodeAccessForbidden(api_error_message(exc)) from exc
                raise
            names[node] = name
        results: dict[str, tuple[bool, str]] = {}
        for node, name in names.items():
            pod = self.wait_pod(name, FINISHED_PHASES, self.spec.timeouts.pod_start)
            results[node] = (pod.status.phase == "Succeeded", self.pod_log(name))
        return results

    def require_node_access(self) -> None:
        if self.run.node_access is False:
            raise TestSkipped(self.run.node_access_reason)
        if self.run.node_access is None:
            raise TestError(f"node inspection unavailable: {self.run.node_access_reason}")

    def node_output(self, node: str, cmd: str) -> str:
        """The output of `cmd` on `node`; TestSkipped on 403, TestError when it fails."""
        try:
            ok, log = self.hostexec(node, cmd)
        except NodeAccessForbidden as exc:
            raise TestSkipped(f"no node access: {exc}") from exc
        if not ok:
            raise TestError(f"`{cmd}` failed on node {node}: {log.strip()[-300:]!r}")
        return log

    def module_states(self) -> dict[str, bool | None]:
        """sctp.ko loaded per battery node (None where lsmod could not be read)."""
        try:
            outputs = self.hostexec_nodes(self.run.nodes, "lsmod")
        except (TestError, NodeAccessForbidden):
            return {node: None for node in self.run.nodes}
        return {
            node: nodeparse.sctp_module_loaded(log) if ok else None
            for node, (ok, log) in outputs.items()
        }

    # --- traffic --------------------------------------------------------------------------

    def connect_once(
        self,
        host: str,
        port: int,
        protocol: str,
        *,
        node: str | None,
        labels: dict[str, str] | None = None,
    ) -> ConnectResult:
        timeouts = self.spec.timeouts
        name = self.run.unique(f"client-{protocol.lower()}")
        body = pods.client_pod(
            name,
            self.image,
            host,
            port,
            protocol,
            timeouts.connect,
            labels or {"app": "client"},
            node,
        )
        pod, log = self.run_oneshot(
            body, timeouts.pod_start + timeouts.connect + 5 * timeouts.poll_interval
        )
        if pod.status.phase == "Succeeded":
            return ConnectResult(True, "", log, name)
        words = [w for w in log.split() if w in CONNECT_WORDS]
        word = words[-1] if words else f"exit {self._exit_code(pod)}: {log.strip()[-200:]!r}"
        return ConnectResult(False, word, log, name)

    @staticmethod
    def _exit_code(pod: Any) -> str:
        try:
            return str(pod.status.container_statuses[0].state.terminated.exit_code)
        except (AttributeError, IndexError, TypeError):
            return "?"

    def connect_expect(
        self,
        host: str,
        port: int,
        protocol: str,
        *,
        expect_ok: bool,
        node: str | None,
        labels: dict[str, str] | None = None,
        what: str = "",
    ) -> ConnectResult:
        """Connect until the result matches `expect_ok` (bounded by connect_attempts).

        Like upstream's netpol probes, both directions retry: policies and kube-proxy
        rules take effect after a lag, so one early contrary result is not yet a verdict.
        """
        attempts = max(1, self.spec.timeouts.connect_attempts)
        result: ConnectResult | None = None
        for attempt in range(1, attempts + 1):
            result = self.connect_once(host, port, protocol, node=node, labels=labels)
            prefix = f"{what}: " if what else ""
            self.note(
                f"{prefix}{protocol.upper()} to {pods.connect_target(host, port)} from "
                f"{result.pod}: {result.describe()} (attempt {attempt}/{attempts}, expected "
                f"{'success' if expect_ok else 'denied'})"
            )
            if result.ok == expect_ok:
                break
            if attempt < attempts:
                self.run.pause(self.spec.timeouts.poll_interval)
        assert result is not None
        return result

    def wait_endpoints(self, service_name: str, protocol: str = "SCTP") -> list[str]:
        """Ready endpoint addresses of a service whose slice carries a `protocol` port."""
        deadline = self.run.clock() + self.spec.timeouts.pod_start
        while True:
            self.run.tick()
            addresses = self._ready_addresses(service_name, protocol)
            if addresses:
                return addresses
            if self.run.clock() >= deadline:
                raise TestError(
                    f"service {service_name} has no ready {protocol} endpoints within "
                    f"{self.spec.timeouts.pod_start:g}s"
                )
            self.run.pause(self.spec.timeouts.poll_interval)

    def _ready_addresses(self, service_name: str, protocol: str) -> list[str]:
        if not self.run.no_endpoint_slices:
            try:
                slices = self.kube.call(
                    self.kube.discovery.list_namespaced_endpoint_slice,
                    self.namespace,
                    label_selector=f"kubernetes.io/service-name={service_name}",
                )
            except ApiException as exc:
                if exc.status != 404:
                    raise
                # discovery.k8s.io/v1 is GA from v1.21; older clusters only have Endpoints.
                self.run.no_endpoint_slices = True
            else:
                addresses: list[str] = []
                for item in slices.items or []:
                    if protocol not in {p.protocol for p in (item.ports or [])}:
                        continue
                    for endpoint in item.endpoints or []:
                        ready = endpoint.conditions.ready if endpoint.conditions else True
                        if ready is not False:
                            addresses.extend(endpoint.addresses or [])
                return addresses
        try:
            endpoints = self.kube.call(
                self.kube.core.read_namespaced_endpoints, service_name, self.namespace
            )
        except ApiException as exc:
            if exc.status == 404:  # not created yet by the endpoints controller
                return []
            raise
        return [
            address.ip
            for subset in endpoints.subsets or []
            if protocol in {p.protocol for p in (subset.ports or [])}
            for address in subset.addresses or []
        ]
