"""Run a battery against one cluster: fingerprint, tests in catalog order, cleanup.

Every key of the battery ends with an outcome (tests not reached say why), and every
namespace the run created is deleted whatever happens (try/finally).
"""

from __future__ import annotations

import json
import logging
import re
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from kernel import cni, sctp_host
from kernel.battery import invariant, kernelsctp, nodeparse, pods, proxier, schedulable
from kernel.battery.base import (
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
from kernel.battery.context import (
    FINISHED_PHASES,
    RBAC_PREFIX,
    Cancelled,
    NodeAccessForbidden,
    RunContext,
    TestContext,
    admission_reason,
    kube_for,
    rbac_reason,
    refusal_kind,
)
from kernel.battery.registry import BATTERIES, EXTRAS, EXTRAS_OF, REGISTRY
from kernel.kube import ClusterUnreachable, Kube, KubeError, api_error_message
from kernel.vocabulary import PROXIERS

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
    sleep: Callable[[float], None] = time.sleep,
) -> BatteryReport:
    keys = battery_keys(battery)
    report = BatteryReport(battery=battery, run_id=run_id)
    report.fingerprint.update(
        {
            "proxier_declared": spec.declared_proxier,
            "proxier_detected": None,
            "proxier_source": None,
            "emulated": False,
            "cni_detected": None,
            "cni_mismatch": None,
            "node_access": None,
            "load_balancer": None,
            "feature_gate": None,
            "sctp_module_before": {},
            "sctp_module_after": {},
            "worker_sctp": sctp_host.check_worker_sctp(),
        }
    )
    kube = kube_for(api_client, spec)
    run = RunContext(kube, spec, run_id, report, on_progress, should_cancel, sleep=sleep)

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
        fingerprint_cluster(run)
        probe = TestContext(run, run.create_namespace("probe"))
        _probe_node_access(run, probe)
        if run.node_access:
            report.fingerprint["sctp_module_before"] = probe.module_states()
        _detect_proxier(run, probe)
        _detect_cni(run)
        for key, test in _plan(battery, keys):
            if kube.unreachable:
                stop_reason = (
                    f"not run: {kube.broken}"
                    if kube.broken
                    else f"not run: the cluster became unreachable ({kube.unreachable})"
                )
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
        if isinstance(exc, ApiException) and refusal_kind(exc) == "rbac":
            message = rbac_reason(exc)
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
        # The demonstrated proxier (contract): the mode whose rules carried the Service under
        # test, never kube-proxy's own word; what kube-proxy says is kept beside it.
        demonstrated = run.proxier_demonstrated or proxier.initial(run)
        if run.node_access is not True and demonstrated["mode"] is None:
            demonstrated = {**demonstrated, "detail": proxier.NO_NODE_ACCESS}
        report.fingerprint["kube_proxy_mode"] = run.proxier_detected
        report.fingerprint["proxier_demonstrated"] = demonstrated
        report.fingerprint["proxier_detected"] = demonstrated["mode"]
        report.fingerprint["feature_gate"] = run.feature_gate
        if run.invariant_tests:
            summary = invariant.summarize(run.invariant_tests)
            report.fingerprint["sctp_invariant"] = summary
            # The one value the evidence policy reads (a database column: Run.fp_*).
            report.fingerprint["sctp_invariant_held"] = summary["held"]
    return report


def _plan(battery: str, keys: list[str]) -> list[tuple[str, type[BatteryTest]]]:
    """The catalog tests in order, with the TCP/UDP conformance checks right after the basic
    tests (before connectivity tests may load sctp.ko), and the connectivity extras (the
    secondary IP family) after the connectivity tests."""
    basic = [(k, REGISTRY[k]) for k in keys if REGISTRY[k].battery == "basic"]
    extras = [(k, EXTRAS[k]) for k in EXTRAS_OF[battery] if EXTRAS[k].battery == "basic"]
    later = [(k, EXTRAS[k]) for k in EXTRAS_OF[battery] if EXTRAS[k].battery != "basic"]
    rest = [(k, REGISTRY[k]) for k in keys if REGISTRY[k].battery != "basic"]
    return basic + extras + rest + later


