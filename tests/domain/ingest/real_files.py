"""The real Sonobuoy tarballs (tests/fixtures/sonobuoy, see its NOTICE.md) and edited copies
of them, built in memory as a vendor who wanted them to count would build them."""

from __future__ import annotations

import gzip
import io
import json
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


# --- Edited copies with one thing changed each (tests/domain/test_evidence_machine.py) -------

V121_SERVER_VERSION = "serverversion.json"
V121_RUN_LOG = "meta/run.log"
V121_CONFIGMAPS = "resources/ns/kube-system/core_v1_configmaps.json"

_V1_SCTP_ANY = re.compile(
    rb'(<testcase name="([^"]*(?:sctp|SCTP)[^"]*)" classname="[^"]*" time=")0(">)\s*<skipped></skipped>\s*(</testcase>)'
)


def flip_sctp_by(junit: bytes, status_of: dict[str, str], default: str = "") -> bytes:
    """A ginkgo v1 JUnit (the v1.21.1 file's shape) whose unselected SCTP testcases become the
    status `status_of` gives their catalog test (`default` for the others; "" or
    "not_selected" leaves them unselected): passed, failed or skipped specs that took 31.4 s."""
    from tests.domain.ingest.builders import catalog_key_of

    def rewrite(match: re.Match[bytes]) -> bytes:
        status = status_of.get(catalog_key_of(match.group(2)) or "", default)
        if status in ("", "not_selected"):
            return match.group(0)
        head = match.group(1) + b"31.4" + match.group(3)
        if status == "failed":
            head += b'\n          <failure type="Failure">dial sctp: connection refused</failure>'
        elif status == "skipped":
            head += b'\n          <skipped message="no SCTP load balancer"></skipped>'
        return head + b"\n      " + match.group(4)

    return _V1_SCTP_ANY.sub(rewrite, junit)


def run_log_at(when: str) -> bytes:
    """A Sonobuoy meta/run.log whose first entry is at `when` ("2026-11-20T10:00:00Z")."""
    return (
        b'{"level":"info","msg":"Starting server Expected Results: [{global e2e}]","time":"%s"}\n'
        % when.encode()
    )


def server_version(git_version: str) -> bytes:
    """serverversion.json as Sonobuoy writes it, for another release ("v1.34.2")."""
    minor = git_version.lstrip("v").split(".")[1]
    return json.dumps(
        {"major": "1", "minor": minor, "gitVersion": git_version, "platform": "linux/amd64"}
    ).encode()


def kube_proxy_mode(files: dict[str, bytes], mode: str) -> bytes:
    """The archive's kube-system ConfigMaps with kube-proxy's mode set to `mode`."""
    maps = json.loads(files[V121_CONFIGMAPS])
    for cm in maps:
        if cm["metadata"]["name"] == "kube-proxy":
            conf = cm["data"]["config.conf"]
            cm["data"]["config.conf"] = re.sub(r"mode: \S*", f"mode: {mode}", conf, count=1)
    return json.dumps(maps, sort_keys=True).encode()


def edited_v121(
    status_of: dict[str, str],
    *,
    default: str = "",
    run_at: str | bool | None = True,
    release: str | None = None,
    proxier: str | None = None,
    mtime: float = 0.0,
) -> bytes:
    """The real v1.21.1 kind tarball with its e2e JUnit's SCTP testcases flipped as
    `flip_sctp_by` does; `run_at`: True keeps meta/run.log (2021), None drops it (the file no
    longer says when it ran), a string rewrites it to that time; `release` rewrites
    serverversion.json ("v1.34.2"); `proxier` sets kube-proxy's mode in its ConfigMap. Re-packed
    with every member date at `mtime` (archive dates never date a run)."""
    files = members(real(V121))
    files[V121_JUNIT] = flip_sctp_by(files[V121_JUNIT], status_of, default)
    if run_at is None:
        files.pop(V121_RUN_LOG, None)
    elif isinstance(run_at, str):
        files[V121_RUN_LOG] = run_log_at(run_at)
    if release is not None:
        files[V121_SERVER_VERSION] = server_version(release)
    if proxier is not None:
        files[V121_CONFIGMAPS] = kube_proxy_mode(files, proxier)
    return repack(files, mtime=mtime)
