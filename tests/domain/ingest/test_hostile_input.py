"""Every hostile or broken input is refused with a clear IngestError and its status."""

from __future__ import annotations

import gzip
import io
import stat
import tarfile
import time
import zipfile

import pytest

from dashboard.domain.ingest import IngestError, Limits, ingest
from dashboard.domain.ingest.archives import BoundedGunzip

from .builders import junit_v2, tar_gz, tar_gz_with, zip_bytes

NAME = "[sig-network] Networking Granular Checks: Services should function for pod-Service: sctp [Feature:SCTPConnectivity]"
GOOD_JUNIT = junit_v2([(NAME, "passed")])
GIB = 1024**3


def refused(data, status: int = 400, **kwargs) -> IngestError:
    with pytest.raises(IngestError) as caught:
        ingest(data, **kwargs)
    assert caught.value.status == status, caught.value.message
    assert caught.value.message
    return caught.value


# --- XML ------------------------------------------------------------------------------

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<testsuites><testsuite><testcase name="&lol9;" status="passed"/></testsuite></testsuites>"""

EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE t [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<testsuites><testsuite><testcase name="&xxe;" status="passed"/></testsuite></testsuites>"""

PARAMETER_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE t [<!ENTITY % remote SYSTEM "http://example.invalid/x.dtd"> %remote;]>
<testsuites/>"""


@pytest.mark.parametrize("document", [BILLION_LAUGHS, EXTERNAL_ENTITY, PARAMETER_ENTITY])
def test_xml_with_a_dtd_or_entities_is_refused(document):
    error = refused(document)
    assert "DTD" in error.message


def test_an_entity_bomb_inside_a_tarball_is_refused_too():
    refused(tar_gz({"junit_01.xml": BILLION_LAUGHS}))


@pytest.mark.parametrize(
    "document",
    [
        b"<testsuites><testsuite><testcase name='x'></testsuite>",
        b"<testsuites>",
        b"<?xml version='1.0'?><testsuites><testcase name='a' status='passed'/></testsuites>trailing<",
    ],
)
def test_malformed_xml_is_refused(document):
    assert "not well-formed" in refused(document).message


@pytest.mark.parametrize(
    "document",
    [
        b"<testsuites></testsuites>",
        b'<testsuite name="Kubernetes e2e suite" tests="0"/>',
        b"<testsuites><testsuite><properties/></testsuite></testsuites>",
    ],
)
def test_a_junit_with_no_testcases_is_refused(document):
    assert "no testcases" in refused(document).message


def test_xml_that_is_not_junit_is_refused():
    assert "not a JUnit report" in refused(b"<html><body>hi</body></html>").message


@pytest.mark.parametrize(
    "data", [b"", b"%PDF-1.4 ...", b'{"results": []}', b"\x00" * 4096, b"just text"]
)
def test_anything_else_is_an_unsupported_file(data):
    assert refused(data).message == (
        "unsupported file: expected an e2e JUnit XML, a Sonobuoy results tarball "
        "or a Hydrophone output (.tar.gz or .zip)"
    )


# --- size -----------------------------------------------------------------------------


def test_bytes_over_the_limit_are_413():
    refused(GOOD_JUNIT + b" " * 1000, status=413, max_bytes=len(GOOD_JUNIT))
    assert (
        ingest(GOOD_JUNIT, max_bytes=len(GOOD_JUNIT)).results["pod-to-service"].outcome == "passed"
    )


class Endless(io.RawIOBase):
    """A stream that never ends: the limit must be enforced while reading."""

    def __init__(self) -> None:
        self.served = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        size = 1 << 20 if size is None or size < 0 else size
        self.served += size
        return b" " * size


def test_a_stream_over_the_limit_is_413_without_reading_it_all():
    stream = Endless()
    error = refused(stream, status=413, max_bytes=5 * 1024 * 1024)
    assert "50" not in error.message and "5 MB" in error.message
    assert stream.served <= 7 * 1024 * 1024


# --- tar ------------------------------------------------------------------------------


def _member(name: str, kind: bytes = tarfile.REGTYPE, **attrs) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    for key, value in attrs.items():
        setattr(info, key, value)
    return info


@pytest.mark.parametrize(
    ("info", "words"),
    [
        (_member("../x"), ".."),
        (_member("plugins/../../x"), ".."),
        (_member("/etc/x"), "absolute"),
        (_member("C:\\windows\\x"), "absolute"),
        (_member("junit_01.xml", tarfile.SYMTYPE, linkname="/etc/passwd"), "link"),
        (_member("junit_01.xml", tarfile.LNKTYPE, linkname="e2e.log"), "link"),
        (_member("dev/null", tarfile.CHRTYPE, devmajor=1, devminor=3), "device"),
        (_member("dev/sda", tarfile.BLKTYPE, devmajor=8, devminor=0), "device"),
        (_member("fifo", tarfile.FIFOTYPE), "FIFO"),
    ],
    ids=[
        "dotdot",
        "nested-dotdot",
        "absolute",
        "windows-absolute",
        "symlink",
        "hardlink",
        "char-device",
        "block-device",
        "fifo",
    ],
)
def test_tar_members_that_could_escape_or_are_special_are_refused(info, words):
    error = refused(tar_gz_with(info))
    assert words in error.message


def test_a_dangerous_member_refuses_the_whole_archive_even_next_to_good_files():
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        good = tarfile.TarInfo("junit_01.xml")
        good.size = len(GOOD_JUNIT)
        archive.addfile(good, io.BytesIO(GOOD_JUNIT))
        archive.addfile(_member("x", tarfile.SYMTYPE, linkname="../../etc/shadow"))
    refused(buffer.getvalue())


def test_a_tar_with_too_many_members_is_refused():
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as archive:
        for i in range(20_000):
            archive.addfile(tarfile.TarInfo(f"resources/{i}.json"), io.BytesIO(b""))
    assert "more than 10000 members" in refused(buffer.getvalue()).message


def _zeros_gzip(gib: int) -> bytes:
    # Gzip members concatenate: 1 MiB of zeros compresses to ~1 KB, so a few GB of
    # virtual size costs a few MB here and no time.
    one_mib = gzip.compress(b"\0" * (1 << 20), compresslevel=9)
    return one_mib * (gib * 1024)


def test_a_gzip_bomb_tarball_of_several_gb_is_refused_quickly():
    header = tarfile.TarInfo("plugins/e2e/results/global/junit_01.xml")
    header.size = 3 * GIB
    bomb = gzip.compress(header.tobuf(format=tarfile.USTAR_FORMAT)) + _zeros_gzip(3)
    assert len(bomb) < 5 * 1024 * 1024
    started = time.monotonic()
    error = refused(bomb)
    assert time.monotonic() - started < 5
    assert "MB" in error.message


def test_the_gunzip_reader_stops_at_its_bound_whatever_the_headers_say():
    reader = BoundedGunzip(_zeros_gzip(3), limit=64 * 1024 * 1024)
    with pytest.raises(IngestError, match="expands beyond 64 MB"):
        while reader.read(1 << 20):
            pass


def test_a_gzipped_junit_that_expands_too_far_is_refused():
    bomb = gzip.compress(b"<testsuites>") + _zeros_gzip(1)
    limits = Limits(max_uncompressed=16 * 1024 * 1024, max_member_bytes=8 * 1024 * 1024)
    refused(bomb, limits=limits)


def test_an_oversized_pax_header_is_refused_before_it_is_read():
    info = tarfile.TarInfo("junit_01.xml")
    info.pax_headers = {"comment": "x" * (2 * 1024 * 1024)}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as archive:
        archive.addfile(info, io.BytesIO(b""))
    assert "extended header" in refused(buffer.getvalue()).message


def test_a_truncated_tarball_is_refused():
    data = tar_gz({"junit_01.xml": GOOD_JUNIT * 50})
    refused(data[: len(data) // 2])


# --- zip ------------------------------------------------------------------------------


def _zip_with(info: zipfile.ZipInfo, data: bytes = b"x") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(info, data)
    return buffer.getvalue()


@pytest.mark.parametrize("name", ["../x", "a/../../x", "/etc/x"])
def test_zip_members_with_escaping_names_are_refused(name):
    refused(_zip_with(zipfile.ZipInfo(name)))


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        (stat.S_IFLNK | 0o777, "link"),
        (stat.S_IFCHR | 0o600, "device"),
        (stat.S_IFIFO | 0o600, "FIFO"),
    ],
)
def test_zip_links_devices_and_fifos_are_refused(mode, words):
    info = zipfile.ZipInfo("junit_01.xml")
    info.create_system = 3
    info.external_attr = mode << 16
    assert words in refused(_zip_with(info, b"/etc/passwd")).message


def test_a_zip_bomb_is_refused_by_what_it_inflates_to():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        with archive.open("junit_01.xml", "w", force_zip64=True) as member:
            member.write(b"<testsuites>")
            chunk = (
                b"<!--" + b"x" * ((1 << 20) - 7) + b"-->"
            )  # well-formed: only the inflation ratio stops it
            for _ in range(64):
                member.write(chunk)
    assert len(buffer.getvalue()) < 1024 * 1024
    assert "zip bomb" in refused(buffer.getvalue()).message


def test_a_zip_with_too_many_members_is_refused():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for i in range(20_000):
            archive.writestr(f"r/{i}", b"")
    assert "more than 10000 members" in refused(buffer.getvalue()).message


def test_a_zip_with_corrupt_compressed_data_is_refused():
    data = bytearray(zip_bytes({"junit_01.xml": GOOD_JUNIT * 20}))
    # Inflating must fail cleanly with a 400, not crash.
    start = data.index(b"junit_01.xml") + len("junit_01.xml") + 40
    data[start : start + 64] = b"\xff" * 64
    refused(bytes(data))


def test_a_truncated_zip_is_refused():
    data = zip_bytes({"junit_01.xml": GOOD_JUNIT})
    refused(data[:-30])


def test_a_zips_entry_count_is_read_from_its_end_record_before_the_directory_is_parsed(monkeypatch):
    from tests.domain.ingest.hostile_shapes import zip_many_entries

    data = zip_many_entries(10_001, name_len=10)

    def no_parsing(*args, **kwargs):  # the central directory must not be parsed at all
        raise AssertionError("zipfile.ZipFile was opened")

    monkeypatch.setattr(zipfile, "ZipFile", no_parsing)
    assert "more than 10000 members" in refused(data).message


def test_a_zip_whose_end_record_understates_its_entries_is_still_refused():
    from tests.domain.ingest.hostile_shapes import zip_lying_end_record

    assert "more than 10000 members" in refused(zip_lying_end_record(40_000)).message
    assert "central directory is larger than 2 MB" in refused(zip_lying_end_record(60_000)).message
