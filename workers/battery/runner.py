"""Run a battery against one cluster: fingerprint, tests in catalog order, cleanup.

Every key of the battery ends with an outcome (tests not reached say why), and every
namespace the run created is deleted whatever happens (try/finally).
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from workers import sctp_host
from workers.battery import nodeparse, pods
from workers.battery.base import (
    MANAGED_BY_LABEL,
    MANAGED_BY_VALUE,
    NAMESPACE_PREFIX,
    RUN_ID_LABEL,
    BatteryReport,
    BatteryTest,
    ClusterSpec,
    TestOutcome,
    TestVerdict,
)
from workers.battery.context import (
    Cancelled,
    NodeAccessForbidden,
    RunContext,
    TestContext,
)
from workers.battery.invariant import apply_module_invariant
from workers.battery.permissions import PREFIX as DENIED_PREFIX
from workers.battery.permissions import denial_reason
from workers.battery.registry import BATTERIES, EXTRAS, EXTRAS_OF, REGISTRY
from workers.kube import ClusterUnreachable, Kube, KubeError, api_error_message

log = logging.getLogger(__name__)

MAX_NODES = 3  # battery pods are pinned to these; more nodes only multiply hostexec pods

ResultCallback = Callable[[str, TestOutcome], None]


def _now() -> datetime:
    return datetime.now(UTC)


def battery_keys(battery: str) -> list[str]:
    try:
        return list(BATTERIES[battery])
    except KeyError:
        raise ValueError(
            f"unknown battery {battery!r}; expected one of {sorted(BATTERIES)}"
        ) from None


def run_battery(
    api_client: k8s.ApiClient,
    spec: ClusterSpec,
    battery: str,
    run_id: str,
    on_result: ResultCallback | None = None,
    on_progress: Callable[[], None] | None = None,
    should_cancel: Callable[[], bool] | None = None,
) -> BatteryReport:
    keys = battery_keys(battery)
    report = BatteryReport(battery=battery, run_id=run_id)
    report.fingerprint.update(
        {
            "proxier_declared": spec.declared_proxier,
            "proxier_detected": None,
            "node_access": None,
            "load_balancer": None,
            "feature_gate": None,
            "sctp_module_before": {},
            "sctp_module_after": {},
            "worker_sctp": sctp_host.check_worker_sctp(),
        }
    )
    timeouts = spec.timeouts
    kube = Kube(
        api_client,
        request_timeout=timeouts.request,
        tries=timeouts.api_tries,
        backoff=timeouts.api_backoff,
    )
    run = RunContext(kube, spec, run_id, report, on_progress, should_cancel)

    def record(key: str, outcome: TestOutcome) -> None:
        report.results[key] = outcome
        if on_result is not None:
            try:
                on_result(key, outcome)
            except Exception as exc:  # a broken callback must not stop the run or cleanup
                log.exception("on_result callback failed for %s", key)
                report.errors.append(f"on_result({key}) raised {type(exc).__name__}: {exc}")

    stop_reason = ""
    try:
        _fingerprint_cluster(run)
        probe = TestContext(run, run.create_namespace("probe"))
        _probe_node_access(run, probe)
        if run.node_access:
            report.fingerprint["sctp_module_before"] = probe.module_states()
        for key, test in _plan(battery, keys):
            if kube.unreachable:
                stop_reason = f"not run: the cluster became unreachable ({kube.unreachable})"
                break
            run.tick()
            outcome = _run_one(run, test())
            record(key, outcome)
            if run.cancelled:
                raise Cancelled(outcome.reason)
        if run.node_access and not kube.unreachable:
            report.fingerprint["sctp_module_after"] = probe.module_states()
    except Cancelled:
        report.cancelled = True
        stop_reason = "not run: the run was cancelled"
    except ClusterUnreachable as exc:
        stop_reason = f"not run: {exc}"
        report.errors.append(str(exc))
    except (KubeError, ApiException) as exc:
        message = api_error_message(exc) if isinstance(exc, ApiException) else str(exc)
        message = denial_reason(exc) or message
        stop_reason = f"not run: the battery could not prepare the cluster ({message})"
        report.errors.append(message)
    except Exception as exc:  # a bug in the battery: report it, keep the cleanup promise
        log.exception("battery crashed")
        stop_reason = f"not run: the battery crashed ({type(exc).__name__}: {exc})"
        report.errors.append(traceback.format_exc(limit=8))
    finally:
        now = _now()
        for key in keys:
            if key not in report.results:
                reason = stop_reason or "not run"
                record(key, TestOutcome("error", reason, started=now, finished=now, reached=False))
        for name in list(report.namespaces_created):
            problem = run.delete_namespace(name)
            if problem:
                report.errors.append(problem)
        report.fingerprint["node_access"] = run.node_access
        report.fingerprint["proxier_detected"] = run.proxier_detected
        report.fingerprint["feature_gate"] = run.feature_gate
    return report


def _plan(battery: str, keys: list[str]) -> list[tuple[str, type[BatteryTest]]]:
    """The catalog tests in order, with the TCP/UDP conformance checks right after the basic
    tests (before connectivity tests may load sctp.ko)."""
    basic = [(k, REGISTRY[k]) for k in keys if REGISTRY[k].battery == "basic"]
    extras = [(k, EXTRAS[k]) for k in EXTRAS_OF[battery]]
    rest = [(k, REGISTRY[k]) for k in keys if REGISTRY[k].battery != "basic"]
    return basic + extras + rest


def _fingerprint_cluster(run: RunContext) -> None:
    kube, fingerprint = run.kube, run.report.fingerprint
    fingerprint["kubernetes_version"] = kube.server_version().lstrip("v") or None
    nodes = kube.call(kube.core.list_node).items or []
    fingerprint["node_count"] = len(nodes)
    fingerprint["node_names"] = [n.metadata.name for n in nodes]
    run.nodes = _battery_nodes(nodes)
    fingerprint["battery_nodes"] = list(run.nodes)
    if not run.nodes:
        raise KubeError("the cluster has no schedulable Linux node")


def _battery_nodes(nodes: list[k8s.V1Node]) -> list[str]:
    """Schedulable Linux nodes, workers before control-plane nodes, at most MAX_NODES."""
    usable = []
    for node in nodes:
        labels = node.metadata.labels or {}
        if node.spec is not None and node.spec.unschedulable:
            continue
        if labels.get("kubernetes.io/os", "linux") != "linux":  # Windows has no SCTP
            continue
        control_plane = "node-role.kubernetes.io/control-plane" in labels
        usable.append((control_plane, node.metadata.name))
    usable.sort(key=lambda item: item[0])  # stable: keeps the API's order otherwise
    return [name for _, name in usable[:MAX_NODES]]


def _probe_node_access(run: RunContext, probe: TestContext) -> None:
    """One hostexec pod on the first node: tells node access and kube-proxy's mode."""
    if not run.spec.node_access:
        run.node_access = False
        run.node_access_reason = "no node access: the cluster is registered without node access"
        return
    node = run.nodes[0]
    try:
        ok, output = probe.hostexec(node, pods.PROXY_MODE_CMD)
    except NodeAccessForbidden as exc:
        run.node_access = False
        run.node_access_reason = f"no node access: {exc}"
        return
    except TestVerdict as exc:  # the pod never finished: access unknown, not refused
        run.node_access = None
        run.node_access_reason = f"the hostexec probe on {node} failed: {exc.reason}"
        return
    run.node_access = True
    run.node_access_reason = "node access: hostexec pods run"
    run.proxier_detected = nodeparse.proxy_mode(output) if ok else None


