"""Containers a result file may come in, read as streams with every size bounded.

Nothing is extracted to disk and no member is held whole. Tarballs are read as a stream
(``tarfile`` mode ``r|``) through a gunzip reader that counts what it inflates; each
member that matters is parsed straight from that stream (JUnit by expat, e2e.log line by
line, logs and cluster resources scanned for the proxier and the CNI); zips are read from
their central directory only after its end-of-central-directory record says how many
entries and bytes it has, with the bytes actually inflated counted, not the sizes the
headers claim. Any member that could escape an extraction directory (absolute path,
``..``), any link, device or FIFO refuses the whole archive: a results tarball never needs
one, and the next tool that does extract it should not meet one either.
"""

from __future__ import annotations

import io
import json
import re
import stat
import struct
import tarfile
import tempfile
import zipfile
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

from dashboard.domain.ingest import cluster_facts
from dashboard.domain.ingest.e2elog import E2ELog, parse_e2e_log
from dashboard.domain.ingest.errors import UNSUPPORTED, IngestError
from dashboard.domain.ingest.identity import JUnitScan, StampTee
from dashboard.domain.ingest.junit import JUnitResult, parse_junit
from dashboard.domain.ingest.limits import Deadline, Limits, MiB, Readable

_SONOBUOY_RESULTS = r"^(?:[^/]+/)?plugins/e2e/results/(global/)?"
_SONOBUOY_JUNIT = re.compile(_SONOBUOY_RESULTS + r"junit[^/]*\.xml$")
_SONOBUOY_LOG = re.compile(_SONOBUOY_RESULTS + r"e2e\.log$")
_TOP_JUNIT = re.compile(r"^(?:([^/]+)/)?junit[^/]*\.xml$")
_TOP_LOG = re.compile(r"^(?:([^/]+)/)?e2e\.log$")
_SERVER_VERSION = re.compile(r"^(?:[^/]+/)?serverversion\.json$")
_MAX_META_HEADER = MiB  # pax / GNU long-name headers are a few hundred bytes
_SMALL_FILE = 64 * 1024

# Sonobuoy's own log ("meta/run.log", logrus): JSON lines from Sonobuoy 0.10 on
# ({"level":"info","msg":…,"time":"2021-08-17T17:04:33Z"}), logfmt (time="…" level=info …)
# when configured so. meta/info.json: what Sonobuoy recorded about the run.
_SONOBUOY_RUN_LOG = re.compile(r"^(?:[^/]+/)?meta/run\.log$")
_SONOBUOY_INFO = re.compile(r"^(?:[^/]+/)?meta/info\.json$")
# The e2e plugin's definition (Sonobuoy spells it "defintion.json"): E2E_FOCUS, E2E_SKIP,
# E2E_DRYRUN as the run was started.
_PLUGIN_DEFINITION = re.compile(r"^(?:[^/]+/)?plugins/e2e/(?:defintion|definition)\.json$")
_E2E_ENV = re.compile(
    rb'"name"\s*:\s*"(E2E_FOCUS|E2E_SKIP|E2E_DRYRUN)"\s*,\s*"value"\s*:\s*("(?:[^"\\]|\\.){0,4000}")'
)
_LOGRUS_TIME = re.compile(
    rb'(?:\btime=|"time"\s*:\s*)"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?)"'
)
# Sonobuoy's podlogs/<namespace>/<pod>/logs/<container>.txt and resources/ns/<ns>/<kind>.json.
_PODLOG = re.compile(r"^(?:[^/]+/)?podlogs/([^/]+)/([^/]+)(?:/|$)")
_KUBE_PROXY_POD = re.compile(r"^kube-proxy-[a-z0-9]{5}$")
_DAEMON_POD = re.compile(r"^(.+)-[a-z0-9]{5}$")  # a DaemonSet's pod: its name and 5 characters
# kube-proxy at start-up: "Using iptables Proxier" (v1.1x-v1.3x), "Using ipvs Proxier.",
# "Using nftables Proxier" (v1.29+), older "Using userspace Proxier".
_PROXIER_LOG = re.compile(rb"Using (iptables|ipvs|nftables|userspace|kernelspace) [Pp]rox(?:ier|y)")


