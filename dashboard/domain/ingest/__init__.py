"""Ingestion of vendors' e2e result files: JUnit, Sonobuoy and Hydrophone outputs.

Pure Python: no models, no views. The API calls :func:`ingest` and stores the
:class:`IngestReport` (``to_dict()``) with the submission; any :class:`IngestError` means
"refuse with ``.status`` and ``.message``, store nothing".

Bounded by construction (Limits): the file is read as a stream from its decompressor,
nothing in it is held whole, the work is under a time budget, and the warnings are
deduplicated and capped, so no upload of any shape makes the report (or the process) big.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

from dashboard.domain.catalog import kubernetes_minor, newer_than_known
from dashboard.domain.ingest import archives, identity, provenance
from dashboard.domain.ingest.cluster_facts import cni_for, known_slugs
from dashboard.domain.ingest.e2elog import minor_of
from dashboard.domain.ingest.errors import UNSUPPORTED, IngestError
from dashboard.domain.ingest.junit import NOT_SELECTED, Case, JUnitResult
from dashboard.domain.ingest.limits import Deadline, Limits, Warnings
from dashboard.domain.ingest.report import (
    CatalogResult,
    aggregate,
    count,
    qualifying,
    ran,
    results_to_dict,
)
from dashboard.domain.ingest.upstream_names import CATALOG_KEYS, guess_release
from dashboard.domain.policy import PluginFacts

__all__ = ["UNSUPPORTED", "CatalogResult", "IngestError", "IngestReport", "Limits", "ingest"]


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
    run_at: datetime | None = None  # when the e2e run happened; None when the file does not say
    run_at_source: str = ""  # file | "" (not in the file)
    run_at_from: str | None = None  # which part of the file said so
    emulated: bool = False  # the file's testsuite property emulated = true
    proxier_detected: str | None = None  # what the archive shows of kube-proxy's mode
    cni_detected: str | None = None  # the CNI the archive shows
    content_id: str = ""  # the run's identity (dashboard.domain.ingest.identity)
    near_id: str = ""  # the run without its outcomes: same start, nodes and testcases
    suite_key: str = ""  # near_id without the hosts: recognises this project's own exports
    properties: dict[str, str] = field(default_factory=dict)  # the JUnit suite properties
    provenance: dict[str, object] = field(default_factory=dict)
    # The SCTP testcases one by one (a run page lists upstream's specs), and the suite-level
    # nodes that failed (a suite whose setup failed ran nothing).
    cases: list[Case] = field(default_factory=list)
    suite_failures: list[str] = field(default_factory=list)

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
            "provenance": dict(self.provenance),
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
    left_out: Mapping[str, str] | None = None,
) -> IngestReport:
    """Read one submitted file, whatever its container; raise IngestError to refuse it.

    The file's word wins over the submitter's (contract: Evidence policy): the release, run
    time, plugin and proxier are read from the file wherever it says them, and a declared
    value the file contradicts refuses it with 422, as does a Ginkgo dry run, a run time
    more than 10 minutes in the future and a file in which no SCTP test ran.
    ``received_at``: the upload time (the future check's reference; never a run time).
    ``check_evidence=False`` skips the 422 checks (reading a file back to inspect it).
    ``left_out``: feature labels the runner left out with `--ginkgo.skip`, each with its
    reason (the `upstream` battery's decision, kernel.battery.features): ginkgo writes a spec
    its skip excluded as it writes one its focus did not select (status="skipped",
    `<skipped message="skipped">`), so an unselected SCTP spec that carries such a label
    becomes `skipped` with that reason instead of `not_run`.
    """
    limits = limits or Limits(max_bytes=max_bytes)
    deadline = Deadline(limits.time_budget_seconds)
    source = archives.open_source(data, limits)
    contents = archives.read(source, limits, deadline)
    junit = JUnitResult()
    for _path, result in contents.junit:
        junit.merge(result)
    try:
        report = _report(
            contents,
            junit,
            declared_kubernetes_version if check_evidence else None,
            declared_plugin if check_evidence else None,
            declared_proxier if check_evidence else None,
            limits,
            received_at or datetime.now(UTC),
            check_evidence,
            left_out or {},
        )
        if check_evidence:
            _check_evidence(report, contents, junit)
    except IngestError as exc:
        # What identifies the run, for the caller to recognise a known one (the project's
        # own export) even in a file refused for what it claims.
        when = provenance.first_time(contents, junit, contents.scan)
        exc.identity = Identity(
            kind=contents.kind,
            properties=dict(contents.scan.properties),
            run_at=when,
            suite_key=identity.near_id(contents.scan, when.isoformat(), []) if when else "",
        )
        raise
    deadline.check()
    return report


@dataclass
class Identity:
    """The few facts that recognise a run (IngestError.identity, IngestReport alike)."""

    kind: str
    properties: dict[str, str]
    run_at: datetime | None
    suite_key: str


def _report(
    contents: archives.Contents,
    junit: JUnitResult,
    declared: str | None,
    declared_plugin: str | None,
    declared_proxier: str | None,
    limits: Limits,
    received_at: datetime,
    check: bool,
    left_out: Mapping[str, str],
) -> IngestReport:
    warnings = Warnings(limits)
    scan = contents.scan
    summary = None
    detected = contents.server_version
    log = contents.e2e_log
    if log is not None:
        summary = log.summary
        detected = log.server_version or detected
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
    sctp_names = [case.name for case in junit.cases if case.key]
    release_fact, names_range = provenance.release_of(contents, scan, sctp_names, declared)
    if names_range and release_fact.value and not release_fact.source.startswith("declared"):
        if not provenance._within(minor_of(release_fact.value) or "", names_range):
            warnings.add(
                f"the file says Kubernetes {release_fact.value} ({release_fact.source}) but "
                f"its SCTP test names are those of {names_range}"
            )
    if sctp_names and (newer := newer_than_known(kubernetes_minor(release_fact.value))):
        warnings.add(f"{newer} ({release_fact.source})")
    run_at, run_fact, started = provenance.run_time(contents, junit, scan, received_at)
    if run_at is None:
        if junit.bad_timestamps:
            warnings.add("the JUnit testsuite timestamp is not a readable date")
        warnings.add(
            "the file does not say when the e2e run happened (no JUnit testsuite timestamp, "
            "Ginkgo report entry, e2e.log time or Sonobuoy meta/run.log): it is not fresh "
            "until a maintainer enters the run date when verifying"
        )
    try:
        dry = provenance.dry_run(contents, junit, scan, durations=not check)
    except IngestError as exc:
        if check:
            raise
        dry = provenance.Fact("yes", exc.message)
    if left_out:
        junit.cases = [_left_out(case, left_out) for case in junit.cases]
    results = aggregate(junit.cases)
    focus, skip = provenance.focus_and_skip(contents, scan)
    if check and not ran(results):
        _no_sctp_ran(results, junit, release_fact.value, focus, skip)
    plugin_fact = provenance.plugin_of(contents, _property(junit, "cni_detected"), declared_plugin)
    proxier_fact = provenance.proxier_of(
        contents, _property(junit, "proxier_detected"), declared_proxier
    )
    cid, nid, host = provenance.identity(scan, contents, started)
    prov = provenance.Provenance(
        release=release_fact,
        run_at=run_at,
        run_at_fact=run_fact,
        plugin=plugin_fact,
        proxier=proxier_fact,
        dry_run=dry,
        content_id=cid,
        near_id=nid,
        host_facts=host,
        focus=focus,
        skip=skip,
        names_release=names_range,
    )
    file_release = None if release_fact.source.startswith("declared") else release_fact.value
    cnis = set(contents.cnis) | set(contents.cluster.cnis)
    proxiers = set(contents.proxiers) | set(contents.cluster.proxier_modes)
    return IngestReport(
        kind=contents.kind,
        results=results,
        counts=count(results),
        warnings=warnings.as_list(),
        testcase_count=junit.testcase_count,
        junit_totals=dict(junit.totals),
        detected_kubernetes_version=file_release or detected,
        e2e_summary=summary,
        release=guess_release(sctp_names, prefer=minor_of(file_release) or minor_of(declared)),
        run_at=run_at,
        run_at_source="file" if run_at else "",
        run_at_from=run_fact.source.removeprefix("from the ").removeprefix("from ")
        if run_at
        else None,
        emulated=junit.emulated,
        proxier_detected=_one(proxiers) or _property(junit, "proxier_detected"),
        cni_detected=_one(cnis) or _property(junit, "cni_detected"),
        content_id=cid,
        near_id=nid,
        suite_key=identity.near_id(scan, started, []) if started else "",
        properties=dict(scan.properties),
        provenance=prov.as_dict(),
        cases=list(junit.cases),
        suite_failures=list(junit.suite_failures),
    )


def _left_out(case: Case, left_out: Mapping[str, str]) -> Case:
    """An unselected spec the runner's skip left out by a label it carries: skipped, with the
    reason (every matching label's, in order)."""
    if case.outcome != "not_run" or case.reason != NOT_SELECTED:
        return case
    reasons = [why for label, why in left_out.items() if label in case.name]
    if not reasons:
        return case
    return dataclasses.replace(case, outcome="skipped", reason="; ".join(reasons))


def _check_evidence(report: IngestReport, contents: archives.Contents, junit: JUnitResult) -> None:
    """After the file's facts: passes no real run can have (a Ginkgo dry run's durations)."""
    provenance.dry_run(contents, junit, contents.scan)


def _no_sctp_ran(
    results: dict[str, CatalogResult],
    junit: JUnitResult,
    release: str | None,
    focus: str | None,
    skip: str | None,
) -> None:
    """422 for a readable file in which no SCTP test ran: the answer says what it found, the
    run's focus and skip, and the commands that would produce qualifying evidence."""
    found = [
        {
            "name": case.name,
            "catalog_test": str(case.key) if case.key else None,
            "state": _state(case.outcome, case.reason),
        }
        for case in junit.cases
    ][:50]
    absent = [str(key) for key in CATALOG_KEYS if not results[key].upstream_names]
    cmds = provenance.commands(release)
    if found:
        states: dict[str, int] = {}
        for item in found:
            kind = str(item["state"]).split(":")[0]
            states[kind] = states.get(kind, 0) + 1
        what = (
            f"{len(found)} SCTP testcase(s) found, none ran ("
            + ", ".join(f"{n} {k}" for k, n in sorted(states.items()))
            + "): "
            + "; ".join(f"{item['name']} [{item['state']}]" for item in found[:8])
            + ("; …" if len(found) > 8 else "")
        )
    else:
        what = "the file has no SCTP testcase at all"
    run_scope = f"the run's focus: {focus or 'none recorded'}; skip: {skip or 'none recorded'}"
    tags = f" (tagged {cmds['tags']})" if cmds["tags"] else ""
    conformance_only = bool(focus) and "conformance" in str(focus).lower()
    raise IngestError(
        f"no SCTP test ran in this file: {what}. Catalog tests absent from the file: "
        f"{', '.join(absent) or 'none'}. {run_scope}. A submission needs at least one SCTP "
        f"test that passed or failed; to run upstream's SCTP tests{tags}: {cmds['sonobuoy']} "
        f"or {cmds['hydrophone']}",
        422,
        {
            "sctp_testcases": found,
            "absent": absent,
            "focus": focus,
            "skip": skip,
            "commands": {"sonobuoy": cmds["sonobuoy"], "hydrophone": cmds["hydrophone"]},
            "steps": cmds["steps"],
            "summary": _no_sctp_summary(found, conformance_only),
            "conformance_only": conformance_only,
        },
    )


def _no_sctp_summary(found: list[dict[str, Any]], conformance: bool) -> str:
    """The refusal in one line, in words: what is wrong with the file (issue 39)."""
    if not found:
        return "This file has none of upstream's SCTP tests, so it can never count."
    n = len(found)
    tests = f"{n} SCTP test{'s' if n != 1 else ''}"
    if conformance:
        return (
            f"A conformance-only run: upstream's SCTP tests are not conformance tests, so none "
            f"of its {tests} ran and it can never count."
        )
    if all(str(item["state"]) == "not selected" for item in found):
        return f"The run's focus or skip left out all {tests} it lists, so none of them ran."
    return f"None of its {tests} passed or failed: they were skipped or not run."


def _state(outcome: str, reason: str) -> str:
    if outcome == "not_run":
        return "not selected" if "focus/skip" in reason else f"not run: {reason}"
    if outcome == "skipped":
        return f"skipped: {reason}" if reason else "skipped"
    return outcome


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

    slugs = known_slugs()
    if value in slugs:
        return value
    if slug := cni_for(value, {}) or cni_for(value.rsplit("-", 1)[0], {}):
        return slug
    found = [slug for slug in slugs if slug in value]
    return found[0] if len(found) == 1 else None