def fingerprint_cluster(run: RunContext) -> None:
    kube, fingerprint = run.kube, run.report.fingerprint
    version = kube.version_info()
    fingerprint["kubernetes_version"] = str(version.get("gitVersion") or "").lstrip("v") or None
    # An emulator says so in its /version answer (the lab always does): its runs never count.
    fingerprint["emulated"] = version.get("emulated") is True
    listed = json.loads(kube.call_raw(kube.core.list_node) or b"{}")
    nodes = run.node_objects = cni.items_of(listed)
    fingerprint["node_count"] = len(nodes)
    fingerprint["node_names"] = [n["metadata"]["name"] for n in nodes if _node_name(n)]
    # Facts a later run can be checked against (an agent's run is a claim: the dashboard checks
    # them for consistency across its runs): each node's boot ID, the cluster's resourceVersion
    # when the run began, and (TestContext.create) the UID and resourceVersion of every object
    # the battery creates.
    list_meta = listed.get("metadata") if isinstance(listed, dict) else None
    fingerprint["facts"] = {
        "nodes": {
            _node_name(n): str(((n.get("status") or {}).get("nodeInfo") or {}).get("bootID") or "")
            for n in nodes
            if _node_name(n)
        },
        "resource_version": str((list_meta or {}).get("resourceVersion") or ""),
        "objects": [],
    }
    run.nodes = _battery_nodes(nodes)
    linux = [n for n in nodes if _is_linux(n)]  # Windows nodes have no SCTP: never counted
    run.schedulable_nodes, run.nodes_not_counted = schedulable.ready_schedulable(linux)
    fingerprint["ready_schedulable_nodes"] = list(run.schedulable_nodes)
    if run.nodes_not_counted:
        fingerprint["nodes_not_counted"] = dict(run.nodes_not_counted)
    fingerprint["battery_nodes"] = list(run.nodes)
    fingerprint["shared_kernel"] = _shared_kernel(nodes, run.nodes)
    if fingerprint["shared_kernel"]:
        fingerprint["shared_kernel_note"] = (
            "the nodes share one kernel (one boot ID: containers on one host, as kind runs "
            "them): the sctp.ko invariant holds for the host, not per node"
        )
    if not run.nodes:
        raise KubeError("the cluster has no schedulable Linux node")


def _shared_kernel(nodes: list[dict[str, Any]], names: list[str]) -> bool:
    """True when two or more battery nodes report the same boot ID: one kernel under all of
    them (kind's nodes are containers on one host; a module loaded is loaded for all)."""
    boots = [
        str(((n.get("status") or {}).get("nodeInfo") or {}).get("bootID") or "")
        for n in nodes
        if _node_name(n) in names
    ]
    return len(boots) > 1 and all(boots) and len(set(boots)) == 1


def _node_name(node: dict[str, Any]) -> str:
    return str((node.get("metadata") or {}).get("name") or "")


def _is_linux(node: dict[str, Any]) -> bool:
    labels = (node.get("metadata") or {}).get("labels") or {}
    return bool(labels.get("kubernetes.io/os", "linux") == "linux")


def _battery_nodes(nodes: list[dict[str, Any]]) -> list[str]:
    """Schedulable Linux nodes, workers before control-plane nodes, at most MAX_NODES."""
    usable = []
    for node in nodes:
        name = _node_name(node)
        if not name:
            continue
        labels = (node.get("metadata") or {}).get("labels") or {}
        if (node.get("spec") or {}).get("unschedulable"):
            continue
        if not _is_linux(node):  # Windows has no SCTP
            continue
        control_plane = "node-role.kubernetes.io/control-plane" in labels
        usable.append((control_plane, name))
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
        probe.hostexec(node, "true")
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