@dataclass
class Contents:
    """What a file gave us: the chosen JUnit results and what the side files say."""

    kind: str
    junit: list[tuple[str, JUnitResult]] = field(default_factory=list)
    e2e_log: E2ELog | None = None
    server_version: str | None = None
    server_version_from: str | None = None  # the member that said it
    sonobuoy_run_at: datetime | None = None  # meta/run.log (never an archive member's date)
    sonobuoy_run_at_from: str | None = None
    proxiers: set[str] = field(default_factory=set)  # modes kube-proxy logged
    cnis: set[str] = field(default_factory=set)  # plugin slugs of CNI DaemonSets seen
    scan: JUnitScan = field(default_factory=JUnitScan)  # the identity pass over the chosen JUnit
    cluster: cluster_facts.ClusterFacts = field(default_factory=cluster_facts.ClusterFacts)
    e2e_env: dict[str, str] = field(default_factory=dict)  # the e2e plugin's E2E_* settings


# --- reading the upload ---------------------------------------------------------------


def open_source(data: bytes | IO[bytes], limits: Limits) -> IO[bytes]:
    """The upload as a seekable stream; 413 as soon as it exceeds ``limits.max_bytes``.

    Bytes are wrapped (no copy); a seekable file is used in place; anything else is
    spooled to a temporary file (in memory up to 1 MB) while it is counted.
    """
    if isinstance(data, (bytes, bytearray, memoryview)):
        if len(data) > limits.max_bytes:
            raise _too_large(limits)
        return io.BytesIO(data)
    seekable = getattr(data, "seekable", None)
    if seekable is not None and seekable():
        data.seek(0, io.SEEK_END)
        if data.tell() > limits.max_bytes:
            raise _too_large(limits)
        data.seek(0)
        return data
    spool = tempfile.SpooledTemporaryFile(max_size=MiB)
    size = 0
    while chunk := data.read(MiB):
        size += len(chunk)
        if size > limits.max_bytes:
            spool.close()
            raise _too_large(limits)
        spool.write(chunk)
    spool.seek(0)
    return spool


def _too_large(limits: Limits) -> IngestError:
    return IngestError(f"file too large: the limit is {limits.max_bytes // MiB} MB", 413)


def read(source: IO[bytes], limits: Limits, deadline: Deadline) -> Contents:
    """Detect the container from its first bytes and read it."""
    head = source.read(1024)
    source.seek(0)
    if is_gzip(head):
        stream = BoundedGunzip(source, limits.max_uncompressed)
        inner = stream.read(1024)
        rest = Prefixed(inner, stream)
        if is_tar(inner):
            return read_tar(rest, limits, "tar", deadline)
        if is_xml(inner):  # a gzipped junit_01.xml
            return _plain_junit(rest, "the gzipped JUnit file", limits, deadline)
        raise IngestError(UNSUPPORTED)
    if is_zip(head):
        return read_zip(source, limits, deadline)
    if is_tar(head):
        return read_tar(source, limits, "tar", deadline)
    if is_xml(head):
        return _plain_junit(source, "JUnit file", limits, deadline)
    raise IngestError(UNSUPPORTED)


def _plain_junit(source: Readable, label: str, limits: Limits, deadline: Deadline) -> Contents:
    tee = StampTee(source)
    result = parse_junit(tee, label, limits, deadline)
    result.scan.ginkgo_time = tee.ginkgo_time
    return Contents(kind="junit", junit=[("JUnit file", result)], scan=result.scan)


# --- detection ------------------------------------------------------------------------


def is_gzip(head: bytes) -> bool:
    return head[:2] == b"\x1f\x8b"


