"""Which e2e run a file holds: its content identity, read in a second, cheap pass.

The JUnit parser (junit.py) reads the file for the report; this module sees the same bytes
through a tee (:class:`Tee`) and keeps only what identifies the run and what the evidence
policy asks of the file itself (contract: Evidence policy, *Once* and *The file's word over
the submitter's*):

- every testcase's name, outcome and time, so that a run is recognised by its content
  whatever the compression, the container, the plugin it is sent for or the bytes around it
  (whitespace, comments, properties, the order of the testcases);
- the testsuite ``timestamp`` attributes and the first ginkgo v2 timeline stamp
  (``@ 05/01/24 14:20:30``, the report entries ginkgo writes into ``system-err``);
- the ginkgo suite properties (``DryRun``, ``FocusStrings``, ``SkipStrings``,
  ``LabelFilter``; the project's export writes ``source``/``run_id``/``kubernetes_version``).

Tags are found with one regular expression over each chunk (comments and CDATA are
skipped as XML does), so the pass costs a fraction of the parse: the expat reader already
refused anything that is not well-formed JUnit before a report is made.
"""

from __future__ import annotations

import hashlib
import html
import operator
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from dashboard.domain.ingest.limits import Readable

_TOKEN = re.compile(
    rb"<!--.*?-->|<!\[CDATA\[.*?\]\]>|<(/?)(testsuite|testcase|failure|error|skipped|property)\b([^>]*)>",
    re.S,
)
_FAST_CASE = re.compile(
    rb'<testcase\s+name="([^"]*)"\s+classname="[^"]*"(?:\s+status="([^"]*)")?\s+time="([^"]*)"\s*'
    rb"(?:/>|>\s*(?:<(failure|error|skipped)\b)?)"
)
_SUITE_TAG = re.compile(rb"<(testsuite|property)\b([^>]*)>")
_ATTR = re.compile(rb"""\b(name|status|time|timestamp|value)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_GINKGO_STAMP = re.compile(rb" @ (\d\d)/(\d\d)/(\d\d) (\d\d):(\d\d):(\d\d)")
_FAILED = frozenset({b"failed", b"timedout", b"aborted", b"panicked", b"interrupted"})
_SKIPPED = frozenset({b"skipped", b"pending"})
_MAX_TAIL = 1 << 20  # expat already refuses longer tokens (Limits.max_xml_token_bytes)
_MAX_PROPERTIES = 200
_PROPERTY_VALUE = 2000


_NAME = operator.itemgetter(0)
# One testcase as written: (name, status attribute, time attribute, first child tag).
Case = tuple[bytes, bytes, bytes, bytes]


_MASK = (1 << 256) - 1
_DIGEST = operator.methodcaller("digest")
_JOIN = b"\x1f".join


@dataclass
class _Digests:
    """One JUnit document's testcases, hashed as they stream by (nothing kept per case).

    A multiset hash: the sum of the cases' own hashes (mod 2**256), so the order in which a
    file lists its testcases (or a tarball its documents) is not part of the identity, while
    every case, repeated ones included, is."""

    cases: int = 0  # name, status, time, first child
    names: int = 0  # names only
    count: int = 0

    def add(self, found: list[Case]) -> None:
        if not found:
            return
        # Each case's SHA-256 as a big-endian integer (int.from_bytes's default order), summed
        # in C-level loops.
        cases = sum(map(int.from_bytes, map(_DIGEST, map(hashlib.sha256, map(_JOIN, found)))))
        names = sum(map(int.from_bytes, map(_DIGEST, map(hashlib.sha256, map(_NAME, found)))))
        self.cases = (self.cases + cases) & _MASK
        self.names = (self.names + names) & _MASK
        self.count += len(found)


@dataclass
class JUnitScan:
    """What the identity pass kept of one JUnit document (or several, merged)."""

    parts: list[_Digests] = field(default_factory=list)
    timestamps: list[str] = field(default_factory=list)
    suite_times: list[float] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)
    ginkgo_time: datetime | None = None
    complete: bool = True  # False when a token was too long to scan (never for real files)

    @property
    def count(self) -> int:
        return sum(part.count for part in self.parts)

    @property
    def seconds(self) -> float | None:
        """The testsuites' own total time (their ``time`` attributes); None when none says."""
        return sum(self.suite_times) if self.suite_times else None

    def digest(self, kind: str) -> bytes:
        """The documents' digests of one kind (cases, names), combined whatever their order."""
        total: int = sum(getattr(part, kind) for part in self.parts)
        return (total & _MASK).to_bytes(32, "big")

    def merge(self, other: JUnitScan) -> None:
        self.parts.extend(other.parts)
        self.timestamps.extend(other.timestamps)
        self.suite_times.extend(other.suite_times)
        for key, value in other.properties.items():
            self.properties.setdefault(key, value)
        if other.ginkgo_time and (self.ginkgo_time is None or other.ginkgo_time < self.ginkgo_time):
            self.ginkgo_time = other.ginkgo_time
        self.complete = self.complete and other.complete


class Scanner:
    """Fed the document's bytes in order; :attr:`scan` holds the result.

    The fast path is one ``findall`` per chunk for the attribute order every known writer
    uses (ginkgo v1 and v2, this project's export: ``name``, ``classname``, ``status``,
    ``time``); a chunk with any other testcase shape, or with a comment or CDATA, goes through
    the general tokenizer. The last testcase of a chunk waits for the next one, so that its
    first child (failure, error, skipped) is seen with it.
    """

    def __init__(self) -> None:
        self.scan = JUnitScan()
        self._digests = _Digests()
        self.scan.parts.append(self._digests)
        self._tail = b""
        self._case: dict[str, Any] | None = None

    def feed(self, chunk: bytes) -> None:
        data = self._tail + chunk if self._tail else chunk
        cut = _safe_end(data)
        if cut == 0 and len(data) > _MAX_TAIL:
            cut = len(data)  # one testcase block this long: read it as it stands
        self._region(data[:cut])
        self._tail = data[cut:]
        # Ginkgo v2 report entries date a file whose testsuite timestamp was taken out.
        if self.scan.ginkgo_time is None and not self.scan.timestamps and b" @ " in chunk:
            if match := _GINKGO_STAMP.search(data[:cut]):
                self.scan.ginkgo_time = _ginkgo_time(match)

    def close(self) -> JUnitScan:
        if self._tail:
            self._region(self._tail)
            if self.scan.ginkgo_time is None and (match := _GINKGO_STAMP.search(self._tail)):
                self.scan.ginkgo_time = _ginkgo_time(match)
            self._tail = b""
        if self._case is not None:
            self._finish(self._case)
            self._case = None
        return self.scan

    def _region(self, data: bytes) -> None:
        if not data:
            return
        if self._case is None:
            found = _FAST_CASE.findall(data)
            if len(found) == data.count(b"<testcase"):
                # A suite's timestamp and properties come before its testcases: once they
                # flow, no region is searched for them again (a later suite of the same
                # document adds nothing the first one does not say).
                if not self._digests.count:
                    self._suite_tags(data)
                self._fast(found)
                return
        self._tokens(data)

    def _fast(self, found: list[Case]) -> None:
        self._digests.add(found)

    def _suite_tags(self, data: bytes) -> None:
        if b"<testsuite" not in data and b"<property" not in data:
            return
        for tag, attrs in _SUITE_TAG.findall(data):
            if tag == b"property":
                self._property(attrs)
                continue
            self._suite(attrs)

    def _suite(self, attrs: bytes) -> None:
        found = _attrs(attrs)
        if stamp := found.get("timestamp"):
            self.scan.timestamps.append(stamp.decode("utf-8", "replace").strip()[:40])
        try:
            self.scan.suite_times.append(float(found.get("time", b"")))
        except ValueError:
            pass

    def _property(self, attrs: bytes) -> None:
        if len(self.scan.properties) >= _MAX_PROPERTIES:
            return
        prop = _attrs(attrs)
        name = prop.get("name", b"").decode("utf-8", "replace")[:100]
        if name and name not in self.scan.properties:
            value = prop.get("value", b"").decode("utf-8", "replace")
            self.scan.properties[name] = _text(value)[:_PROPERTY_VALUE]

    def _tokens(self, data: bytes) -> None:
        for match in _TOKEN.finditer(data):
            tag = match.group(2)
            if tag is None:  # a comment or CDATA section
                continue
            closing, attrs = match.group(1), match.group(3)
            if tag == b"testcase":
                if self._case is not None:
                    self._finish(self._case)
                    self._case = None
                if closing:
                    continue
                case = _attrs(attrs)
                case["child"] = b""
                if attrs.rstrip().endswith(b"/"):
                    self._finish(case)
                else:
                    self._case = case
            elif self._case is not None:
                if not closing and tag in (b"failure", b"error", b"skipped"):
                    if not self._case["child"]:
                        self._case["child"] = tag
            elif closing:
                continue
            elif tag == b"testsuite":
                self._suite(attrs)
            elif tag == b"property":
                self._property(attrs)

    def _finish(self, case: dict[str, Any]) -> None:
        self._digests.add(
            [(case.get("name", b""), case.get("status", b""), case.get("time", b""), case["child"])]
        )


def _safe_end(data: bytes) -> int:
    """Where the complete tokens of ``data`` end: before the last testcase (its first child
    may be in the next chunk), an unfinished tag, comment or CDATA."""
    cut = len(data)
    case = data.rfind(b"<testcase")
    if case >= 0:
        cut = case
    last = data.rfind(b"<", 0, cut)
    if last >= 0 and data.find(b">", last, cut) < 0:
        cut = last
    if b"<!" in data[cut - 4096 if cut > 4096 else 0 :]:  # a comment or CDATA left open
        comment = data.rfind(b"<!--", 0, cut)
        if comment >= 0 and data.find(b"-->", comment + 4) < 0:
            cut = comment
        cdata = data.rfind(b"<![CDATA[", 0, cut)
        if cdata >= 0 and data.find(b"]]>", cdata + 9) < 0:
            cut = cdata
    return cut


def _attrs(raw: bytes) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for match in _ATTR.finditer(raw):
        key = match.group(1).decode()
        if key not in found:
            found[key] = match.group(2) if match.group(2) is not None else match.group(3)
    return found


def _text(value: str) -> str:
    return html.unescape(value) if "&" in value else value


def _ginkgo_time(match: re.Match[bytes]) -> datetime | None:
    month, day, year, hour, minute, second = (int(g) for g in match.groups())
    try:
        return datetime(2000 + year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        return None


class Tee:
    """A readable stream that shows every byte read through it to a :class:`Scanner`."""

    def __init__(self, source: Readable, scanner: Scanner) -> None:
        self._source = source
        self.scanner = scanner

    def read(self, size: int = -1) -> bytes:
        chunk = self._source.read(size)
        if chunk:
            self.scanner.feed(chunk)
        return chunk


# --- the identity of a run -------------------------------------------------------------


def outcome(case: Case) -> str:
    """passed | failed | skipped, as junit.py reads a testcase."""
    status, child = case[1].lower(), case[3]
    if status in _FAILED or (child in (b"failure", b"error") and status not in _SKIPPED):
        return "failed"
    if status in _SKIPPED or child == b"skipped":
        return "skipped"
    return "passed"


def total_seconds(scan: JUnitScan) -> float | None:
    """The testsuites' total time, as they state it (None when none does)."""
    return scan.seconds


def content_id(scan: JUnitScan) -> str:
    """One e2e run, whatever the bytes around it: its testcases (name, outcome, time, as
    written, in any order) and its testsuite timestamps. Properties (``emulated`` among them),
    whitespace, comments, other elements, the order of testcases and documents, and the
    compression or container are not part of it."""
    digest = hashlib.sha256(b"sctp-dashboard run identity v2\n")
    for stamp in sorted(scan.timestamps):
        digest.update(b"T" + stamp.encode() + b"\n")
    digest.update(scan.digest("cases"))
    return digest.hexdigest()


def near_id(scan: JUnitScan, started: str, nodes: list[str]) -> str:
    """The run without its outcomes: the same suite (testcase names), the same start and the
    same nodes. Two files with this key and different content ids are one run edited.
    Without a start time there is none ("": two runs of one suite would look alike)."""
    if not started:
        return ""
    digest = hashlib.sha256(b"sctp-dashboard near identity v2\n")
    digest.update(b"S" + started.encode() + b"\n")
    for node in sorted(set(nodes)):
        digest.update(b"N" + node.encode("utf-8", "replace") + b"\n")
    digest.update(scan.digest("names"))
    return digest.hexdigest()


def parse_timestamp(text: str) -> datetime | None:
    """A testsuite timestamp or RFC 3339 time; ginkgo writes local time without an offset
    (CI runs in UTC)."""
    try:
        when = datetime.fromisoformat(text.strip()[:40].replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)
