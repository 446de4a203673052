"""The hostile upload shapes of issue 12 (findings 1, 3, 4), built cheaply.

Shared by tests/web/api/test_hostile_uploads.py and bench/bench_hostile.py. Each
builder returns bytes, or writes a file and returns its path when the shape is big.
Gzip streams may be a concatenation of members (RFC 1952), so a stream that inflates to
hundreds of MB is built from one compressed megabyte repeated, in milliseconds.
"""

from __future__ import annotations

import gzip
import io
import struct
import tarfile
import zipfile
from xml.sax.saxutils import quoteattr

MiB = 1 << 20
PASSING = (
    "[It] [sig-network] Networking Granular Checks: Services should function for pod-Service: sctp "
    "[Feature:SCTPConnectivity]"
)
_PASS_CASE = (
    f'<testcase name={quoteattr(PASSING)} classname="Kubernetes e2e suite" status="passed" time="3">'
    "</testcase>"
).encode()
_HEAD = b'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites><testsuite name="Kubernetes e2e suite" timestamp="2026-11-20T10:00:00">'
_TAIL = b"</testsuite></testsuites>\n"


def label_list_names(size: int, *, with_real_test: bool = False, names: int = 3) -> bytes:
    """Finding 1: testcase names "sctp [" + ", " * n with no closing bracket (~size bytes)."""
    each = max(size // names, 16)
    cases = [
        b'<testcase name="[It] sctp ['
        + b", " * (each // 2)
        + b'" classname="x" status="passed" time="0"></testcase>'
        for _ in range(names)
    ]
    return _HEAD + (_PASS_CASE if with_real_test else b"") + b"".join(cases) + _TAIL


def gzip_bomb_junit(virtual_mb: int = 700) -> bytes:
    """Finding 3: a gzipped JUnit of ~virtual_mb MB of testcases from a few hundred KB."""
    case = b'<testcase name="a" classname="x" status="passed" time="0"></testcase>'
    block = gzip.compress(case * (MiB // len(case)), compresslevel=9)
    return gzip.compress(_HEAD) + block * virtual_mb + gzip.compress(_TAIL)


def _zeros_gzip(size: int) -> bytes:
    one = gzip.compress(b"\0" * MiB, compresslevel=9)
    return one * (size // MiB)


def _tar_header(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = 1_764_000_000
    return info.tobuf(format=tarfile.USTAR_FORMAT)


def tar_huge_members(member_mb: int = 250, *, wanted: bool = True, count: int = 2) -> bytes:
    """Finding 3: a small .tar.gz with ``count`` members of member_mb MB (zeros) each.

    wanted=True names them like a Sonobuoy JUnit and e2e.log (read by ingest); False puts
    them under resources/ (skipped, but still inflated to reach what follows), followed by
    a real JUnit with one passing SCTP test.
    """
    size = member_mb * MiB
    names = (
        ["plugins/e2e/results/global/junit_01.xml", "plugins/e2e/results/global/e2e.log"]
        if wanted
        else [f"resources/cluster/dump-{i}.json" for i in range(count)]
    )
    parts = []
    for name in names[:count]:
        parts.append(gzip.compress(_tar_header(name, size)) + _zeros_gzip(size))
    junit = _HEAD + _PASS_CASE + _TAIL
    pad = b"\0" * (-len(junit) % 512)
    parts.append(
        gzip.compress(
            _tar_header("plugins/e2e/results/global/junit_01.xml", len(junit))
            + junit
            + pad
            + b"\0" * 1024
        )
    )
    return b"".join(parts)


def properties_flood(path: str, size_mb: int = 47) -> str:
    """Finding 3: a JUnit of size_mb MB, nearly all <property> children, one passing test."""
    prop = b'<property name="SuiteLabel" value="x"></property>'
    block = prop * (MiB // len(prop))
    with open(path, "wb") as out:
        out.write(_HEAD + b"<properties>")
        for _ in range(size_mb):
            out.write(block)
        out.write(b"</properties>" + _PASS_CASE + _TAIL)
    return path


def zip_many_entries(entries: int = 20_000, name_len: int = 120) -> bytes:
    """Finding 3: a zip whose central directory lists ``entries`` (empty) members."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for i in range(entries):
            archive.writestr(f"out/{'d' * name_len}/{i}.json", b"")
        archive.writestr("out/junit_01.xml", _HEAD + _PASS_CASE + _TAIL)
    return buffer.getvalue()


def zip_claiming_a_huge_directory(directory_mb: int = 400, entries: int = 9_000) -> bytes:
    """A zip whose end-of-central-directory record announces a directory of directory_mb MB."""
    local = b"PK\x03\x04" + b"\0" * 26
    eocd = struct.pack(
        "<4s4H2LH", b"PK\x05\x06", 0, 0, entries, entries, directory_mb * MiB, len(local), 0
    )
    return local + eocd


def unknown_sctp_names(count: int = 5_000, length: int = 1_000) -> bytes:
    """Finding 4: many distinct, long SCTP names that map to no catalog test, one real pass."""
    cases = []
    for i in range(count):
        name = f"[It] [sig-network] SCTP vendor extension {i} " + "z" * length
        cases.append(
            f'<testcase name="{name}" classname="x" status="passed" time="1.5"></testcase>'.encode()
        )
    return _HEAD + _PASS_CASE + b"".join(cases) + _TAIL


def zip_lying_end_record(entries: int = 40_000, claimed: int = 5) -> bytes:
    """A zip whose central directory holds ``entries`` but whose end record claims ``claimed``:
    the directory's byte size (also in the end record) is what bounds parsing it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for i in range(entries):
            archive.writestr(str(i), b"")
    data = bytearray(buffer.getvalue())
    pos = data.rfind(b"PK\x05\x06")
    sig, d1, d2, _n1, _n2, size, offset, comment = struct.unpack("<4s4H2LH", data[pos : pos + 22])
    data[pos : pos + 22] = struct.pack(
        "<4s4H2LH", sig, d1, d2, claimed, claimed, size, offset, comment
    )
    return bytes(data)


def long_attribute(path: str, size_mb: int = 40) -> str:
    """A testcase name attribute of size_mb MB (expat would hold it whole: 3x in memory)."""
    with open(path, "wb") as out:
        out.write(_HEAD + b'<testcase name="sctp ')
        for _ in range(size_mb):
            out.write(b"a>" * (MiB // 2))  # ">" is legal in attribute values
        out.write(b'" status="passed"></testcase>' + _PASS_CASE + _TAIL)
    return path


def long_text(path: str, size_mb: int = 49) -> str:
    """A legitimate shape: one passing test with size_mb MB of system-err log lines."""
    line = b"E1130 09:12:01.123456 framework.go:123] dumping namespace events ...\n"
    block = line * (MiB // len(line))
    with open(path, "wb") as out:
        out.write(_HEAD + _PASS_CASE.replace(b"</testcase>", b"<system-err>"))
        for _ in range(size_mb):
            out.write(block)
        out.write(b"</system-err></testcase>" + _TAIL)
    return path