def is_zip(head: bytes) -> bool:
    return head[:4] in (b"PK\x03\x04", b"PK\x05\x06")


def is_tar(head: bytes) -> bool:
    return len(head) >= 262 and head[257:262] == b"ustar"


def is_xml(head: bytes) -> bool:
    return head.removeprefix(b"\xef\xbb\xbf").lstrip()[:1] == b"<"


# --- gzip -----------------------------------------------------------------------------


class _ReadStream(io.RawIOBase):
    """A raw stream whose subclasses only implement read(size)."""

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        raise NotImplementedError

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class BoundedGunzip(_ReadStream):
    """Inflates gzip (several members too) on demand, refusing past ``limit`` bytes.

    Reads the compressed stream 64 KB at a time: neither side is ever held whole.
    """

    _CHUNK = 64 * 1024

    def __init__(self, compressed: bytes | Readable, limit: int) -> None:
        super().__init__()
        self._src = (
            io.BytesIO(compressed) if isinstance(compressed, (bytes, bytearray)) else compressed
        )
        self._limit = limit
        self._inflated = 0
        self._pending = b""
        self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            size = self._limit + 1  # "everything" still stops at the bound
        out = bytearray()
        while len(out) < size:
            if self._inflater.eof:
                rest = self._inflater.unused_data or self._src.read(self._CHUNK)
                if not rest.startswith(b"\x1f\x8b"):  # the end, or trailing padding
                    break
                self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
                self._pending = rest
            feed = self._pending or self._inflater.unconsumed_tail or self._src.read(self._CHUNK)
            self._pending = b""
            if not feed:
                raise IngestError("the gzip stream is truncated")
            try:
                piece = self._inflater.decompress(feed, min(size - len(out), MiB))
            except zlib.error as exc:
                raise IngestError(f"the gzip stream is corrupt: {exc}") from None
            self._inflated += len(piece)
            if self._inflated > self._limit:
                raise IngestError(
                    f"archive refused: it expands beyond {self._limit // MiB} MB "
                    "(decompression bomb?)"
                )
            out += piece
        return bytes(out)


class Prefixed(_ReadStream):
    """A stream with some already-read bytes put back in front."""

    def __init__(self, head: bytes, rest: Readable) -> None:
        super().__init__()
        self._head = head
        self._rest = rest

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            data, self._head = self._head + self._rest.read(), b""
            return data
        if self._head:
            data, self._head = self._head[:size], self._head[size:]
            if len(data) < size:
                data += self._rest.read(size - len(data))
            return data
        return self._rest.read(size)


# --- member checks shared by tar and zip ------------------------------------------------


