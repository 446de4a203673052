"""What an e2e.log says: the cluster's server version and ginkgo's final summary."""

from __future__ import annotations

import re
from dataclasses import dataclass

_ANSI = re.compile(rb"\x1b\[[0-9;]*[A-Za-z]")
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
_RAN = re.compile(r"Ran (\d+) of (\d+) Specs? in ([\d.]+) seconds")
_RESULT = re.compile(
    r"(SUCCESS!|FAIL!)[^\n]*?(\d+) Passed \| (\d+) Failed(?: \| (\d+) Flaked)?"
    r" \| (\d+) Pending \| (\d+) Skipped"
)


@dataclass
class E2ELog:
    server_version: str | None
    summary: dict[str, object] | None


def parse_e2e_log(data: bytes) -> E2ELog:
    text = _ANSI.sub(b"", data).decode("utf-8", errors="replace")
    return E2ELog(server_version=_server_version(text), summary=_summary(text))


def _server_version(text: str) -> str | None:
    for pattern in _SERVER_VERSION_PATTERNS:
        match = pattern.search(text)
        if match:
            version = match.group(1)
            return version if version.startswith("v") else f"v{version}"
    return None


def _summary(text: str) -> dict[str, object] | None:
    ran = None
    for ran in _RAN.finditer(text):
        pass
    result = None
    for result in _RESULT.finditer(text):
        pass
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
    """"v1.30.2", "1.30", "v1.30.2-eks-abc" -> "v1.30"; None when unreadable."""
    if not version:
        return None
    match = re.match(r"\s*v?(\d+)\.(\d+)", version)
    return f"v{match.group(1)}.{match.group(2)}" if match else None
