"""Result files built in memory for the ingest tests."""

from __future__ import annotations

import gzip
import io
import re
import tarfile
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from xml.sax.saxutils import quoteattr

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
# A real v1.30 conformance JUnit (Apache-2.0, see tests/fixtures/e2e-junit/NOTICE.md), gzipped.
REAL_V130 = FIXTURES / "e2e-junit" / "conformance-v1.30-junit_01.xml.gz"
# Twelve days ago at 10:00: inside the evidence policy's age limit whenever the suite runs (a
# fixed date would age out of READINESS_FRESH_DAYS).
TIMESTAMP = (datetime.now(UTC) - timedelta(days=12)).strftime("%Y-%m-%dT10:00:00")

_SCTP_CASE = re.compile(
    rb'<testcase name="([^"]*(?:sctp|SCTP)[^"]*)" classname="([^"]*)" status="skipped" time="0">'
    rb"\s*<skipped message=\"skipped\"></skipped>\s*</testcase>"
)


def real_v130() -> bytes:
    return gzip.decompress(REAL_V130.read_bytes())


def with_sctp_status(document: bytes, status: str, only: str | None = None) -> bytes:
    """The real file with its SCTP testcases (or those whose name contains ``only``)
    rewritten as ginkgo v2 writes a passed / failed / timed-out spec."""

    def rewrite(match: re.Match[bytes]) -> bytes:
        name, classname = match.group(1), match.group(2)
        if only is not None and only.encode() not in name:
            return match.group(0)
        head = b'<testcase name="%s" classname="%s" status="%s" time="12.5">' % (
            name,
            classname,
            status.encode(),
        )
        if status == "passed":
            return head + b"</testcase>"
        if status == "skipped":
            return (
                head
                + b'<skipped message="skipped - Only supported for node OS distro [linux]"></skipped></testcase>'
            )
        return head + (
            b'<failure message="" type="%s">[FAILED] dial sctp 10.0.0.7:9090: connection refused'
            b"</failure></testcase>" % status.encode()
        )

    rewritten, count = _SCTP_CASE.subn(rewrite, document)
    assert count == 13, count
    return rewritten


def junit_v2(
    cases: list[tuple[str, str]],
    *,
    with_it: bool = True,
    timestamp: str | None = TIMESTAMP,
    properties: dict[str, str] | None = None,
) -> bytes:
    """A ginkgo v2 JUnit with (name, status) testcases."""
    rows = []
    for name, status in cases:
        full = f"[It] {name}" if with_it else name
        body = ""
        if status == "skipped":
            body = '<skipped message="skipped - not kubenet"></skipped>'
        elif status == "not_selected":  # ginkgo v2: filtered out by focus/skip
            status, body = "skipped", '<skipped message="skipped"></skipped>'
        elif status not in ("passed",):
            body = f'<failure message="boom" type="{status}">boom</failure>'
        rows.append(
            f'<testcase name={quoteattr(full)} classname="Kubernetes e2e suite" '
            f'status="{status}" time="1">{body}</testcase>'
        )
    stamp = f" timestamp={quoteattr(timestamp)}" if timestamp else ""
    props = "".join(
        f"<property name={quoteattr(k)} value={quoteattr(v)}></property>"
        for k, v in (properties or {}).items()
    )
    props = f"<properties>{props}</properties>" if props else ""
    testcases = "".join(rows)
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites tests="{len(rows)}">'
        f'<testsuite name="Kubernetes e2e suite" tests="{len(rows)}"{stamp}>{props}{testcases}</testsuite></testsuites>'
    ).encode()


def junit_v1(cases: list[tuple[str, str]]) -> bytes:
    """A ginkgo v1 JUnit: no status attribute, <skipped/> and <failure> children."""
    rows = []
    for name, status in cases:
        body = {
            "passed": "",
            # ginkgo v1.12+: an in-spec Skip() carries failureMessage(); unselected specs are bare.
            "skipped": '<skipped message="test/e2e/framework/skipper/skipper.go:72&#xA;Not kubenet&#xA;'
            'test/e2e/network/networking.go:204"></skipped>',
            "not_selected": "<skipped></skipped>",
        }.get(
            status,
            '<failure type="Failure">/go/src/k8s.io/kubernetes/test/e2e/network/service.go:123\nFailed to connect</failure>',
        )
        rows.append(
            f'<testcase name={quoteattr(name)} classname="Kubernetes e2e suite" '
            f'time="2.5">{body}</testcase>'
        )
    testcases = "".join(rows)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="Kubernetes e2e suite" '
        f'tests="{len(rows)}" failures="0" errors="0" time="10">{testcases}</testsuite>'
    ).encode()


