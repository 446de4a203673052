"""A battery run as an e2e-style JUnit file: the format vendors submit, written by us.

The file is what ``ingest`` reads back to the same catalog outcomes (a round trip the tests
check): one ``<testcase>`` per catalog result, named with an upstream name of that catalog
test (the catalog's first; the load balancer test, which has no upstream test, gets this
project's name from ``upstream_names.EXPORT_NAMES``), ginkgo v2's ``status`` and child
elements (``<failure>`` with the reason, ``<skipped message="skipped - reason">`` for a
skip, a bare ``<skipped message="skipped">`` for a test the run did not run), and a
testsuite whose ``timestamp`` is the run's finish (UTC, written without an offset as
ginkgo does) and whose properties say where it came from, ``emulated`` included: a run on
an emulated cluster stays marked as such wherever the file goes, and never counts.

A harness ``error`` has no JUnit form of its own; it is written as a failure of type
``error``, which the contract's aggregation reads as ``failed``.
"""

from __future__ import annotations

import re
from datetime import UTC
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from dashboard.domain.catalog import ALL_KEYS, CATALOG
from dashboard.domain.ingest.upstream_names import EXPORT_NAMES
from dashboard.domain.models import CatalogTest

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_SUITE = "Kubernetes e2e suite"


def _clean(text: object) -> str:
    return _CONTROL.sub("", str(text or ""))


def _attr(text: object) -> str:
    return quoteattr(_clean(text), {"\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


def upstream_name(key: str, catalog: dict[str, list[str]]) -> str:
    names = [n for n in catalog.get(key) or [] if n]
    return (
        names[0] if names else EXPORT_NAMES.get(key, f"[sig-network] [sctp-dashboard] {key}: sctp")
    )


def run_to_junit(run: Any) -> bytes:
    """The run (a ``dashboard.domain.models.Run``) as JUnit XML bytes."""

    catalog = dict(CatalogTest.objects.values_list("key", "upstream_names"))
    if not catalog:  # an unseeded database still exports: the catalog in code
        catalog = {entry["key"]: entry["upstream_names"] for entry in CATALOG}
    results = {r.test_key: r for r in run.results.all()}
    fingerprint = run.fingerprint or {}
    emulated = bool(
        run.emulated
        or fingerprint.get("emulated")
        or getattr(run.cluster, "emulated", False)
        or getattr(run.cluster, "lab", False)
    )
    finished = run.finished or run.started or run.created
    rows: list[str] = []
    counts = {"failed": 0, "skipped": 0}
    for key in ALL_KEYS:
        result = results.get(key)
        if result is None:
            continue
        outcome, reason = result.outcome, " ".join(_clean(result.reason).split())
        name = f"[It] {upstream_name(key, catalog)}"
        time = f"{result.duration or 0:.3f}"
        if outcome == "passed":
            body, status = "", "passed"
        elif outcome in ("failed", "error"):
            counts["failed"] += 1
            kind = "failed" if outcome == "failed" else "error"
            text = reason or outcome
            body = f"<failure message={_attr(text)} type={_attr(kind)}>[FAILED] {escape(text)}</failure>"
            status = "failed"
        elif outcome == "skipped":
            counts["skipped"] += 1
            text = reason or "skipped by the battery"
            body = (
                f"<skipped message={_attr('skipped - ' + text)}>[SKIPPED] {escape(text)}</skipped>"
            )
            status = "skipped"
        else:  # not_run: as ginkgo writes a spec the run did not select
            counts["skipped"] += 1
            body, status = '<skipped message="skipped"></skipped>', "skipped"
        rows.append(
            f"      <testcase name={_attr(name)} classname={_attr(_SUITE)} status={_attr(status)} "
            f"time={_attr(time)}>{body}</testcase>"
        )
    properties = {
        "emulated": "true" if emulated else "false",
        "source": "sctp-dashboard",
        "run_id": str(run.pk),
        "run_url": run.get_absolute_url(),
        "cluster": run.cluster.name,
        "plugin": run.plugin.slug,
        "plugin_version": run.plugin_version,
        "kubernetes_version": fingerprint.get("kubernetes_version") or run.kubernetes_version,
        "proxier": run.proxier,
        "proxier_detected": run.proxier_detected or fingerprint.get("proxier_detected") or "",
        "cni_detected": fingerprint.get("cni_detected") or "",
        "battery": run.battery,
    }
    props = "\n".join(
        f"        <property name={_attr(k)} value={_attr(v)}></property>"
        for k, v in properties.items()
    )
    duration = run.duration.total_seconds() if run.duration else 0.0
    stamp = finished.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S") if finished else ""
    document = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<testsuites tests="{len(rows)}" disabled="0" errors="0" failures="{counts["failed"]}" '
        f'time="{duration:.3f}">\n'
        f'  <testsuite name={_attr(_SUITE)} package="sctp-dashboard" tests="{len(rows)}" disabled="0" '
        f'skipped="{counts["skipped"]}" errors="0" failures="{counts["failed"]}" time="{duration:.3f}" '
        f"timestamp={_attr(stamp)}>\n"
        f"    <properties>\n{props}\n    </properties>\n"
        + "\n".join(rows)
        + "\n  </testsuite>\n</testsuites>\n"
    )
    return document.encode("utf-8")