def _run_one(run: RunContext, test: BatteryTest) -> TestOutcome:
    outcome, namespace = _run_body(run, test)
    if namespace is not None:
        problem = run.delete_namespace(namespace)
        if problem:
            run.report.errors.append(problem)
            if DENIED_PREFIX in problem:
                # Objects stay behind on the cluster: the harness broke, whatever the test saw.
                outcome.reason = f"{problem} (the test itself ended {outcome.outcome}: {outcome.reason})"
                outcome.outcome = "error"
    return outcome


def _run_body(run: RunContext, test: BatteryTest) -> tuple[TestOutcome, str | None]:
    started, t0 = _now(), time.monotonic()
    evidence: list[str] = []
    namespace: str | None = None

    def done(outcome: str, reason: str) -> tuple[TestOutcome, str | None]:
        return TestOutcome(
            outcome,
            reason,
            evidence="\n".join(evidence),
            duration=round(time.monotonic() - t0, 3),
            started=started,
            finished=_now(),
        ), namespace

    try:
        skip = test.skip_reason(run)
        if skip:
            return done("skipped", skip)
        if test.needs_node_access and run.node_access is not True:
            if run.node_access is False:
                return done("skipped", run.node_access_reason)
            return done("error", f"node inspection unavailable: {run.node_access_reason}")

        namespace = run.create_namespace(test.key)
        ctx = TestContext(run, namespace)
        evidence = ctx.evidence
        check_module = test.battery == "basic" and run.node_access is True
        before = ctx.module_states() if check_module else None
        outcome, reason = _verdict(ctx, test)
        if test.battery == "basic":
            after = ctx.module_states() if check_module and not run.kube.unreachable else None
            why = (
                run.node_access_reason if run.node_access is not True else "lsmod could not be read"
            )
            outcome, reason = apply_module_invariant(outcome, reason, before, after, evidence, why)
        return done(outcome, reason)
    except Cancelled:
        run.cancelled = True
        return done("error", "cancelled during this test")
    except ClusterUnreachable as exc:
        return done("error", str(exc))
    except (KubeError, ApiException) as exc:
        return done("error", _api_reason(exc))
    except Exception as exc:
        log.exception("test %s crashed", test.key)
        evidence.append(traceback.format_exc(limit=8))
        return done("error", f"the test crashed: {type(exc).__name__}: {exc}")


