"""The `upstream` battery: upstream's own e2e.test of the cluster's minor, focused on its SCTP
specs, run by the worker that holds the run's lease (workers.runner.execute dispatches here).

What e2e.test writes is read like a vendor's file: its JUnit goes through the same ingest
(dashboard.domain.ingest: names to catalog keys, skip reasons, focus, dry run) and becomes the
run's results; the JUnit's bytes and the console log are kept with the run as its evidence.
Whatever keeps the run from being evidence (no binary for the minor, a crash, the time limit,
no JUnit, a suite that could not start on the cluster, a dry run) ends it in `error` with the
reason; its partial output is kept and no result is recorded (finish() marks every catalog test
not_run with that reason).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from dashboard.domain.catalog import Outcome, kubernetes_minor, newer_than_known
from dashboard.domain.ingest import IngestError, ingest
from dashboard.domain.ingest.upstream_names import RELEASE_NAMES, RELEASES
from dashboard.domain.models import Run
from dashboard.domain.runs import kubeconfig_of
from kernel import upstream as e2e
from kernel.battery import features
from kernel.kube import Kube, KubeError
from kernel.kubeconfig import KubeconfigError, api_client_from_kubeconfig, pinned_kubeconfig
from workers.runspec import battery_run_id, cluster_spec

log = logging.getLogger(__name__)

PROGRESS_EVERY_SECONDS = 1.0
TAIL_EVERY_SECONDS = 5.0
LIVE_TAIL_LINES = 40


@dataclass
class UpstreamResult:
    """One catalog test's result from upstream's specs (the runs.Result protocol)."""

    outcome: str
    reason: str = ""
    evidence: str = ""
    duration: float | None = None


@dataclass
class UpstreamReport:
    """The runs.Report protocol, plus `error`: why the run is no evidence ("" when it is)."""

    results: dict[str, UpstreamResult] = field(default_factory=dict)
    fingerprint: dict[str, Any] = field(default_factory=dict)
    error: str = ""


def spec_names(minor: int) -> list[str]:
    """Upstream's SCTP spec names of release 1.<minor> (dashboard/domain/ingest/upstream_names.py).

    A release newer than the table has the newest table's names: the focus ignores tags, and
    ingest reports a name it cannot map as a warning, so a renamed spec shows, never misleads.
    For 1.34 to 1.37 the real binaries' dry runs select exactly these names
    (tests/domain/ingest/test_e2e_dry_runs.py).
    """
    release = f"v1.{minor}"
    if release not in RELEASE_NAMES:
        newest = RELEASES[-1]
        if minor < int(newest.split(".")[1]):
            raise e2e.NoBinary(f"no upstream SCTP spec names are known for Kubernetes 1.{minor}")
        release = newest
    return list(RELEASE_NAMES[release])


def _save(run_id: int, **fields: Any) -> None:
    # By primary key, whatever the state: a cancelled run keeps its partial output too.
    Run.objects.filter(pk=run_id).update(**fields)


def run_upstream(run: Run, should_cancel: Callable[[], bool]) -> UpstreamReport:
    report = UpstreamReport()
    text = kubeconfig_of(run.cluster)
    try:
        version = _version(text)
    except (KubeconfigError, KubeError) as exc:
        report.error = f"the cluster's version could not be read: {exc}"
        return report
    git_version = str(version.get("gitVersion") or "").lstrip("v")
    report.fingerprint.update(
        {
            "kubernetes_version": git_version or None,
            "emulated": version.get("emulated") is True,
            "proxier_detected": None,  # upstream's specs do not demonstrate a proxier
            "battery": "upstream",
        }
    )
    minor = kubernetes_minor(git_version)
    if minor is None:
        report.error = "the cluster's GET /version answer carries no Kubernetes release"
        return report
    try:
        binary = e2e.binary_for(settings.E2E_DIR, minor)
        names = spec_names(minor)
    except e2e.NoBinary as exc:
        report.error = str(exc)
        _save(run.id, upstream={"minor": minor, "binary": "", "specs": []})
        return report
    try:
        pinned = pinned_kubeconfig(text)
    except KubeconfigError as exc:
        report.error = str(exc)
        return report
    state: dict[str, Any] = {
        "binary": f"v1.{minor}/{e2e.BINARY_NAME}",
        "minor": minor,
        "focus": e2e.focus_regex(names),
        "specs": [],
        "progress": e2e.Progress().as_dict(),
        "log_tail": [],
    }
    report.fingerprint["e2e_binary"] = state["binary"]
    _save(run.id, upstream=state)
    # The feature labels this cluster lacks, left out as upstream's own runners leave them out
    # (--ginkgo.skip), decided with the battery's own facts (kernel.battery.features).
    left = _left_out(run, text)
    state.update(features.as_state(left))
    state["skip"] = features.skip_regex(left.features)
    _save(run.id, upstream=state)
    tail: deque[str] = deque(maxlen=LIVE_TAIL_LINES)
    last_save = [0.0]

    def on_progress(progress: e2e.Progress) -> None:
        now = time.monotonic()
        # Every spec that starts is shown (one a spec); other changes at most once a second.
        started = progress.running and progress.running != state["progress"].get("running")
        if not started and now - last_save[0] < PROGRESS_EVERY_SECONDS:
            return
        last_save[0] = now
        state["progress"] = progress.as_dict()
        state["log_tail"] = list(tail)
        _save(run.id, upstream=state)

    def on_line(line: str) -> None:
        # A real spec can print for minutes without a progress change (a server pod that
        # never gets ready: 5 min): the live page's last lines follow it every few seconds.
        tail.append(line)
        now = time.monotonic()
        if now - last_save[0] >= TAIL_EVERY_SECONDS:
            last_save[0] = now
            state["log_tail"] = list(tail)
            _save(run.id, upstream=state)

    result = e2e.run_e2e(
        binary,
        pinned,
        names,
        time_limit=float(settings.E2E_TIME_LIMIT_SECONDS),
        should_cancel=should_cancel,
        on_progress=on_progress,
        on_line=on_line,
        skip=state["skip"],
    )
    state["progress"] = result.progress.as_dict()
    state["log_tail"] = list(tail)
    state["exit_code"] = result.exit_code
    report.error = _judge(result, state, report, git_version, left.features)
    _save(run.id, upstream=state, upstream_junit=result.junit, upstream_log=result.log)
    return report


def _left_out(run: Run, text: str) -> features.LeftOut:
    """What the cluster lacks, surveyed with the battery's own checks (nothing when it cannot
    be surveyed: the specs then run and speak for themselves)."""
    try:
        api = api_client_from_kubeconfig(text)
    except KubeconfigError as exc:
        return features.LeftOut(errors=[f"the cluster could not be surveyed: {exc}"])
    try:
        return features.survey(api, cluster_spec(run.cluster), battery_run_id(run.id))
    finally:
        api.close()


def _version(text: str) -> dict[str, Any]:
    api = api_client_from_kubeconfig(text)
    try:
        return Kube(api, tries=2, backoff=0.5).version_info()
    finally:
        api.close()


def _last_lines(result: e2e.E2EResult) -> str:
    return f"; its last lines:\n{result.tail}" if result.tail else "; it printed nothing"


def _judge(
    result: e2e.E2EResult,
    state: dict[str, Any],
    report: UpstreamReport,
    version: str,
    left_out: Mapping[str, str] | None = None,
) -> str:
    """Fills the report's results from the JUnit; answers why the run is no evidence ("": it is)."""
    limit = settings.E2E_TIME_LIMIT_SECONDS
    if result.start_error:
        return f"e2e.test could not be started: {result.start_error}"
    if result.cancelled:
        return "the run was cancelled: e2e.test and its process group were stopped"
    if result.timed_out:
        return (
            f"e2e.test ran past its time limit of {limit} s (E2E_TIME_LIMIT_SECONDS): its "
            f"process group was killed, nothing is counted{_last_lines(result)}"
        )
    if result.junit is None:
        return (
            f"e2e.test ended (exit status {result.exit_code}) without writing a JUnit file: "
            f"nothing is counted{_last_lines(result)}"
        )
    try:
        read = ingest(
            result.junit,
            declared_kubernetes_version=version,
            check_evidence=False,
            left_out=left_out,
        )
    except IngestError as exc:
        return f"upstream's JUnit file could not be read: {exc.message}"
    state["specs"] = [
        {"name": c.name, "outcome": c.outcome, "message": c.reason, "key": c.key}
        for c in read.cases
    ]
    provenance: Mapping[str, Any] = read.provenance
    dry = provenance.get("dry_run") or {}
    state["focus_recorded"] = provenance.get("focus")
    newer = newer_than_known(kubernetes_minor(version))
    state["warnings"] = ([newer] if newer else []) + read.warnings[:20]
    if isinstance(dry, Mapping) and dry.get("value") == "yes":
        return f"upstream's JUnit is no evidence: {dry.get('source')}"
    if read.suite_failures:
        why = result.suite_failure
        return (
            f"upstream's suite could not start on this cluster ({', '.join(read.suite_failures)} "
            f"failed{': ' + why if why else ''}): no spec ran, nothing is counted"
            f"{_last_lines(result)}"
        )
    verdicts = [r for r in read.results.values() if r.outcome in (Outcome.PASSED, Outcome.FAILED)]
    if result.exit_code not in (0, None) and not verdicts:
        return (
            f"e2e.test exited with status {result.exit_code} and no SCTP spec reached a "
            f"verdict: nothing is counted{_last_lines(result)}"
        )
    for key, catalog in read.results.items():
        reason = "; ".join(catalog.reasons)
        if catalog.outcome == Outcome.PASSED:
            reason = f"upstream: {len(catalog.upstream_names)} spec(s) passed"
        report.results[key] = UpstreamResult(
            outcome=catalog.outcome,
            reason=reason[:5000],
            evidence="\n".join(catalog.upstream_names),
        )
    return ""
