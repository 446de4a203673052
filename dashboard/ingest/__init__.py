"""Ingestion of vendors' e2e result files: JUnit, Sonobuoy and Hydrophone outputs.

Pure Python: no models, no views. The API calls :func:`ingest` and stores the
:class:`IngestReport` (``to_dict()``) with the submission; any :class:`IngestError` means
"refuse with ``.status`` and ``.message``, store nothing".

Bounded by construction (Limits): the file is read as a stream from its decompressor,
nothing in it is held whole, the work is under a time budget, and the warnings are
deduplicated and capped, so no upload of any shape makes the report (or the process) big.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import IO

from dashboard.policy import PluginFacts

from . import archives
from .e2elog import minor_of
from .errors import UNSUPPORTED, IngestError
from .junit import JUnitResult
from .limits import Deadline, Limits, Warnings
from .report import CatalogResult, aggregate, count, qualifying, ran, results_to_dict
from .upstream_names import guess_release

__all__ = ["UNSUPPORTED", "CatalogResult", "IngestError", "IngestReport", "Limits", "ingest"]

_FUTURE_SLACK = timedelta(days=1)


@dataclass
class IngestReport:
    kind: str  # junit | sonobuoy | hydrophone-tar | hydrophone-zip
    results: dict[str, CatalogResult]
    counts: dict[str, int]
    warnings: list[str] = field(default_factory=list)
    testcase_count: int = 0
    junit_totals: dict[str, int] = field(default_factory=dict)
    detected_kubernetes_version: str | None = None
    e2e_summary: dict[str, object] | None = None
    release: str | None = None
    run_at: datetime | None = None  # when the e2e run happened
    run_at_source: str = "upload"  # file | upload
    run_at_from: str | None = None  # which part of the file said so
    emulated: bool = False  # the file's testsuite property emulated = true
    proxier_detected: str | None = None  # what kube-proxy logged (Sonobuoy podlogs)
    cni_detected: str | None = None  # the CNI DaemonSet seen in the file

    def qualifying(self, plugin: PluginFacts | bool) -> tuple[bool, str]:
        return qualifying(self.results, plugin)

    def to_dict(self) -> dict[str, object]:
        """The stored validation report. Warnings are stored once, beside it."""
        return {
            "kind": self.kind,
            "results": results_to_dict(self.results),
            "counts": dict(self.counts),
            "testcase_count": self.testcase_count,
            "junit_totals": dict(self.junit_totals),
            "detected_kubernetes_version": self.detected_kubernetes_version,
            "e2e_summary": None if self.e2e_summary is None else dict(self.e2e_summary),
            "release": self.release,
            "run_at": self.run_at.isoformat() if self.run_at else None,
            "run_at_source": self.run_at_source,
            "run_at_from": self.run_at_from,
            "emulated": self.emulated,
            "proxier_detected": self.proxier_detected,
            "cni_detected": self.cni_detected,
        }


def ingest(
    data: bytes | IO[bytes],
    *,
    declared_kubernetes_version: str | None = None,
    declared_proxier: str | None = None,
    declared_plugin: str | None = None,
    max_bytes: int = 50 * 1024 * 1024,
    limits: Limits | None = None,
    received_at: datetime | None = None,
    check_evidence: bool = True,
) -> IngestReport:
    """Read one submitted file, whatever its container; raise IngestError to refuse it.

    ``declared_proxier`` / ``declared_plugin``: what the uploader says; a file that shows
    another (kube-proxy's log, the CNI DaemonSet) is refused with 422, as is a file in
    which no SCTP test ran. ``received_at``: the upload time, the run time of last resort.
    ``check_evidence=False`` skips those 422 checks (reading a file back to inspect it).
    """
    limits = limits or Limits(max_bytes=max_bytes)
    deadline = Deadline(limits.time_budget_seconds)
    source = archives.open_source(data, limits)
    contents = archives.read(source, limits, deadline)
    junit = JUnitResult()
    for _path, result in contents.junit:
        junit.merge(result)
    report = _report(
        contents, junit, declared_kubernetes_version, limits, received_at or datetime.now(UTC)
    )
    if check_evidence:
        _check_evidence(report, contents, junit, declared_proxier, declared_plugin)
    deadline.check()
    return report


def _report(
    contents: archives.Contents,
    junit: JUnitResult,
    declared: str | None,
    limits: Limits,
    received_at: datetime,
) -> IngestReport:
    warnings = Warnings(limits)
    summary = None
    detected = contents.server_version
    log = contents.e2e_log
    if log is not None:
        summary = log.summary
        detected = log.server_version or detected
    if detected and declared and minor_of(detected) and minor_of(declared):
        if minor_of(detected) != minor_of(declared):
            warnings.add(
                f"declared Kubernetes {declared} but the results come from a {detected} server"
            )
    if summary is not None and "passed" in summary:
        for outcome in ("passed", "failed"):
            if summary[outcome] != junit.spec_totals[outcome]:
                warnings.add(
                    f"e2e.log reports {summary[outcome]} {outcome} specs but the JUnit "
                    f"has {junit.spec_totals[outcome]}"
                )
    if junit.truncated_names:
        warnings.add(
            f"{junit.truncated_names} testcase name(s) longer than {limits.max_name_chars} "
            "characters were cut to that length before matching"
        )
    for case in junit.cases:
        if case.key is None:
            warnings.add(f"SCTP test not in the catalog mapping, ignored: {case.name}")
    run_at, source, origin = _run_time(contents, junit, received_at, warnings)
    results = aggregate(junit.cases)
    return IngestReport(
        kind=contents.kind,
        results=results,
        counts=count(results),
        warnings=warnings.as_list(),
        testcase_count=junit.testcase_count,
        junit_totals=dict(junit.totals),
        detected_kubernetes_version=detected,
        e2e_summary=summary,
        release=guess_release(
            (case.name for case in junit.cases if case.key),
            prefer=minor_of(detected) or minor_of(declared),
        ),
        run_at=run_at,
        run_at_source=source,
        run_at_from=origin,
        emulated=junit.emulated,
        proxier_detected=_one(contents.proxiers) or _property(junit, "proxier_detected"),
        cni_detected=_one(contents.cnis) or _property(junit, "cni_detected"),
    )


def _run_time(
    contents: archives.Contents, junit: JUnitResult, received_at: datetime, warnings: Warnings
) -> tuple[datetime, str, str | None]:
    """Contract (evidence policy, age): JUnit testsuite@timestamp, e2e.log, Sonobuoy
    metadata; the upload time only when the file has none, with a warning."""
    candidates = [
        (junit.run_at, "JUnit testsuite timestamp"),
        (contents.e2e_log.run_at if contents.e2e_log else None, "e2e.log"),
        (contents.sonobuoy_run_at, "Sonobuoy metadata"),
    ]
    for when, origin in candidates:
        if when is None:
            continue
        if when > received_at + _FUTURE_SLACK:
            warnings.add(
                f"the {origin} says the run happened in the future ({when.isoformat()}): ignored"
            )
            continue
        return when, "file", origin
    if junit.bad_timestamps:
        warnings.add("the JUnit testsuite timestamp is not a readable date")
    warnings.add(
        "the file does not say when the e2e run happened (no JUnit testsuite timestamp, "
        "e2e.log time or Sonobuoy metadata): its age counts from the upload"
    )
    return received_at, "upload", None


def _check_evidence(
    report: IngestReport,
    contents: archives.Contents,
    junit: JUnitResult,
    declared_proxier: str | None,
    declared_plugin: str | None,
) -> None:
    """422 for a readable file that is no evidence (contract, POST submissions/)."""
    if not ran(report.results):
        counts = report.counts
        raise IngestError(
            "no SCTP test ran in this file: "
            f"{counts['skipped']} catalog test(s) skipped, {counts['not_run']} not run "
            "(absent, or not selected by the run's focus/skip); "
            "a submission needs at least one SCTP test that passed or failed",
            422,
        )
    proxiers = set(contents.proxiers)
    if prop := _property(junit, "proxier_detected"):
        proxiers.add(prop)
    if declared_proxier and proxiers - {declared_proxier}:
        shown = ", ".join(sorted(proxiers))
        raise IngestError(
            f"the file shows kube-proxy running the {shown} proxier, but the submission "
            f"declares {declared_proxier}",
            422,
        )
    cnis = set(contents.cnis)
    if prop := _property(junit, "cni_detected"):
        cnis.add(prop)
    if declared_plugin and cnis - {declared_plugin}:
        shown = ", ".join(sorted(cnis))
        raise IngestError(
            f"the file shows the cluster running {shown} as its CNI, but the submission "
            f"is for {declared_plugin}",
            422,
        )


def _one(values: set[str]) -> str | None:
    return ",".join(sorted(values)) if values else None


def _property(junit: JUnitResult, name: str) -> str | None:
    """A testsuite property the project's export writes; a DaemonSet name becomes its slug."""
    value = junit.properties.get(name, "").strip().lower()
    if not value or value in ("none", "null"):
        return None
    return _cni_slug(value) if name == "cni_detected" else value


def _cni_slug(value: str) -> str | None:
    """The plugin slug a recorded CNI names (a slug, a DaemonSet or pod name); None when it
    names none we know, so an unfamiliar spelling never refuses a file by itself."""
    slugs = set(archives.CNI_DAEMONSETS.values())
    if value in slugs:
        return value
    for daemonset, slug in archives.CNI_DAEMONSETS.items():
        if value == daemonset or value.startswith(daemonset + "-"):
            return slug
    found = [slug for slug in slugs if slug in value]
    return found[0] if len(found) == 1 else None
