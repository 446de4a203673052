"""What a test can do to a cluster: create objects, wait for pods, inspect nodes, connect.

`RunContext` holds what the whole run shares (the API, the chosen nodes, the probed node
access); `TestContext` is one test's namespace and evidence. Every wait is bounded by the
cluster's `Timeouts` and polls through `RunContext.tick`, which heartbeats and honours
cancellation.
"""

from __future__ import annotations

import hashlib
import ipaddress
import itertools
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import urllib3
from kubernetes import watch
from kubernetes.client.exceptions import ApiException

from kernel import cni
from kernel.battery import nodeparse, pods
from kernel.battery.base import (
    MANAGED_BY_LABEL,
    MANAGED_BY_VALUE,
    RUN_ID_LABEL,
    BatteryReport,
    ClusterSpec,
    TestError,
    TestSkipped,
)
from kernel.kube import Kube, api_error_message

FINISHED_PHASES = ("Succeeded", "Failed")
CONNECT_WORDS = ("TIMEOUT", "REFUSED", "DNS", "OTHER", "UNKNOWN")
# agnhost connect writes one of these to stderr before exiting 1, alone (`TIMEOUT`) or with
# the Go error (`OTHER: connection refused`, `DNS: lookup x: no such host`, UDP's
# `TIMEOUT: read udp …: i/o timeout`); test/images/agnhost/connect/connect.go.
_WORD_LINE = re.compile(r"^(TIMEOUT|REFUSED|DNS|OTHER|UNKNOWN)(?::\s*(.*))?$")
# Kubernetes RBAC's words: `User "x" cannot create resource "pods" in API group "" in the
# namespace "y"` (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters).
# For a non-resource URL: `User "x" cannot get path "/version/"`.
_RBAC = re.compile(
    r'cannot (\S+) (?:resource "([^"]+)"(?: in API group "([^"]*)")?|path "([^"]+)")'
)
RBAC_PREFIX = "the battery's credentials lack the RBAC permission to "
MAX_FACT_OBJECTS = 300  # created objects whose UID and resourceVersion a run records
TESTER_PORT = 9080  # upstream's testContainerHTTPPort: netexec in the test container
WATCH_RESYNC = 5.0  # seconds: a pod watch is re-read at least this often (heartbeat, cancel)


def kube_for(api_client: Any, spec: ClusterSpec) -> Kube:
    """The cluster's API with the retry policy of the spec's timeouts (both batteries')."""
    timeouts = spec.timeouts
    return Kube(
        api_client,
        request_timeout=timeouts.request,
        tries=timeouts.api_tries,
        backoff=timeouts.api_backoff,
    )


class Cancelled(Exception):
    """should_cancel() said so: stop the run, clean up, report."""


class NodeAccessForbidden(Exception):
    """Admission refused a privileged pod: this cluster gives the battery no node access."""


def parse_connect_log(log: str) -> tuple[str, str]:
    """(word, detail) of agnhost connect's failure line; ("", "") when there is none."""
    for line in reversed((log or "").splitlines()):
        found = _WORD_LINE.match(line.strip())
        if found:
            return found.group(1), (found.group(2) or "").strip()
    return "", ""


def refusal_kind(exc: ApiException) -> str | None:
    """ "rbac" for an RBAC 403, "admission" for an admission refusal, None otherwise.

    Pod Security admission answers 403 (`violates PodSecurity`); a validating webhook
    answers its own code, 400 unless it says otherwise (`admission webhook "…" denied the
    request`). RBAC's 403 says `cannot <verb> resource …`: a missing permission, not a
    cluster policy, so it must never turn into a skip.
    """
    message = api_error_message(exc)
    if exc.status == 403 and _RBAC.search(message):
        return "rbac"
    if exc.status == 403 or (
        exc.status in (400, 422) and "admission webhook" in message and "denied" in message
    ):
        return "admission"
    return None


def rbac_reason(exc: ApiException) -> str:
    message = api_error_message(exc)
    found = _RBAC.search(message)
    if found is None:
        return f"Kubernetes API error: {message}"
    verb, resource, group = found.group(1), found.group(2) or found.group(4), found.group(3) or ""
    where = f' in API group "{group}"' if group else ""
    return f"{RBAC_PREFIX}{verb} {resource}{where} ({message})"


