"""Which e2e run a file holds: its content identity, from what the JUnit reader kept.

The JUnit reader (junit.py) already visits every testcase, suite and property for the
report; as it goes it keeps, in a :class:`JUnitScan`, what identifies the run and what the
evidence policy asks of the file itself (contract: Evidence policy, *Once* and *The file's
word over the submitter's*):

- every testcase as one record (name, JUnit-level outcome, time as written), so that a run
  is recognised by its content whatever the compression, the container, the plugin it is
  sent for or the bytes around it (whitespace, comments, quoting, entities, properties, the
  order of attributes and of testcases);
- the testsuite ``timestamp`` and ``time`` attributes;
- the ginkgo suite properties (``DryRun``, ``FocusStrings``, ``SkipStrings``,
  ``LabelFilter``; the project's export writes ``source``/``run_id``/``kubernetes_version``).

The first ginkgo v2 timeline stamp (``@ 05/01/24 14:20:30``, in the report entries ginkgo
writes into ``system-err``, text the reader does not read) is looked for in the bytes as
they stream by (:class:`StampTee`), until one is found.

Identity v4: no second pass over the bytes. A record costs the reader one string per
testcase; the identity sorts them once and hashes them under one SHA-256.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from dashboard.domain.ingest.limits import Readable

_GINKGO_STAMP = re.compile(rb" @ (\d\d)/(\d\d)/(\d\d) (\d\d):(\d\d):(\d\d)")
_STAMP_OVERLAP = 24  # a stamp split between two chunks is still found
MAX_PROPERTIES = 200
PROPERTY_VALUE = 2000

# Between the fields of a record and between records: control characters XML 1.0 does not
# allow in a document, not even as character references, so no name or time contains them.
FIELD = "\x1f"
_RECORDS = "\x1e".join


@dataclass
class JUnitScan:
    """What identifies the run in one JUnit document (or several, merged)."""

    parts: list[list[str]] = field(default_factory=list)  # each document's testcase records
    sctp_names: list[str] = field(default_factory=list)  # the SCTP testcases' names
    timestamps: list[str] = field(default_factory=list)
    suite_times: list[float] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)
    ginkgo_time: datetime | None = None
    _digests: dict[tuple[str, int, int], bytes] = field(
        default_factory=dict, repr=False, compare=False
    )
    _sorted_records: tuple[tuple[str, int, int] | None, str] = field(
        default_factory=lambda: (None, ""), repr=False, compare=False
    )

    @property
    def count(self) -> int:
        return sum(len(part) for part in self.parts)

    @property
    def seconds(self) -> float | None:
        """The testsuites' own total time (their ``time`` attributes); None when none says."""
        return sum(self.suite_times) if self.suite_times else None

    def digest(self, kind: str) -> bytes:
        """The documents' testcases under one SHA-256: the same whatever their order and
        however they are split into documents. ``cases``: the whole records, sorted;
        ``names``: how many testcases there are and the SCTP testcases' names, sorted (what a
        run with its outcomes or times edited keeps: the near identity. The thousands of other
        names are in ``cases`` already; cutting them out of it again cost a quarter of the
        identity)."""
        key = (kind, len(self.parts), self.count)
        if key not in self._digests:  # the near identity is asked for twice (suite key, near id)
            if kind == "names":
                joined = f"{self.count}\x1e" + _RECORDS(sorted(self.sctp_names))
            else:
                joined = self._joined()
            self._digests[key] = hashlib.sha256(joined.encode("utf-8", "surrogatepass")).digest()
        return self._digests[key]

    def _joined(self) -> str:
        """The records sorted and joined, once for both kinds (until documents are merged in)."""
        key = ("sorted", len(self.parts), self.count)
        if self._sorted_records[0] != key:
            self._sorted_records = (key, _RECORDS(sorted(r for part in self.parts for r in part)))
        return self._sorted_records[1]

    def merge(self, other: JUnitScan) -> None:
        self.parts.extend(other.parts)
        self.sctp_names.extend(other.sctp_names)
        self.timestamps.extend(other.timestamps)
        self.suite_times.extend(other.suite_times)
        for key, value in other.properties.items():
            self.properties.setdefault(key, value)
        if other.ginkgo_time and (self.ginkgo_time is None or other.ginkgo_time < self.ginkgo_time):
            self.ginkgo_time = other.ginkgo_time


class StampTee:
    """A readable stream that looks for the first ginkgo timeline stamp in the bytes read
    through it (only until one is found)."""

    def __init__(self, source: Readable) -> None:
        self._source = source
        self._tail = b""
        self.ginkgo_time: datetime | None = None

    def read(self, size: int = -1) -> bytes:
        chunk = self._source.read(size)
        if chunk and self.ginkgo_time is None:
            data = self._tail + chunk
            if b" @ " in data and (match := _GINKGO_STAMP.search(data)):
                self.ginkgo_time = _ginkgo_time(match)
            self._tail = data[-_STAMP_OVERLAP:]
        return chunk


def _ginkgo_time(match: re.Match[bytes]) -> datetime | None:
    month, day, year, hour, minute, second = (int(g) for g in match.groups())
    try:
        return datetime(2000 + year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        return None


# --- the identity of a run -------------------------------------------------------------


def total_seconds(scan: JUnitScan) -> float | None:
    """The testsuites' total time, as they state it (None when none does)."""
    return scan.seconds


def content_id(scan: JUnitScan) -> str:
    """One e2e run, whatever the bytes around it: its testcases (name, outcome, time as
    written, in any order) and its testsuite timestamps. Properties (``emulated`` among them),
    whitespace, comments, other elements, the order of testcases and documents, and the
    compression or container are not part of it."""
    digest = hashlib.sha256(b"sctp-dashboard run identity v4\n")
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
    digest = hashlib.sha256(b"sctp-dashboard near identity v5\n")
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