def _detect_proxier(run: RunContext, probe: TestContext) -> None:
    """kube-proxy's mode, as upstream reads it, else from one mode's tables, else None.

    Upstream's ProxyMode asks `localhost:10249/proxyMode` from a host-network pod's own
    container; the battery does the same and reads the answer from the pod's log. When that
    says nothing (no kube-proxy, admission refused the pod), a probe service is looked up in
    the iptables, IPVS and nftables tables of a node: found in exactly one mode's tables,
    that is the mode. The mode the cluster was registered with is never taken for it.
    """
    fingerprint = run.report.fingerprint
    name = run.unique("proxy-mode")
    try:
        probe.create_pod(pods.proxy_mode_pod(name, run.spec.agnhost_image, run.nodes[0]))
        pod = probe.wait_pod(name, FINISHED_PHASES, run.spec.timeouts.pod_start)
        answer = probe.pod_log(name) if pod.status.phase == "Succeeded" else ""
        mode = nodeparse.proxy_mode(answer)
        fingerprint["proxy_mode_answer"] = answer.strip()[:60] or f"(pod {pod.status.phase})"
    except ApiException as exc:
        mode = None
        fingerprint["proxy_mode_answer"] = f"(not asked: {api_error_message(exc)})"
    except TestVerdict as exc:
        mode = None
        fingerprint["proxy_mode_answer"] = f"(not asked: {exc.reason})"
    if mode in PROXIERS:
        run.proxier_detected, fingerprint["proxier_source"] = mode, "proxyMode"
        return
    if run.node_access is not True:
        return
    modes = _modes_with_probe_service(run, probe)
    fingerprint["proxier_tables"] = modes
    if len(modes) == 1:
        run.proxier_detected, fingerprint["proxier_source"] = modes[0], "rules"


def _modes_with_probe_service(run: RunContext, probe: TestContext) -> list[str]:
    """The proxier modes whose node tables carry a fresh TCP probe service (TCP: a basic
    run must not need SCTP for this, and a cluster with the SCTP gate off still answers)."""
    labels = {"app": "proxier-probe"}
    try:
        probe.start_server(
            pods.pause_pod(
                "proxier-probe",
                run.spec.agnhost_image,
                [pods.port(8080, "TCP")],
                labels,
                run.nodes[0],
            )
        )
        service = probe.create_service(
            pods.service("proxier-probe", labels, 80, 8080, protocol="TCP")
        )
        probe.wait_endpoints("proxier-probe", "TCP")
        vip = service.spec.cluster_ip
        node = run.nodes[0]
        outputs = {
            "iptables": probe.node_output(node, "iptables-save -t nat"),
            "ipvs": probe.node_output(node, "ipvsadm -Ln"),
            "nftables": probe.node_output(node, "nft list ruleset"),
        }
    except (ApiException, TestVerdict, KubeError) as exc:
        run.report.fingerprint["proxier_tables_error"] = (
            api_error_message(exc) if isinstance(exc, ApiException) else str(exc)
        )
        return []
    return nodeparse.proxier_modes_with(vip, 80, "tcp", **outputs)


def _list_raw(run: RunContext, fn: Callable[..., object], *args: object) -> list[dict[str, Any]]:
    kube = run.kube
    return cni.items_of(json.loads(kube.call_raw(fn, *args) or b"{}"))


