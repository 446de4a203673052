"""The real Sonobuoy tarballs (tests/fixtures/sonobuoy, see its NOTICE.md) and edited copies
of them, built in memory as a vendor who wanted them to count would build them."""

from __future__ import annotations

import gzip
import io
import re
import tarfile
import time
from pathlib import Path

SONOBUOY = Path(__file__).resolve().parents[2] / "fixtures" / "sonobuoy"
V121 = "results-4-e2e-failures.tar.gz"  # kind, v1.21.1, 17 SCTP testcases not selected
DRY_RUN = "testResultsOutput-dryrun.tar.gz"  # v1.14.2, a Ginkgo dry run
V010 = "results-0.10.tar.gz"  # Sonobuoy 0.10 layout, v1.8.4, calico
V121_JUNIT = "plugins/e2e/results/global/junit_01.xml"


def real(name: str) -> bytes:
    return (SONOBUOY / name).read_bytes()


def members(data: bytes) -> dict[str, bytes]:
    """Every regular member's bytes, in archive order (directories are re-created on pack)."""
    out: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        for info in archive:
            if info.isfile():
                extracted = archive.extractfile(info)
                assert extracted is not None
                out[info.name] = extracted.read()
    return out


def repack(files: dict[str, bytes], mtime: float | None = None) -> bytes:
    """A tar.gz of these members, every date today's (or ``mtime``): a re-packed archive."""
    stamp = time.time() if mtime is None else mtime
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(content), stamp
            archive.addfile(info, io.BytesIO(content))
    return gzip.compress(buffer.getvalue())


_V1_SCTP_CASE = re.compile(
    rb'(<testcase name="([^"]*(?:sctp|SCTP)[^"]*)" classname="[^"]*" time=")0(">)\s*<skipped></skipped>\s*(</testcase>)'
)


def flip_sctp(junit: bytes, status: str = "passed", seconds: str = "31.4") -> bytes:
    """A ginkgo v1 JUnit (the v1.21.1 file's shape) with its unselected SCTP testcases
    rewritten as passed (or failed) specs that took ``seconds``."""

    def rewrite(match: re.Match[bytes]) -> bytes:
        head = match.group(1) + seconds.encode() + match.group(3)
        if status == "failed":
            head += b'\n          <failure type="Failure">dial sctp: connection refused</failure>'
        return head + b"\n      " + match.group(4)

    edited, count = _V1_SCTP_CASE.subn(rewrite, junit)
    assert count >= 13, count
    return edited


def add_sctp_passes(junit: bytes, names: list[str], seconds: str = "0") -> bytes:
    """A JUnit without SCTP testcases (v1.8, v1.14) given these as passed specs."""
    from xml.sax.saxutils import quoteattr

    cases = b"".join(
        f'      <testcase name={quoteattr(n)} classname="Kubernetes e2e suite" '
        f'time="{seconds}"></testcase>\n'.encode()
        for n in names
    )
    return junit.replace(b"</testsuite>", cases + b"</testsuite>", 1)


def edited(
    name: str, status: str = "passed", *, add: list[str] | None = None, **replace: bytes | None
) -> bytes:
    """The real tarball with its e2e JUnit's SCTP testcases flipped to ``status`` (or, for a
    file without any, ``add`` given as passes), re-packed today; ``replace`` maps member
    paths to new bytes (None drops the member)."""
    files = members(real(name))
    junit_path = next(p for p in files if re.search(r"plugins/e2e/results/(global/)?junit", p))
    if add is not None:
        files[junit_path] = add_sctp_passes(files[junit_path], add)
    else:
        files[junit_path] = flip_sctp(files[junit_path], status)
    for path, content in replace.items():
        if content is None:
            files.pop(path, None)
        else:
            files[path] = content
    return repack(files)
