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