def _detect_cni(run: RunContext) -> None:
    """The CNI from its DaemonSets and mode ConfigMaps (kernel/cni.py, the one table): who
    does the pod network, who does policy, who programs Services; a mismatch with the
    registered plugin is recorded."""
    fingerprint, kube = run.report.fingerprint, run.kube
    try:
        daemonsets = _list_raw(run, kube.apps.list_daemon_set_for_all_namespaces)
    except (ApiException, KubeError, ValueError) as exc:
        message = api_error_message(exc) if isinstance(exc, ApiException) else str(exc)
        fingerprint["cni_detection_error"] = f"DaemonSets not listed: {message}"
        return
    namespaces = {"kube-system"}
    for ds in daemonsets:
        if cni.match_daemonset(ds) is not None:
            namespaces.add(str((ds.get("metadata") or {}).get("namespace") or "kube-system"))
    configmaps: list[dict[str, Any]] = []
    unread: list[str] = []
    for namespace in sorted(namespaces):
        try:
            configmaps += [
                cm
                for cm in _list_raw(run, kube.core.list_namespaced_config_map, namespace)
                if any(
                    str((cm.get("metadata") or {}).get("name") or "").startswith(name)
                    for name in cni.MODE_CONFIGMAPS
                )
            ]
        except (ApiException, KubeError, ValueError) as exc:
            message = api_error_message(exc) if isinstance(exc, ApiException) else str(exc)
            unread.append(f"{namespace}: {message}")
    if unread:
        fingerprint["cni_configmaps_error"] = "ConfigMaps not listed: " + "; ".join(unread)
    detection = cni.detect(daemonsets, configmaps, run.node_objects)
    fingerprint["cni"] = detection.as_dict()
    fingerprint["service_dataplane"] = detection.service_dataplane
    run.cni = detection
    if detection.daemonsets:
        fingerprint["cni_daemonsets"] = list(detection.daemonsets)
    detected = detection.label
    if detected is None:
        return
    fingerprint["cni_detected"] = detected
    if run.spec.plugin_slug not in detection.slugs():
        fingerprint["cni_mismatch"] = (
            f"the cluster runs {detected} "
            f"({_daemonset_words(detection.daemonsets) or '; '.join(detection.evidence)}), "
            f"registered as {run.spec.plugin_slug}"
        )


def _daemonset_words(where: list[str]) -> str:
    if not where:
        return ""
    return ("DaemonSet " if len(where) == 1 else "DaemonSets ") + ", ".join(where)


def _run_one(run: RunContext, test: BatteryTest) -> TestOutcome:
    outcome, namespace = _run_body(run, test)
    if namespace is not None:
        problem = run.delete_namespace(namespace)
        if problem:
            run.report.errors.append(problem)
            if RBAC_PREFIX in problem:
                # Objects stay behind on the cluster: the harness broke, whatever the test saw.
                outcome.reason = (
                    f"{problem} (the test itself ended {outcome.outcome}: {outcome.reason})"
                )
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
        if test.battery == "connectivity":
            # [Feature:SCTPConnectivity]: upstream's label skips these specs on clusters
            # without the feature, before any runtime skip of the spec's own.
            no_sctp = kernelsctp.skip_reason(run)
            if no_sctp:
                evidence.extend(run.kernel_sctp_evidence)
                own = test.skip_reason(run)
                return done("skipped", no_sctp + (f"; besides, {own}" if own else ""))
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
        basic = test.battery == "basic"
        check_module = basic and run.node_access is True
        upstream_nodes = test.module_nodes(run) if basic else None
        read = list(dict.fromkeys([*run.nodes, *(upstream_nodes or [])]))
        before, problem = ctx.read_modules(read) if check_module else (None, "")
        outcome, reason = _verdict(ctx, test)
        if basic:
            after, late = (
                ctx.read_modules(read) if check_module and not run.kube.unreachable else (None, "")
            )
            why = (
                run.node_access_reason if run.node_access is not True else "lsmod could not be read"
            )
            if upstream_nodes is not None:
                outcome, reason = invariant.upstream_module_verdict(
                    outcome,
                    reason,
                    before,
                    after,
                    upstream_nodes,
                    evidence,
                    why,
                    problem or late,
                )
            fact = invariant.invariant_fact(before, after, run.nodes)
            evidence.append(invariant.describe_fact(fact))
            run.invariant_tests[test.key] = fact
        return done(outcome, reason)
    except Cancelled:
        run.cancelled = True
        return done("error", "cancelled during this test")
    except ClusterUnreachable as exc:
        return done("error", str(exc))
    except ApiException as exc:
        kind = refusal_kind(exc)
        if kind == "admission":
            return done("skipped", admission_reason(exc))
        return done("error", rbac_reason(exc) if kind == "rbac" else _api_reason(exc))
    except KubeError as exc:
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
        if exc.status == 422 and sctp_refused(exc):
            ctx.run.feature_gate = "off"
            return (
                "skipped",
                f"feature gate off: the API refuses protocol SCTP ({api_error_message(exc)})",
            )
        kind = refusal_kind(exc)
        if kind == "admission":
            return "skipped", admission_reason(exc)
        if kind == "rbac":
            return "error", rbac_reason(exc)
        return "error", _api_reason(exc)