def tar_gz(members: dict[str, bytes], *, top: str = "") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(f"{top}{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def tar_gz_with(info: tarfile.TarInfo, data: bytes = b"") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.addfile(info, io.BytesIO(data) if data else None)
    return buffer.getvalue()


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def gzip_bytes(data: bytes) -> bytes:
    return gzip.compress(data)


def e2e_log(server: str = "v1.30.2", passed: int = 402, failed: int = 0) -> bytes:
    verdict = "SUCCESS!" if failed == 0 else "FAIL!"
    return (
        f"I0501 14:20:29.000000      20 e2e.go:117] Starting e2e run on Ginkgo node 1\n"
        f"May  1 14:20:30.123: INFO: e2e test version: v1.30.0\n"
        f"May  1 14:20:30.124: INFO: kube-apiserver version: {server}\n"
        f"...\n"
        f"\x1b[1mRan {passed + failed} of 7197 Specs in 6096.539 seconds\x1b[0m\n"
        f"\x1b[38;5;10m\x1b[1m{verdict}\x1b[0m -- \x1b[38;5;10m\x1b[1m{passed} Passed\x1b[0m | "
        f"\x1b[38;5;9m\x1b[1m{failed} Failed\x1b[0m | \x1b[38;5;11m\x1b[1m0 Pending\x1b[0m | "
        f"\x1b[38;5;14m\x1b[1m{7197 - passed - failed} Skipped\x1b[0m\n"
        f"PASS\n"
    ).encode()


# --- Edited copies of real files (tests/domain/test_evidence_machine.py and others) -----------
#
# A vendor who wants a file to count edits it: flips the SCTP testcases' outcomes, takes the
# timestamp out (or puts a recent one in), marks it, re-times a testcase so that it is no longer
# the same run. Each helper changes one thing and leaves the rest of the real file's bytes as
# they were. `status` values are the testcases' as ginkgo v2 writes them, plus "not_selected"
# (left as the real file has it: skipped by focus, `<skipped message="skipped">`).

_V2_SCTP_SKIPPED = re.compile(
    rb'<testcase name="([^"]*(?:sctp|SCTP)[^"]*)" classname="([^"]*)" status="skipped" time="0">'
    rb"\s*<skipped message=\"skipped\"></skipped>\s*</testcase>"
)
_TESTSUITE_TAG = re.compile(rb"<testsuite\b[^>]*>")
_TIMESTAMP_ATTR = re.compile(rb'\stimestamp="[^"]*"')


def catalog_key_of(name: bytes | str) -> str | None:
    """The catalog test an upstream testcase name feeds (the ingest's own matching), or None."""
    from html import unescape

    from dashboard.domain.ingest.upstream_names import catalog_key

    text = name.decode() if isinstance(name, bytes) else name
    return catalog_key(unescape(text))


def _v2_case(name: bytes, classname: bytes, status: str, seconds: str = "12.5") -> bytes:
    if status == "not_selected":
        return (
            b'<testcase name="%s" classname="%s" status="skipped" time="0">'
            b'<skipped message="skipped"></skipped></testcase>' % (name, classname)
        )
    head = b'<testcase name="%s" classname="%s" status="%s" time="%s">' % (
        name,
        classname,
        status.encode(),
        seconds.encode(),
    )
    if status == "passed":
        return head + b"</testcase>"
    if status == "skipped":
        return head + b'<skipped message="skipped - no SCTP load balancer"></skipped></testcase>'
    if status == "error":
        return head + b'<error message="" type="panicked">panic: runtime error</error></testcase>'
    return head + (
        b'<failure message="" type="%s">[FAILED] dial sctp 10.0.0.7:9090: connection refused'
        b"</failure></testcase>" % status.encode()
    )


def with_sctp_statuses(document: bytes, status_of: dict[str, str], default: str = "") -> bytes:
    """A ginkgo v2 JUnit (the real v1.30 file's shape) whose unselected SCTP testcases are
    rewritten, each as the status `status_of` gives its catalog test (`default` for the others;
    "" leaves them as they are)."""

    def rewrite(match: re.Match[bytes]) -> bytes:
        key = catalog_key_of(match.group(1))
        status = status_of.get(key or "", default)
        if not status:
            return match.group(0)
        return _v2_case(match.group(1), match.group(2), status)

    return _V2_SCTP_SKIPPED.sub(rewrite, document)


def with_timestamp(document: bytes, stamp: str | None) -> bytes:
    """The JUnit with its (first) testsuite's `timestamp` replaced by `stamp` ("2026-11-20T10:00:00"),
    or removed (None): a file that does not say when its run happened."""
    match = _TESTSUITE_TAG.search(document)
    assert match is not None, "no <testsuite> in the document"
    tag = _TIMESTAMP_ATTR.sub(b"", match.group(0))
    if stamp is not None:
        tag = tag[:-1] + b' timestamp="%s">' % stamp.encode()
    return document[: match.start()] + tag + document[match.end() :]


def with_suite_properties(document: bytes, properties: dict[str, str]) -> bytes:
    """The JUnit with these testsuite properties added (e.g. the project's `emulated` = `true`)."""
    rows = "".join(
        f"<property name={quoteattr(k)} value={quoteattr(v)}></property>"
        for k, v in properties.items()
    ).encode()
    if b"<properties>" in document:
        return document.replace(b"<properties>", b"<properties>" + rows, 1)
    match = _TESTSUITE_TAG.search(document)
    assert match is not None, "no <testsuite> in the document"
    return (
        document[: match.end()]
        + b"<properties>"
        + rows
        + b"</properties>"
        + document[match.end() :]
    )


_PASSED_TIME = re.compile(
    rb'(<testcase name="[^"]*" classname="[^"]*" status="passed" time=")([0-9.]+)(")'
)


def retimed(document: bytes, salt: int) -> bytes:
    """The JUnit with its first passed testcase `salt` milliseconds longer: another e2e run to
    the content identity (the same names and outcomes, another time), nothing else changed."""
    if not salt:
        return document

    def bump(match: re.Match[bytes]) -> bytes:
        seconds = float(match.group(2)) + salt / 1000
        return match.group(1) + f"{seconds:.6f}".encode() + match.group(3)

    edited, count = _PASSED_TIME.subn(bump, document, count=1)
    assert count == 1, "no passed testcase to re-time"
    return edited