def admission_reason(exc: ApiException) -> str:
    return f"admission refused a pod the test needs: {api_error_message(exc)}"


@dataclass
class ConnectResult:
    ok: bool
    word: str  # "" on success, else TIMEOUT / REFUSED / DNS / OTHER / exit code text
    log: str
    pod: str
    detail: str = ""  # what agnhost wrote after the word (`connection refused`, …)

    def describe(self) -> str:
        if self.ok:
            return "connected"
        word = self.word or "failed"
        return f"{word}: {self.detail}" if self.detail else word


@dataclass
class DialResult:
    """What netexec's /dial answered: the hostnames that replied and the errors of the rest."""

    responses: list[str]
    errors: list[str]
    pod: str
    reached_tester: bool = True


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
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.kube = kube
        self.spec = spec
        self.run_id = run_id
        self.report = report
        self.on_progress = on_progress
        self.should_cancel = should_cancel
        self.clock = clock
        # Every wait of the battery sleeps through this (tests inject one that does not wait).
        self.sleep = sleep
        self.nodes: list[str] = []
        # The nodes upstream's specs count (kernel.battery.schedulable: ready, schedulable,
        # untainted Linux nodes, in the API's order) and why the others are not counted.
        self.schedulable_nodes: list[str] = []
        self.nodes_not_counted: dict[str, str] = {}
        # Our sctp.ko invariant around each basic test (kernel.battery.invariant.invariant_fact).
        self.invariant_tests: dict[str, dict[str, Any]] = {}
        # The nodes as the API sent them (plain dicts): addresses, annotations, kernels.
        self.node_objects: list[dict[str, Any]] = []
        self.cni: cni.Detection = cni.Detection()
        self.node_access: bool | None = None
        self.node_access_reason = ""
        # kube-proxy's mode as kube-proxy reports it (/proxyMode, else a probe's tables):
        # which basic checks apply. Never credited by itself: see proxier_demonstrated.
        self.proxier_detected: str | None = None
        self.proxier_demonstrated: dict[str, Any] | None = None
        self.feature_gate: str | None = None
        self.cancelled = False
        self.no_endpoint_slices = False
        # The nodes' kernels asked once before the first connectivity test
        # (kernel.battery.kernelsctp): node -> "yes" | "no" | "unknown"; None until asked.
        self.kernel_sctp: dict[str, str] | None = None
        self.kernel_sctp_evidence: list[str] = []
        # Nodes whose hostexec pods run chrooted (they refused nsenter: pods.NSENTER_REFUSED).
        self.hostexec_chroot: set[str] = set()
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
            self.sleep(min(left, 1.0))

    def unique(self, prefix: str) -> str:
        return f"{prefix}-{next(self._names)}"

    # --- namespaces -----------------------------------------------------------------------

    def namespace_name(self, suffix: str) -> str:
        run_part = pods.dns_label(self.run_id, 40)
        name = f"{self.spec.namespace_prefix}{run_part}"
        if suffix:
            name = f"{name}-{suffix}"
        if len(name) > 63:
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

    def create_namespace(self, suffix: str, labels: dict[str, str] | None = None) -> str:
        name = self.namespace_name(suffix)
        body = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "labels": {**self.labels(), **(labels or {})}},
        }
        # A retried create that meets 409 went through the first time; nothing is read back
        # (the object is not used), so the role needs no `get namespaces`.
        created = self.kube.call(self.kube.core.create_namespace, body, adopt=lambda: None)
        self.record_object("Namespace", created)
        if name not in self.report.namespaces_created:
            self.report.namespaces_created.append(name)
        return name

    def record_object(self, kind: str, obj: Any) -> None:
        """The created object's UID and resourceVersion, in the run's facts (bounded)."""
        meta = getattr(obj, "metadata", None)
        facts = self.report.fingerprint.get("facts")
        if meta is None or not isinstance(facts, dict) or not getattr(meta, "uid", None):
            return
        objects = facts.setdefault("objects", [])
        if len(objects) < MAX_FACT_OBJECTS:
            objects.append(
                {
                    "kind": kind,
                    "name": str(getattr(meta, "name", "") or ""),
                    "uid": str(meta.uid),
                    "resource_version": str(getattr(meta, "resource_version", "") or ""),
                }
            )

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
            rbac = exc.status == 403 and refusal_kind(exc) == "rbac"
            return (
                f"deleting namespace {name}: {rbac_reason(exc) if rbac else api_error_message(exc)}"
            )
        except Exception as exc:  # cleanup must never hide the run's own outcome
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
        created = self.kube.call(
            create, self.namespace, body, adopt=lambda: read(name, self.namespace)
        )
        self.run.record_object(body.get("kind", ""), created)
        return created

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
        """Wait until the pod's phase is one of `phases`; TestError on timeout.

        As upstream's framework waits (watchtools.UntilWithSync): read the pod, then watch it
        from that resourceVersion, and read it again (a resync) whenever the watch ends, says
        410 Gone or breaks, at least every WATCH_RESYNC seconds so that the run heartbeats
        and notices cancellation. A pod the API no longer has is an error at once.
        """
        deadline = self.run.clock() + timeout
        phase = "unknown"
        while True:
            self.run.tick()
            try:
                pod = self.kube.call(self.kube.core.read_namespaced_pod, name, self.namespace)
            except ApiException as exc:
                if exc.status == 404:
                    raise TestError(
                        f"pod {name} is gone from namespace {self.namespace} "
                        f"({api_error_message(exc)})"
                    ) from exc
                raise
            current = self._check_phase(name, pod, phases)
            if current is None:
                return pod
            phase = current
            left = deadline - self.run.clock()
            if left <= 0:
                raise TestError(
                    f"pod {name} did not reach {'/'.join(phases)} within {timeout:g}s "
                    f"(phase {phase})"
                )
            found = self._watch_pod(name, pod, phases, min(left, WATCH_RESYNC))
            if found is not None:
                return found

    def _check_phase(self, name: str, pod: Any, phases: tuple[str, ...]) -> str | None:
        """None when the pod is in one of `phases`, else its phase; TestError when it ended
        while it should run."""
        phase = (pod.status.phase if pod.status else None) or "Pending"
        if phase in phases:
            return None
        if phase in FINISHED_PHASES and "Running" in phases:
            raise TestError(
                f"pod {name} ended {phase} instead of running: {self.pod_log(name)[-300:]!r}"
            )
        return str(phase)

    def _watch_pod(self, name: str, pod: Any, phases: tuple[str, ...], seconds: float) -> Any:
        """Watch one pod for up to `seconds`; the pod once it is in `phases`, else None."""
        version = pod.metadata.resource_version if pod.metadata else None
        started = self.run.clock()
        watcher = watch.Watch()  # type: ignore[no-untyped-call]
        try:
            for event in watcher.stream(  # type: ignore[no-untyped-call]
                self.kube.core.list_namespaced_pod,
                self.namespace,
                field_selector=f"metadata.name={name}",
                resource_version=version,
                timeout_seconds=max(1, int(seconds)),
                _request_timeout=seconds + self.spec.timeouts.request,
            ):
                kind = event.get("type")
                obj = event.get("object")
                if kind == "ERROR":
                    return None  # 410 Gone and the like: resync by reading the pod
                if kind == "DELETED":
                    raise TestError(f"pod {name} was deleted while the battery waited for it")
                if obj is not None and self._check_phase(name, obj, phases) is None:
                    return obj
                if self.run.clock() - started >= seconds:
                    return None
        except ApiException as exc:
            if exc.status == 403 and refusal_kind(exc) == "rbac":
                raise
            if exc.status == 410:
                return None
            self.run.pause(self.spec.timeouts.poll_interval)
        except (OSError, ValueError, urllib3.exceptions.HTTPError):
            self.run.pause(self.spec.timeouts.poll_interval)  # a broken stream: resync
        finally:
            watcher.stop()  # type: ignore[no-untyped-call]
        return None

    def pod_log(
        self, name: str, container: str | None = None, tail_lines: int | None = None
    ) -> str:
        extra: dict[str, Any] = {}
        if container:
            extra["container"] = container
        if tail_lines:
            extra["tail_lines"] = tail_lines
        try:
            text = self.kube.call(
                self.kube.core.read_namespaced_pod_log, name, self.namespace, **extra
            )
        except ApiException as exc:
            if exc.status == 403 and refusal_kind(exc) == "rbac":
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
        """`hostexec` on several nodes at once: all pods are created before any is awaited.

        A node that refuses nsenter its PID 1's mount namespace (pods.NSENTER_REFUSED) is
        asked again chrooted into its root, and from then on only so (run.hostexec_chroot)."""
        results = self._hostexec_nodes(nodes, cmd)
        refused = [
            node
            for node, (ok, log) in results.items()
            if not ok and pods.NSENTER_REFUSED in log and node not in self.run.hostexec_chroot
        ]
        if refused:
            for node in refused:
                self.run.hostexec_chroot.add(node)
                self.note(
                    f"node {node} refused nsenter ({pods.NSENTER_REFUSED!r}): its commands run "
                    "chrooted into its root (/rootfs) in its network namespace"
                )
            results.update(self._hostexec_nodes(refused, cmd))
        return results

    def _hostexec_nodes(self, nodes: list[str], cmd: str) -> dict[str, tuple[bool, str]]:
        names: dict[str, str] = {}
        for node in nodes:
            name = self.run.unique(f"hostexec-{pods.dns_label(node, 30)}")
            chroot = node in self.run.hostexec_chroot
            try:
                self.create_pod(pods.hostexec_pod(name, self.image, node, cmd, chroot=chroot))
            except ApiException as exc:
                kind = refusal_kind(exc)
                if kind == "admission":
                    raise NodeAccessForbidden(api_error_message(exc)) from exc
                if kind == "rbac":
                    raise TestError(rbac_reason(exc)) from exc
                raise
            names[node] = name
        results: dict[str, tuple[bool, str]] = {}
        for node, name in names.items():
            pod = self.wait_pod(name, FINISHED_PHASES, self.spec.timeouts.pod_start)
            results[node] = (pod.status.phase == "Succeeded", self.pod_log(name))
        return results

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
        return self.read_modules(self.run.nodes)[0]

    def read_modules(self, nodes: list[str]) -> tuple[dict[str, bool | None], str]:
        """(sctp.ko loaded per node, None where lsmod failed; why the hostexec pods did not
        run, "" when they did). An admission refusal reads as no node access: all None, ""."""
        try:
            outputs = self.hostexec_nodes(nodes, "lsmod")
        except NodeAccessForbidden:
            return dict.fromkeys(nodes), ""
        except TestError as exc:
            return dict.fromkeys(nodes), exc.reason
        return {
            node: nodeparse.sctp_module_loaded(log) if ok else None
            for node, (ok, log) in outputs.items()
        }, ""

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
        word, detail = parse_connect_log(log)
        if not word:
            word = f"exit {self._exit_code(pod)}: {log.strip()[-200:]!r}"
        return ConnectResult(False, word, log, name, detail)

    def connect_batch(
        self, probes: list[tuple[TestContext, str, int, str, dict[str, str]]], node: str | None
    ) -> list[ConnectResult]:
        """Many `agnhost connect` pods at once (space, host, port, protocol, labels): all are
        created before any is awaited, as upstream's prober runs a matrix in parallel."""
        timeouts = self.spec.timeouts
        created: list[tuple[TestContext, str]] = []
        for space, host, port, protocol, labels in probes:
            name = self.run.unique(f"client-{protocol.lower()}")
            body = pods.client_pod(
                name, self.image, host, port, protocol, timeouts.connect, labels, node
            )
            space.create_pod(body)
            created.append((space, name))
        results: list[ConnectResult] = []
        wait = timeouts.pod_start + timeouts.connect + 5 * timeouts.poll_interval
        for space, name in created:
            pod = space.wait_pod(name, FINISHED_PHASES, wait)
            log = space.pod_log(name)
            # A matrix makes hundreds of one-shot pods: each goes once read (its IP, its slot).
            space.delete_pod(name)
            if pod.status.phase == "Succeeded":
                results.append(ConnectResult(True, "", log, name))
                continue
            word, detail = parse_connect_log(log)
            if not word:
                word = f"exit {self._exit_code(pod)}: {log.strip()[-200:]!r}"
            results.append(ConnectResult(False, word, log, name, detail))
        return results

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

    # --- netexec dial (upstream's DialFromTestContainer, without exec) --------------------

    def dial_once(
        self,
        tester_ip: str,
        host: str,
        port: int,
        protocol: str,
        tries: int,
        node: str | None,
        tester_port: int = TESTER_PORT,
    ) -> DialResult:
        """One `curl …/dial?request=hostname…` to the netexec test container, in a pod.

        Upstream execs that curl inside the test container; the battery runs it in a
        one-shot pod instead (no exec permission needed). The SCTP (or UDP) exchange itself
        still happens between the test container and the target, as upstream's does.
        """
        timeouts = self.spec.timeouts
        max_time = tries * timeouts.connect + 5
        name = self.run.unique(f"dial-{protocol.lower()}")
        url = (
            f"http://{pods.connect_target(tester_ip, tester_port)}/dial?request=hostname"
            f"&protocol={protocol.lower()}&host={host}&port={port}&tries={tries}"
        )
        pod, log = self.run_oneshot(
            pods.curl_pod(name, self.image, url, max_time, {"app": "dial-client"}, node),
            timeouts.pod_start + max_time + 5 * timeouts.poll_interval,
        )
        if pod.status.phase != "Succeeded":
            return DialResult(
                [],
                [(f"curl to the test container failed (exit {self._exit_code(pod)})")],
                name,
                reached_tester=False,
            )
        try:
            data = json.loads(log.strip().splitlines()[-1] if log.strip() else "{}")
        except ValueError:
            return DialResult([], [f"netexec answered {log.strip()[-200:]!r}"], name)
        if not isinstance(data, dict):
            data = {}
        responses = [str(r).strip() for r in data.get("responses") or [] if str(r).strip()]
        return DialResult(responses, [str(e) for e in data.get("errors") or []], name)

    def dial_expect(
        self,
        tester_ip: str,
        host: str,
        port: int,
        protocol: str,
        expected: set[str],
        *,
        node: str | None,
        what: str,
        max_tries: int,
        tester_port: int = TESTER_PORT,
        dialer: str = "the test container",
    ) -> tuple[set[str], list[str]]:
        """Dial until every expected hostname answered; (hostnames seen, errors).

        Upstream's DialFromContainer (framework/network/utils.go): up to `max_tries` tries
        (NetworkingTestConfig's MaxTries, endpoints² + 30), hitEndpointRetryDelay (2 s) apart,
        answers accumulating until the set equals `expected`; an unexpected answer ends it at
        once. Each try is one exchange: an attempt's /dial carries as many as there are
        expected hostnames (through a Service the endpoint is picked at random), each counted
        as one of upstream's tries. The whole dial is bounded: max_tries x (the retry delay +
        the connect timeout), whatever the pods' start takes.
        """
        timeouts = self.spec.timeouts
        budget = max(1, max_tries)
        deadline = self.run.clock() + budget * (timeouts.dial_retry_delay + timeouts.connect)
        seen: set[str] = set()
        errors: list[str] = []
        used = attempt = 0
        while used < budget:
            attempt += 1
            tries = min(max(1, len(expected)), budget - used)
            used += tries
            result = self.dial_once(tester_ip, host, port, protocol, tries, node, tester_port)
            seen |= set(result.responses)
            errors = result.errors or errors
            self.note(
                f"{what}: {protocol.upper()} dial to {pods.connect_target(host, port)} "
                f"({tries} tries) from {dialer} via {result.pod}: hostnames "
                f"{sorted(set(result.responses))}"
                + (
                    f", {len(result.errors)} error(s), last: {result.errors[-1]}"
                    if result.errors
                    else ""
                )
                + f" (tries {used}/{budget}, expected {sorted(expected)})"
            )
            if seen == expected or seen - expected:
                break
            if used >= budget:
                break
            if self.run.clock() >= deadline:
                errors = [
                    *errors,
                    f"gave up after {used} of {budget} tries: the dial's bound ran out",
                ]
                break
            self.run.pause(timeouts.dial_retry_delay)
        return seen, errors

    def node_ip_of_family(self, family: int) -> str | None:
        """Upstream's NodeIP (NetworkingTestConfig.setup): the first InternalIP of the family
        over the ready, schedulable nodes (`e2enode.FirstAddressByTypeAndFamily`). ExternalIPs
        come first only under `PreferExternalAddresses`, which no SCTP spec sets."""
        by_name = {
            str((n.get("metadata") or {}).get("name") or ""): n for n in self.run.node_objects
        }
        for name in self.run.schedulable_nodes or self.run.nodes:
            node = by_name.get(name) or {}
            for address in (node.get("status") or {}).get("addresses") or []:
                if address.get("type") != "InternalIP" or not address.get("address"):
                    continue
                try:
                    if ipaddress.ip_address(str(address["address"])).version == family:
                        return str(address["address"])
                except ValueError:
                    continue
        return None

    def delete_pod(self, name: str) -> None:
        try:
            self.kube.call(
                self.kube.core.delete_namespaced_pod, name, self.namespace, grace_period_seconds=0
            )
        except ApiException as exc:
            if exc.status != 404:
                raise

    # --- endpoints --------------------------------------------------------------------------

    def endpoint_ports(self, service_name: str) -> dict[str, dict[str, list[str]]]:
        """{"Endpoints"|"EndpointSlice": {pod name: ["5060/SCTP", …]}} of a service's ready
        addresses, read from both APIs (upstream's validateEndpointsPortsOrFail)."""
        out: dict[str, dict[str, list[str]]] = {"Endpoints": {}}
        try:
            endpoints = self.kube.call(
                self.kube.core.read_namespaced_endpoints, service_name, self.namespace
            )
        except ApiException as exc:
            if exc.status != 404:
                raise
            endpoints = None
        for subset in (endpoints.subsets if endpoints else None) or []:
            ports = sorted(f"{p.port}/{p.protocol}" for p in subset.ports or [])
            for address in subset.addresses or []:
                ref = (address.target_ref.name if address.target_ref else None) or address.ip
                out["Endpoints"].setdefault(ref, []).extend(ports)
        if self.run.no_endpoint_slices:
            return out
        try:
            slices = self.kube.call(
                self.kube.discovery.list_namespaced_endpoint_slice,
                self.namespace,
                label_selector=f"kubernetes.io/service-name={service_name}",
            )
        except ApiException as exc:
            if exc.status != 404:
                raise
            self.run.no_endpoint_slices = True
            return out
        out["EndpointSlice"] = {}
        for item in slices.items or []:
            ports = sorted(f"{p.port}/{p.protocol}" for p in item.ports or [])
            for endpoint in item.endpoints or []:
                if endpoint.conditions and endpoint.conditions.ready is False:
                    continue
                ref = (endpoint.target_ref.name if endpoint.target_ref else None) or ",".join(
                    endpoint.addresses or []
                )
                out["EndpointSlice"].setdefault(ref, []).extend(ports)
        return out

    def wait_endpoint_ports(
        self, service_name: str, expected: dict[str, list[str]]
    ) -> dict[str, dict[str, list[str]]]:
        """Poll both endpoint APIs until each shows exactly `expected`; the last reading.

        The caller compares the reading with `expected` to tell which API never got there.
        """
        want = {pod: sorted(ports) for pod, ports in expected.items()}
        deadline = self.run.clock() + self.spec.timeouts.pod_start
        while True:
            self.run.tick()
            seen = self.endpoint_ports(service_name)
            if all({k: sorted(v) for k, v in got.items()} == want for got in seen.values()):
                return seen
            if self.run.clock() >= deadline:
                return seen
            self.run.pause(self.spec.timeouts.poll_interval)

    def wait_endpoints(
        self, service_name: str, protocol: str = "SCTP", count: int = 1
    ) -> list[str]:
        """Ready endpoint addresses (at least `count`) of a service with a `protocol` port."""
        deadline = self.run.clock() + self.spec.timeouts.pod_start
        while True:
            self.run.tick()
            addresses = self._ready_addresses(service_name, protocol)
            if len(addresses) >= max(1, count):
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
