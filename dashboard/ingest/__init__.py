"""Ingestion of vendors' e2e result files: JUnit, Sonobuoy and Hydrophone outputs.

Pure Python: no models, no views. The API calls :func:`ingest` and stores the
:class:`IngestReport` (``to_dict()``) with the submission; any :class:`IngestError` means
"refuse with ``.status`` and ``.message``, store nothing".
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import IO

from . import archives
from .e2elog import minor_of, parse_e2e_log
from .errors import UNSUPPORTED, IngestError
from .junit import JUnitResult, parse_junit
from .limits import Limits
from .report import CatalogResult, aggregate, count, qualifying, results_to_dict
from .upstream_names import guess_release

__all__ = ["CatalogResult", "IngestError", "IngestReport", "Limits", "ingest"]


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

    def qualifying(self, implements_network_policy: bool) -> tuple[bool, str]:
        return qualifying(self.results, implements_network_policy)

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "results": results_to_dict(self.results),
            "counts": dict(self.counts),
            "warnings": list(self.warnings),
            "testcase_count": self.testcase_count,
            "junit_totals": dict(self.junit_totals),
            "detected_kubernetes_version": self.detected_kubernetes_version,
            "e2e_summary": None if self.e2e_summary is None else dict(self.e2e_summary),
            "release": self.release,
        }


def ingest(
    data: bytes | IO[bytes],
    *,
    declared_kubernetes_version: str | None = None,
    max_bytes: int = 50 * 1024 * 1024,
    limits: Limits | None = None,
) -> IngestReport:
    """Read one submitted file, whatever its container; raise IngestError to refuse it."""
    limits = limits or Limits(max_bytes=max_bytes)
    raw = archives.read_bounded(data, limits)
    contents = _open(raw, limits)
    junit = JUnitResult()
    for path, document in contents.junit:
        junit.merge(parse_junit(io.BytesIO(document), label=path))
    return _report(contents, junit, declared_kubernetes_version)


def _open(raw: bytes, limits: Limits) -> archives.Contents:
    head = raw[:1024]
    if archives.is_gzip(head):
        stream = archives.BoundedGunzip(raw, limits.max_uncompressed)
        inner = stream.read(1024)
        rest = archives.Prefixed(inner, stream)
        if archives.is_tar(inner):
            return archives.read_tar(rest, limits, "tar")
        if archives.is_xml(inner):  # a gzipped junit_01.xml
            return _single_junit(rest.read(limits.max_member_bytes + 1), limits)
        raise IngestError(UNSUPPORTED)
    if archives.is_zip(head):
        return archives.read_zip(raw, limits)
    if archives.is_tar(head):
        return archives.read_tar(io.BytesIO(raw), limits, "tar")
    if archives.is_xml(head):
        return archives.Contents(kind="junit", junit=[("JUnit file", raw)])
    raise IngestError(UNSUPPORTED)


def _single_junit(document: bytes, limits: Limits) -> archives.Contents:
    if len(document) > limits.max_member_bytes:
        raise IngestError("the gzipped JUnit file expands beyond the size limit")
    return archives.Contents(kind="junit", junit=[("JUnit file", document)])


def _report(
    contents: archives.Contents, junit: JUnitResult, declared: str | None
) -> IngestReport:
    warnings: list[str] = []
    summary = None
    detected = contents.server_version
    if contents.e2e_log is not None:
        log = parse_e2e_log(contents.e2e_log)
        summary = log.summary
        detected = log.server_version or detected
    if detected and declared and minor_of(detected) and minor_of(declared):
        if minor_of(detected) != minor_of(declared):
            warnings.append(
                f"declared Kubernetes {declared} but the results come from a "
                f"{detected} server"
            )
    if summary is not None and "passed" in summary:
        for outcome in ("passed", "failed"):
            if summary[outcome] != junit.spec_totals[outcome]:
                warnings.append(
                    f"e2e.log reports {summary[outcome]} {outcome} specs but the JUnit "
                    f"has {junit.spec_totals[outcome]}"
                )
    for case in junit.cases:
        if case.key is None:
            warnings.append(f"SCTP test not in the catalog mapping, ignored: {case.name}")
    warnings = list(dict.fromkeys(warnings))
    results = aggregate(junit.cases)
    return IngestReport(
        kind=contents.kind,
        results=results,
        counts=count(results),
        warnings=warnings,
        testcase_count=junit.testcase_count,
        junit_totals=dict(junit.totals),
        detected_kubernetes_version=detected,
        e2e_summary=summary,
        release=guess_release(
            (case.name for case in junit.cases if case.key),
            prefer=minor_of(detected) or minor_of(declared),
        ),
    )
