"""What an e2e.log says: the cluster's server version, ginkgo's final summary, its time.

Read line by line from a stream (lines cut at 64 KB), so a large log costs no memory.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from dashboard.domain.ingest.errors import IngestError
from dashboard.domain.ingest.limits import Deadline, Limits, Readable

# Forms seen in e2e.test / ginkgo output over the years:
#   "INFO: kube-apiserver version: v1.30.2"     (framework, v1.19 on)
#   "Kubernetes server version: v1.30.2"
#   "Server Version: v1.30.2"                   (kubectl version, newer)
#   "Server Version: version.Info{Major:"1", Minor:"30", GitVersion:"v1.30.2", ...}"
_VERSION = r"(v?\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.+-]*)?)"
_SERVER_VERSION_PATTERNS = (
    re.compile(r"kube-apiserver version:\s*\"?" + _VERSION, re.I),
    re.compile(r"kubernetes server version:\s*\"?" + _VERSION, re.I),
    re.compile(r"server version:\s*version\.Info\{[^}]*GitVersion:\"" + _VERSION, re.I),
    re.compile(r"server version:\s*\"?" + _VERSION, re.I),
)
# The e2e suite's own build ("e2e test version: v1.21.1", framework v1.1x on), and the
# DaemonSets the framework waits for before the suite ("… in daemonset 'calico-node' …").
_E2E_VERSION = re.compile(r"e2e test version:\s*\"?" + _VERSION, re.I)
_DAEMONSET = re.compile(r"in daemonset '([a-z0-9][a-z0-9.-]{0,252})'")
_MAX_DAEMONSETS = 100
_RAN = re.compile(r"Ran (\d+) of (\d+) Specs? in ([\d.]+) seconds")
_RESULT = re.compile(
    r"(SUCCESS!|FAIL!)[^\n]*?(\d+) Passed \| (\d+) Failed(?: \| (\d+) Flaked)?"
    r" \| (\d+) Pending \| (\d+) Skipped"
)


# ginkgo v2 stamps its steps and nodes: "STEP: Creating a kubernetes client @ 05/01/24 14:20:30.123".
_GINKGO_TIME = re.compile(r" @ (\d\d)/(\d\d)/(\d\d) (\d\d):(\d\d):(\d\d)")
_MAX_LINE = 64 * 1024
_CHUNK = 1024 * 1024


@dataclass
class E2ELog:
    server_version: str | None
    summary: dict[str, object] | None
    run_at: datetime | None = None  # the first ginkgo timestamp
    e2e_version: str | None = None  # the e2e suite's own version
    daemonsets: frozenset[str] = frozenset()  # DaemonSets the framework waited for


def parse_e2e_log(
    data: bytes | Readable, limits: Limits | None = None, deadline: Deadline | None = None
) -> E2ELog:
    limits = limits or Limits()
    versions: dict[int, str] = {}  # pattern index -> first match: the patterns' order wins
    ran = result = None
    run_at = None
    e2e_version: str | None = None
    daemonsets: set[str] = set()
    for line in _lines(data, limits, deadline):
        if "\x1b" in line:
            line = _ANSI_TEXT.sub("", line)
        if len(versions) < len(_SERVER_VERSION_PATTERNS):
            for index, pattern in enumerate(_SERVER_VERSION_PATTERNS):
                if index not in versions and (match := pattern.search(line)):
                    versions[index] = match.group(1)
        if "Specs" in line and (match := _RAN.search(line)):
            ran = match
        if "Passed" in line and (match := _RESULT.search(line)):
            result = match
        if run_at is None and " @ " in line and (match := _GINKGO_TIME.search(line)):
            run_at = _ginkgo_time(match)
        if "daemonset '" in line and len(daemonsets) < _MAX_DAEMONSETS:
            daemonsets.update(_DAEMONSET.findall(line))
        if e2e_version is None and "e2e test version" in line:
            if match := _E2E_VERSION.search(line):
                e2e_version = _v(match.group(1))
    version = versions[min(versions)] if versions else None
    return E2ELog(
        server_version=_v(version) if version else None,
        summary=_summary(ran, result),
        run_at=run_at,
        e2e_version=e2e_version,
        daemonsets=frozenset(daemonsets),
    )


def _v(version: str) -> str:
    return version if version.startswith("v") else f"v{version}"


_ANSI_TEXT = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _lines(data: bytes | Readable, limits: Limits, deadline: Deadline | None) -> Iterator[str]:
    """Decoded lines, each at most _MAX_LINE bytes; the log's real size is bounded."""
    if isinstance(data, (bytes, bytearray)):
        data = io.BytesIO(data)
    rest = b""
    total = 0
    while True:
        chunk = data.read(_CHUNK)
        if deadline is not None:
            deadline.check()
        if not chunk:
            break
        total += len(chunk)
        if total > limits.max_member_bytes:
            raise IngestError(
                f"e2e.log refused: it is larger than {limits.max_member_bytes >> 20} MB"
            )
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()[-_MAX_LINE:]
        for line in lines:
            yield line[:_MAX_LINE].decode("utf-8", errors="replace")
    if rest:
        yield rest.decode("utf-8", errors="replace")


def _ginkgo_time(match: re.Match[str]) -> datetime | None:
    month, day, year, hour, minute, second = (int(g) for g in match.groups())
    try:
        return datetime(2000 + year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        return None


def _summary(ran: re.Match[str] | None, result: re.Match[str] | None) -> dict[str, object] | None:
    if ran is None and result is None:
        return None
    summary: dict[str, object] = {}
    if ran is not None:
        summary.update(ran=int(ran.group(1)), total=int(ran.group(2)), seconds=float(ran.group(3)))
    if result is not None:
        summary.update(
            success=result.group(1) == "SUCCESS!",
            passed=int(result.group(2)),
            failed=int(result.group(3)),
            flaked=int(result.group(4) or 0),
            pending=int(result.group(5)),
            skipped=int(result.group(6)),
        )
    return summary


def minor_of(version: str | None) -> str | None:
    """ "v1.30.2", "1.30", "v1.30.2-eks-abc" -> "v1.30"; None when unreadable."""
    if not version:
        return None
    match = re.match(r"\s*v?(\d+)\.(\d+)", version)
    return f"v{match.group(1)}.{match.group(2)}" if match else None