def _verdict(ctx: TestContext, test: BatteryTest) -> tuple[str, str]:
    """(outcome, reason) of the test body, before the module invariant is applied."""
    try:
        return "passed", test.run(ctx)
    except TestVerdict as verdict:
        return verdict.outcome, verdict.reason
    except ApiException as exc:
        if exc.status == 422 and "SCTP" in (exc.body or ""):
            ctx.run.feature_gate = "off"
            return (
                "failed",
                f"feature gate off: API rejected protocol SCTP ({api_error_message(exc)})",
            )
        denied = denial_reason(exc)
        if denied:  # the battery's role lacks a permission: the harness, not the cluster
            return "error", denied
        if exc.status == 403:
            return "skipped", f"no node access: {api_error_message(exc)}"
        return "error", _api_reason(exc)


def _api_reason(exc: BaseException) -> str:
    denied = denial_reason(exc)
    if denied:
        return denied
    if isinstance(exc, ApiException):
        return f"Kubernetes API error: {api_error_message(exc)}"
    return str(exc)


def sweep_namespaces(
    api_client: k8s.ApiClient,
    live_run_ids: set[str],
    prefix: str = NAMESPACE_PREFIX,
    request_timeout: float = 30.0,
) -> list[str]:
    """Delete battery namespaces whose run is not live (a worker died mid-run); their names."""
    kube = Kube(api_client, request_timeout=request_timeout)
    live = {pods.dns_label(run_id) for run_id in live_run_ids}
    listing = kube.call(
        kube.core.list_namespace, label_selector=f"{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}"
    )
    deleted: list[str] = []
    for namespace in listing.items or []:
        name = namespace.metadata.name
        labels = namespace.metadata.labels or {}
        if not name.startswith(prefix) or labels.get(RUN_ID_LABEL) in live:
            continue
        if namespace.status is not None and namespace.status.phase == "Terminating":
            continue
        try:
            kube.call(kube.core.delete_namespace, name)
        except ApiException as exc:
            if exc.status != 404:
                raise
            continue
        deleted.append(name)
    return deleted
