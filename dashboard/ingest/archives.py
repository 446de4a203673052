"""Containers a result file may come in, opened in memory with every size bounded.

Nothing is extracted to disk. Tarballs are read as a stream (``tarfile`` mode ``r|``)
through a gunzip reader that counts what it inflates; zips are read from their
central directory with the bytes actually inflated counted, not the sizes the headers
claim. Any member that could escape an extraction directory (absolute path, ``..``),
any link, device or FIFO refuses the whole archive: a results tarball never needs one,
and the next tool that does extract it should not meet one either.
"""

from __future__ import annotations

import io
import json
import re
import stat
import tarfile
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import IO, Any

from .errors import UNSUPPORTED, IngestError
from .limits import MiB, Limits

_SONOBUOY_RESULTS = r"^(?:[^/]+/)?plugins/e2e/results/(global/)?"
_SONOBUOY_JUNIT = re.compile(_SONOBUOY_RESULTS + r"junit[^/]*\.xml$")
_SONOBUOY_LOG = re.compile(_SONOBUOY_RESULTS + r"e2e\.log$")
_TOP_JUNIT = re.compile(r"^(?:([^/]+)/)?junit[^/]*\.xml$")
_TOP_LOG = re.compile(r"^(?:([^/]+)/)?e2e\.log$")
_SERVER_VERSION = re.compile(r"^(?:[^/]+/)?serverversion\.json$")
_MAX_META_HEADER = MiB  # pax / GNU long-name headers are a few hundred bytes


@dataclass
class Contents:
    """What an archive gave us: JUnit documents (path, bytes) and the side files."""

    kind: str
    junit: list[tuple[str, bytes]] = field(default_factory=list)
    e2e_log: bytes | None = None
    server_version: str | None = None


# --- reading the upload ---------------------------------------------------------------