def _check_name(name: str) -> str:
    """The member's path, normalised; IngestError if it could escape a directory."""
    unified = name.replace("\\", "/")
    if unified.startswith("/") or re.match(r"^[A-Za-z]:", unified):
        raise IngestError(f"archive refused: member {name!r} has an absolute path")
    parts = [part for part in unified.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise IngestError(f"archive refused: member {name!r} points outside the archive (..)")
    return "/".join(parts)


class _Collector:
    """Reads the members that matter as they come, whatever the layout; picks at the end."""

    def __init__(self, limits: Limits, deadline: Deadline) -> None:
        self.limits = limits
        self.deadline = deadline
        self.members = 0
        self.declared = 0
        self.junit: dict[str, JUnitResult] = {}
        self.scans: dict[str, JUnitScan] = {}
        self.logs: dict[str, E2ELog] = {}
        self.versions: dict[str, str | None] = {}
        self.run_log_time: datetime | None = None
        self.run_log_from: str | None = None
        self.proxiers: set[str] = set()
        self.cnis: set[str] = set()
        self.cluster = cluster_facts.ClusterFacts()
        self.e2e_env: dict[str, str] = {}
        self.sctp_cases = 0
        self.inflated = 0  # zip: what the wanted members really inflated to

    def count(self, name: str, size: int) -> None:
        self.members += 1
        if self.members > self.limits.max_members:
            raise IngestError(f"archive refused: more than {self.limits.max_members} members")
        self.declared += size
        if self.declared > self.limits.max_uncompressed:
            raise IngestError(
                f"archive refused: its members add up to more than "
                f"{self.limits.max_uncompressed // MiB} MB (decompression bomb?)"
            )
        self.deadline.check()

    def path_only(self, path: str) -> None:
        """What a member's path alone says: a CNI pod's log directory, a host's directory."""
        podlog = _PODLOG.match(path)
        if podlog and (pod := _DAEMON_POD.match(podlog.group(2))):
            slug = cluster_facts.cni_for(pod.group(1), {})
            if slug:
                self.cnis.add(slug)
                self.cluster.cnis.setdefault(slug, f"pod logs of {podlog.group(1)}/{pod.group(0)}")
        cluster_facts.path_only(self.cluster, path)

    @staticmethod
    def wanted(path: str) -> bool:
        podlog = _PODLOG.match(path)
        return bool(
            _SONOBUOY_JUNIT.match(path)
            or _SONOBUOY_LOG.match(path)
            or _TOP_JUNIT.match(path)
            or _TOP_LOG.match(path)
            or _SERVER_VERSION.match(path)
            or _SONOBUOY_RUN_LOG.match(path)
            or _SONOBUOY_INFO.match(path)
            or _PLUGIN_DEFINITION.match(path)
            or cluster_facts.wanted(path)
            or (podlog and _KUBE_PROXY_POD.match(podlog.group(2)) and path.endswith(".txt"))
        )

    def check_member_size(self, name: str, size: int) -> None:
        if size > self.limits.max_member_bytes:
            raise IngestError(
                f"archive refused: {name} is larger than {self.limits.max_member_bytes // MiB} MB"
            )

    def read_member(self, path: str, stream: Readable, mtime: datetime | None = None) -> None:
        """Parse one wanted member straight from its stream. Member dates (``mtime``) are
        never a run time: a re-packed archive has today's."""
        if _SONOBUOY_JUNIT.match(path) or _TOP_JUNIT.match(path):
            tee = StampTee(stream)
            result = parse_junit(tee, path, self.limits, self.deadline, self.sctp_cases)
            result.scan.ginkgo_time = tee.ginkgo_time
            self.sctp_cases += len(result.cases)
            self.junit[path] = result
            self.scans[path] = result.scan
        elif _SONOBUOY_LOG.match(path) or _TOP_LOG.match(path):
            self.logs[path] = parse_e2e_log(stream, self.limits, self.deadline)
        elif _SERVER_VERSION.match(path):
            data = stream.read(_SMALL_FILE + 1)
            self.versions[path] = None if len(data) > _SMALL_FILE else _server_version_json(data)
        elif _SONOBUOY_RUN_LOG.match(path) or _SONOBUOY_INFO.match(path):
            when = _first_time(stream.read(_SMALL_FILE))
            if when is not None and (self.run_log_time is None or when < self.run_log_time):
                self.run_log_time = when
                self.run_log_from = (
                    "meta/info.json" if path.endswith("info.json") else "meta/run.log"
                )
        elif _PLUGIN_DEFINITION.match(path):
            for match in _E2E_ENV.finditer(stream.read(_SMALL_FILE * 4)):
                try:
                    value = json.loads(match.group(2))
                except ValueError:
                    continue
                if isinstance(value, str):
                    self.e2e_env.setdefault(match.group(1).decode(), value)
        elif cluster_facts.wanted(path):
            # Parsed as JSON up to a bound; a larger file (a big cluster's pods) is scanned
            # 1 MB at a time for the DaemonSets owning its pods, never held whole.
            data = stream.read(cluster_facts.JSON_BOUND + 1)
            self.deadline.check()
            if len(data) <= cluster_facts.JSON_BOUND:
                cluster_facts.read(self.cluster, path, data)
            elif cluster_facts.is_pods(path):
                owners = {m.group(1) for m in cluster_facts.OWNER.finditer(data)}
                owners |= self._scan(Prefixed(data[-256:], stream), cluster_facts.OWNER)
                cluster_facts.read_owners(self.cluster, path, owners)
        else:  # a kube-proxy pod's log
            modes = {m.decode() for m in self._scan(stream, _PROXIER_LOG)}
            self.proxiers.update(modes)
            for mode in modes:
                self.cluster.proxier_modes.setdefault(mode, f"kube-proxy's log ({path})")

    def _scan(self, stream: Readable, pattern: re.Pattern[bytes]) -> set[bytes]:
        """Every group(1) of pattern in the stream, read 1 MB at a time with an overlap."""
        found: set[bytes] = set()
        tail = b""
        while chunk := stream.read(MiB):
            self.deadline.check()
            window = tail + chunk
            found.update(m.group(1) for m in pattern.finditer(window))
            tail = window[-256:]
        return found

    def contents(self, container: str) -> Contents:
        return _pick(self, container)


def _first_time(data: bytes) -> datetime | None:
    """The first RFC 3339 time of a Sonobuoy run.log (JSON lines or logfmt) or info.json."""
    match = _LOGRUS_TIME.search(data)
    return _parse_time(match.group(1).decode()) if match else None


def _parse_time(text: str) -> datetime | None:
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _pick(found: _Collector, container: str) -> Contents:
    sonobuoy = sorted(p for p in found.junit if _SONOBUOY_JUNIT.match(p))
    if sonobuoy:
        # Sonobuoy 0.20+ writes results/global/; older ones results/ directly.
        global_files = [p for p in sonobuoy if "/results/global/" in f"/{p}"]
        chosen = global_files or sonobuoy
        logs = sorted(p for p in found.logs if _SONOBUOY_LOG.match(p))
        contents = Contents(kind="sonobuoy", junit=[(p, found.junit[p]) for p in chosen])
        contents.e2e_log = found.logs[logs[0]] if logs else None
        contents.sonobuoy_run_at = found.run_log_time
        contents.sonobuoy_run_at_from = found.run_log_from
    else:
        top = sorted(p for p in found.junit if _TOP_JUNIT.match(p))
        if not top:
            raise IngestError(
                "archive refused: no e2e JUnit (junit_01.xml) found at its top, in one top "
                "directory, or under plugins/e2e/results/"
            )
        directories = {m.group(1) for p in top if (m := _TOP_JUNIT.match(p))}
        if len(directories) > 1:
            names = ", ".join(sorted(f"{d or '.'}/" for d in directories))
            raise IngestError(
                f"archive refused: JUnit files in several directories ({names}); "
                "submit one run per file"
            )
        (directory,) = directories
        contents = Contents(
            kind=f"hydrophone-{container}", junit=[(p, found.junit[p]) for p in top]
        )
        log = f"{directory}/e2e.log" if directory else "e2e.log"
        contents.e2e_log = found.logs.get(log)
        chosen = top
    for path in chosen:
        contents.scan.merge(found.scans[path])
    versions = sorted(p for p in found.versions if found.versions[p])
    if versions:
        contents.server_version = found.versions[versions[0]]
        contents.server_version_from = "serverversion.json"
    found.cluster.detect()
    contents.proxiers = set(found.proxiers) | set(found.cluster.proxier_modes)
    contents.cnis = set(found.cnis) | set(found.cluster.cnis)
    contents.cluster = found.cluster
    contents.e2e_env = dict(found.e2e_env)
    return contents


def _server_version_json(data: bytes) -> str | None:
    try:
        info = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(info, dict):
        return None
    version = info.get("gitVersion") or info.get("GitVersion")
    if isinstance(version, str) and version:
        return version[:40]
    major, minor = info.get("major"), info.get("minor")
    if isinstance(major, str) and isinstance(minor, str):
        return f"v{major[:5]}.{minor.rstrip('+')[:5]}"
    return None


# --- tar ------------------------------------------------------------------------------


class _SafeTarInfo(tarfile.TarInfo):
    """Refuses oversized pax / GNU long-name headers before tarfile reads them whole."""

    def _proc_pax(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        self._check_meta_size()
        info: tarfile.TarInfo = super()._proc_pax(tarfile_)  # type: ignore[misc]  # private: not in typeshed
        return info

    def _proc_gnulong(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        self._check_meta_size()
        info: tarfile.TarInfo = super()._proc_gnulong(tarfile_)  # type: ignore[misc]  # private: not in typeshed
        return info

    def _proc_sparse(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        raise IngestError("archive refused: sparse members are not accepted")

    def _check_meta_size(self) -> None:
        if self.size > _MAX_META_HEADER:
            raise IngestError("archive refused: an oversized tar extended header")


def read_tar(
    stream: IO[bytes] | _ReadStream,
    limits: Limits,
    container: str,
    deadline: Deadline | None = None,
) -> Contents:
    collector = _Collector(limits, deadline or Deadline(limits.time_budget_seconds))
    try:
        with tarfile.open(fileobj=stream, mode="r|", tarinfo=_SafeTarInfo) as archive:
            for member in archive:
                path = _check_name(member.name)
                if member.issym() or member.islnk():
                    raise IngestError(f"archive refused: member {member.name!r} is a link")
                if member.ischr() or member.isblk() or member.isfifo():
                    raise IngestError(
                        f"archive refused: member {member.name!r} is a device or FIFO"
                    )
                if not (member.isfile() or member.isdir()):
                    raise IngestError(
                        f"archive refused: member {member.name!r} has an unsupported type"
                    )
                # A tar header's size is the member's real size: the stream holds exactly
                # that many bytes, all of them inflated (and counted) to reach the next one.
                collector.count(path, member.size if member.isfile() else 0)
                collector.path_only(path)
                if member.isfile() and collector.wanted(path):
                    collector.check_member_size(path, member.size)
                    extracted = archive.extractfile(member)
                    if extracted is not None:
                        mtime = (
                            datetime.fromtimestamp(member.mtime, UTC) if member.mtime > 0 else None
                        )
                        collector.read_member(path, extracted, mtime)
    except tarfile.TarError as exc:
        raise IngestError(f"not a readable tar archive: {exc}") from None
    if collector.members == 0:
        raise IngestError(UNSUPPORTED)
    return collector.contents(container)


# --- zip ------------------------------------------------------------------------------

_EOCD = b"PK\x05\x06"
_EOCD64_LOCATOR = b"PK\x06\x07"
_EOCD64 = b"PK\x06\x06"


def zip_directory_size(source: IO[bytes]) -> tuple[int, int]:
    """(entries, central directory bytes) from the end-of-central-directory record
    (zip64 too), read from the file's last 64 KB before anything parses the directory."""
    source.seek(0, io.SEEK_END)
    size = source.tell()
    tail_len = min(size, 22 + 0xFFFF)
    source.seek(size - tail_len)
    tail = source.read(tail_len)
    pos = tail.rfind(_EOCD)
    if pos < 0 or pos + 22 > len(tail):
        raise IngestError("not a readable zip archive: no end-of-central-directory record")
    _sig, _disk, _cd_disk, _n_disk, entries, cd_size, _cd_offset, _comment = struct.unpack(
        "<4s4H2LH", tail[pos : pos + 22]
    )
    if entries == 0xFFFF or cd_size == 0xFFFFFFFF or _cd_offset == 0xFFFFFFFF:
        locator = tail[pos - 20 : pos] if pos >= 20 else b""
        if locator[:4] == _EOCD64_LOCATOR:
            (offset,) = struct.unpack("<Q", locator[8:16])
            if offset < size:
                source.seek(offset)
                record = source.read(56)
                if len(record) == 56 and record[:4] == _EOCD64:
                    entries, cd_size = struct.unpack("<QQ", record[32:48])
    source.seek(0)
    return entries, cd_size


def read_zip(
    source: IO[bytes] | bytes, limits: Limits, deadline: Deadline | None = None
) -> Contents:
    if isinstance(source, (bytes, bytearray)):
        source = io.BytesIO(source)
    collector = _Collector(limits, deadline or Deadline(limits.time_budget_seconds))
    entries, directory_bytes = zip_directory_size(source)
    if entries > limits.max_members:
        raise IngestError(f"archive refused: more than {limits.max_members} members")
    if directory_bytes > limits.max_zip_directory_bytes:
        raise IngestError(
            f"archive refused: its central directory is larger than "
            f"{limits.max_zip_directory_bytes // MiB} MB"
        )
    try:
        archive = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, ValueError, EOFError, OSError) as exc:
        raise IngestError(f"not a readable zip archive: {exc}") from None
    with archive:
        infos = archive.infolist()
        if len(infos) > limits.max_members:
            raise IngestError(f"archive refused: more than {limits.max_members} members")
        for info in infos:
            path = _check_name(info.filename)
            mode = info.external_attr >> 16
            kind = stat.S_IFMT(mode)
            if kind == stat.S_IFLNK:
                raise IngestError(f"archive refused: member {info.filename!r} is a link")
            if kind in (stat.S_IFCHR, stat.S_IFBLK, stat.S_IFIFO, stat.S_IFSOCK):
                raise IngestError(f"archive refused: member {info.filename!r} is a device or FIFO")
            if info.flag_bits & 0x1:
                raise IngestError(f"archive refused: member {info.filename!r} is encrypted")
            collector.count(path, 0 if info.is_dir() else info.file_size)
            collector.path_only(path)
        for info in infos:
            path = _check_name(info.filename)
            if info.is_dir() or not collector.wanted(path):
                continue
            collector.check_member_size(path, info.file_size)
            try:
                with archive.open(info) as member:
                    bounded = _ZipMember(member, info, limits)
                    try:
                        mtime = datetime(*info.date_time, tzinfo=UTC)
                    except ValueError:
                        mtime = None
                    collector.read_member(path, bounded, mtime)
                    collector.inflated += bounded.size
            except (
                zipfile.BadZipFile,
                zlib.error,
                EOFError,
                NotImplementedError,
                RuntimeError,
            ) as exc:
                raise IngestError(f"not a readable zip archive: {exc}") from None
            if collector.inflated > limits.max_uncompressed:
                raise IngestError(
                    f"archive refused: it expands beyond {limits.max_uncompressed // MiB} MB "
                    "(zip bomb?)"
                )
    if not infos:
        raise IngestError(UNSUPPORTED)
    return collector.contents("zip")


class _ZipMember(_ReadStream):
    """A zip member's stream that counts what inflating really yields: headers can lie."""

    def __init__(self, member: IO[bytes], info: zipfile.ZipInfo, limits: Limits) -> None:
        super().__init__()
        self._member = member
        self._name = info.filename
        self._bound = limits.max_member_bytes
        self._ratio = limits.max_zip_ratio
        self._floor = max(info.compress_size, 1) * limits.max_zip_ratio
        self.size = 0

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0 or size > MiB:
            size = MiB
        chunk = self._member.read(size)
        self.size += len(chunk)
        if self.size > self._bound:
            raise IngestError(
                f"archive refused: {self._name} inflates beyond {self._bound // MiB} MB"
            )
        if self.size > MiB and self.size > self._floor:
            raise IngestError(
                f"archive refused: {self._name} inflates more than "
                f"{self._ratio}x its compressed size (zip bomb?)"
            )
        return chunk