_SCTP_CAUSE = re.compile(r'(\S+\.protocol): Unsupported value: "SCTP"')


def sctp_refused(exc: ApiException) -> bool:
    """True when a 422's only causes are protocol fields refusing "SCTP" (the SCTPSupport
    gate off); a 422 about any other field is the battery's own bad object, not the gate."""
    try:
        body = json.loads(exc.body or "{}")
    except (TypeError, ValueError):
        body = {}
    if not isinstance(body, dict):
        body = {}
    causes = (body.get("details") or {}).get("causes") or []
    if causes:
        return all(
            str(c.get("field", "")).endswith(".protocol")
            and '"SCTP"' in str(c.get("message", ""))
            and c.get("reason") in (None, "FieldValueNotSupported")
            for c in causes
        )
    message = str(body.get("message") or exc.body or "")
    # Without causes, the message holds one error, or a bracketed list of several.
    return bool(_SCTP_CAUSE.search(message)) and "is invalid: [" not in message


def _api_reason(exc: BaseException) -> str:
    if isinstance(exc, ApiException) and refusal_kind(exc) == "rbac":
        return rbac_reason(exc)
    if isinstance(exc, ApiException):
        return f"Kubernetes API error: {api_error_message(exc)}"
    return str(exc)


def sweep_namespaces(
    api_client: k8s.ApiClient,
    live_run_ids: set[str],
    prefix: str = NAMESPACE_PREFIX,
    request_timeout: float = 30.0,
    still_live: Callable[[str], bool] | None = None,
    own: Callable[[str], bool] | None = None,
) -> list[str]:
    """Delete battery namespaces whose run is not live (a worker died mid-run); their names.

    `own(run-id label)`: whether the namespace is this deployment's to sweep (None: all are);
    another deployment's namespaces on the same cluster are left to it.

    `still_live(run-id label)` is asked again right before each deletion: a run that started
    after `live_run_ids` was read (on this or another registration of the same cluster) keeps
    its namespaces."""
    kube = Kube(api_client, request_timeout=request_timeout)
    live = {pods.dns_label(run_id) for run_id in live_run_ids}
    listing = kube.call(
        kube.core.list_namespace, label_selector=f"{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}"
    )
    deleted: list[str] = []
    for namespace in listing.items or []:
        meta = namespace.metadata
        name = meta.name if meta else None
        labels = (meta.labels if meta else None) or {}
        if not name or not name.startswith(prefix) or labels.get(RUN_ID_LABEL) in live:
            continue
        if namespace.status is not None and namespace.status.phase == "Terminating":
            continue
        if own is not None and not own(str(labels.get(RUN_ID_LABEL) or "")):
            continue
        if still_live is not None and still_live(str(labels.get(RUN_ID_LABEL) or "")):
            continue
        try:
            kube.call(kube.core.delete_namespace, name)
        except ApiException as exc:
            if exc.status != 404:
                raise
            continue
        deleted.append(name)
    return deleted