def read_bounded(data: bytes | IO[bytes], limits: Limits) -> bytes:
    """The upload as bytes; 413 as soon as it exceeds ``limits.max_bytes``."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        if len(data) > limits.max_bytes:
            raise _too_large(limits)
        return bytes(data)
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = data.read(MiB)
        if not chunk:
            break
        size += len(chunk)
        if size > limits.max_bytes:
            raise _too_large(limits)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limits: Limits) -> IngestError:
    return IngestError(f"file too large: the limit is {limits.max_bytes // MiB} MB", 413)


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

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class BoundedGunzip(_ReadStream):
    """Inflates gzip (several members too) on demand, refusing past ``limit`` bytes."""

    _CHUNK = 64 * 1024

    def __init__(self, compressed: bytes, limit: int) -> None:
        super().__init__()
        self._src = memoryview(compressed)
        self._pos = 0
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
                rest = self._inflater.unused_data + bytes(self._src[self._pos :])
                self._pos = len(self._src)
                if not rest.startswith(b"\x1f\x8b"):  # trailing padding: the end
                    break
                self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
                self._pending = rest
            feed = self._pending or self._inflater.unconsumed_tail or self._next_chunk()
            self._pending = b""
            if not feed:
                raise IngestError("the gzip stream is truncated")
            try:
                piece = self._inflater.decompress(feed, size - len(out))
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

    def _next_chunk(self) -> bytes:
        chunk = bytes(self._src[self._pos : self._pos + self._CHUNK])
        self._pos += len(chunk)
        return chunk


class Prefixed(_ReadStream):
    """A stream with some already-read bytes put back in front."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
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
    """Keeps the members that matter, whatever the layout, until the archive is read."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.members = 0
        self.declared = 0
        self.kept: dict[str, bytes] = {}
        self.kept_bytes = 0

    def count(self, name: str, size: int) -> None:
        self.members += 1
        if self.members > self.limits.max_members:
            raise IngestError(
                f"archive refused: more than {self.limits.max_members} members"
            )
        self.declared += size
        if self.declared > self.limits.max_uncompressed:
            raise IngestError(
                f"archive refused: its members add up to more than "
                f"{self.limits.max_uncompressed // MiB} MB (decompression bomb?)"
            )

    @staticmethod
    def wanted(path: str) -> bool:
        return bool(
            _SONOBUOY_JUNIT.match(path)
            or _SONOBUOY_LOG.match(path)
            or _TOP_JUNIT.match(path)
            or _TOP_LOG.match(path)
            or _SERVER_VERSION.match(path)
        )

    def check_member_size(self, name: str, size: int) -> None:
        if size > self.limits.max_member_bytes:
            raise IngestError(
                f"archive refused: {name} is larger than "
                f"{self.limits.max_member_bytes // MiB} MB"
            )

    def contents(self, container: str) -> Contents:
        return _pick(self.kept, container)


def _pick(kept: dict[str, bytes], container: str) -> Contents:
    sonobuoy = sorted(p for p in kept if _SONOBUOY_JUNIT.match(p))
    if sonobuoy:
        # Sonobuoy 0.20+ writes results/global/; older ones results/ directly.
        global_files = [p for p in sonobuoy if "/results/global/" in f"/{p}"]
        chosen = global_files or sonobuoy
        logs = [p for p in kept if _SONOBUOY_LOG.match(p)]
        contents = Contents(kind="sonobuoy", junit=[(p, kept[p]) for p in chosen])
        contents.e2e_log = kept[sorted(logs)[0]] if logs else None
    else:
        top = sorted(p for p in kept if _TOP_JUNIT.match(p))
        if not top:
            raise IngestError(
                "archive refused: no e2e JUnit (junit_01.xml) found at its top, in one top "
                "directory, or under plugins/e2e/results/"
            )
        directories = {_TOP_JUNIT.match(p).group(1) for p in top}  # type: ignore[union-attr]
        if len(directories) > 1:
            names = ", ".join(sorted(f"{d or '.'}/" for d in directories))
            raise IngestError(
                f"archive refused: JUnit files in several directories ({names}); "
                "submit one run per file"
            )
        (directory,) = directories
        contents = Contents(kind=f"hydrophone-{container}", junit=[(p, kept[p]) for p in top])
        log = f"{directory}/e2e.log" if directory else "e2e.log"
        contents.e2e_log = kept.get(log)
    versions = [p for p in kept if _SERVER_VERSION.match(p)]
    if versions:
        contents.server_version = _server_version_json(kept[sorted(versions)[0]])
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
        return version
    major, minor = info.get("major"), info.get("minor")
    if isinstance(major, str) and isinstance(minor, str):
        return f"v{major}.{minor.rstrip('+')}"
    return None


# --- tar ------------------------------------------------------------------------------


class _SafeTarInfo(tarfile.TarInfo):
    """Refuses oversized pax / GNU long-name headers before tarfile reads them whole."""

    def _proc_pax(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:  # type: ignore[override]
        self._check_meta_size()
        return super()._proc_pax(tarfile_)  # type: ignore[misc]

    def _proc_gnulong(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:  # type: ignore[override]
        self._check_meta_size()
        return super()._proc_gnulong(tarfile_)  # type: ignore[misc]

    def _proc_sparse(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:  # type: ignore[override]
        raise IngestError("archive refused: sparse members are not accepted")

    def _check_meta_size(self) -> None:
        if self.size > _MAX_META_HEADER:
            raise IngestError("archive refused: an oversized tar extended header")


def read_tar(stream: IO[bytes], limits: Limits, container: str) -> Contents:
    collector = _Collector(limits)
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
                collector.count(path, member.size if member.isfile() else 0)
                if member.isfile() and collector.wanted(path):
                    collector.check_member_size(path, member.size)
                    extracted = archive.extractfile(member)
                    if extracted is not None:
                        collector.kept[path] = extracted.read()
    except tarfile.TarError as exc:
        raise IngestError(f"not a readable tar archive: {exc}") from None
    if collector.members == 0:
        raise IngestError(UNSUPPORTED)
    return collector.contents(container)


# --- zip ------------------------------------------------------------------------------


def read_zip(data: bytes, limits: Limits) -> Contents:
    collector = _Collector(limits)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, EOFError) as exc:
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
                raise IngestError(
                    f"archive refused: member {info.filename!r} is a device or FIFO"
                )
            if info.flag_bits & 0x1:
                raise IngestError(f"archive refused: member {info.filename!r} is encrypted")
            collector.count(path, 0 if info.is_dir() else info.file_size)
        for info in infos:
            path = _check_name(info.filename)
            if info.is_dir() or not collector.wanted(path):
                continue
            collector.check_member_size(path, info.file_size)
            collector.kept[path] = _read_zip_member(archive, info, limits)
            collector.kept_bytes += len(collector.kept[path])
            if collector.kept_bytes > limits.max_uncompressed:
                raise IngestError(
                    f"archive refused: it expands beyond {limits.max_uncompressed // MiB} MB "
                    "(zip bomb?)"
                )
    if not infos:
        raise IngestError(UNSUPPORTED)
    return collector.contents("zip")


def _read_zip_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limits: Limits) -> bytes:
    # Count what inflating really yields: headers can lie about sizes.
    bound = limits.max_member_bytes
    ratio_floor = max(info.compress_size, 1) * limits.max_zip_ratio
    chunks: list[bytes] = []
    size = 0
    try:
        with archive.open(info) as member:
            while chunk := member.read(MiB):
                size += len(chunk)
                if size > bound:
                    raise IngestError(
                        f"archive refused: {info.filename} inflates beyond {bound // MiB} MB"
                    )
                if size > MiB and size > ratio_floor:
                    raise IngestError(
                        f"archive refused: {info.filename} inflates more than "
                        f"{limits.max_zip_ratio}x its compressed size (zip bomb?)"
                    )
                chunks.append(chunk)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
        raise IngestError(f"not a readable zip archive: {exc}") from None
    return b"".join(chunks)
