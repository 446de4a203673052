"""Streaming reader for e2e JUnit XML (ginkgo v1 and v2 shapes).

One pass with expat's push parser, fed 64 KB at a time from the (decompressing) stream.
No tree is built: the handlers keep counters, the attributes of the few elements that
matter (``testsuite@timestamp``, the ``emulated`` property, testcase names) and at most
``_MAX_REASON`` characters of a failure or skip text, so a 50 MB report, a million
``<property>`` children or a 40 MB failure message cost a few megabytes at most. The one
thing expat holds whole is a single token (a tag with its attributes, or a text run), so
the feeder refuses the file once expat holds more than ``Limits.max_xml_token_bytes``
it has not reported (a tag, comment or processing instruction: text is passed over as it
comes, so a long text node costs nothing).

Python runs once per element, at its start tag (the element and depth limits, the
testcase's outcome children); end tags are counted by a C-level ``list.append`` except
within the few SCTP testcases, and character data reaches Python only for an SCTP
testcase's failure or skip text (_Reader). A non-SCTP testcase is counted when the next
element outside it starts, or at the end of the document.

As defusedxml does, a DTD, entity declarations and external references are refused.
Only names that mention SCTP are normalised and looked up: every catalog name does, and
it keeps 7,000 other names off the slow path. Names are cut to ``Limits.max_name_chars``
before any matching, so name handling is linear in the file size.

How ginkgo marks a test the run did not select (its focus/skip) — read from real files:
ginkgo v2 writes ``status="skipped"`` with ``<skipped message="skipped">`` and nothing
else (all 6,795 unselected specs of the real v1.30 conformance JUnit); a spec that called
``Skip(reason)`` gets ``<skipped message="skipped - reason">`` and ``[SKIPPED] reason`` in
its text. ginkgo v1 writes a bare ``<skipped/>`` for unselected specs and, from v1.12 on,
a message for in-spec skips. The unselected ones are ``not_run`` (no evidence either way),
never ``skipped`` (which means the environment could not run the test); pending specs too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import NoReturn
from xml.parsers import expat

from dashboard.domain.ingest.errors import IngestError
from dashboard.domain.ingest.identity import FIELD, MAX_PROPERTIES, PROPERTY_VALUE, JUnitScan
from dashboard.domain.ingest.limits import Deadline, Limits, Readable
from dashboard.domain.ingest.upstream_names import catalog_key, normalise

# ginkgo v2 writes status=; anything that is not a pass or a skip is a failure for us.
_FAILED_STATUSES = frozenset({"failed", "timedout", "aborted", "panicked", "interrupted"})
_SKIPPED_STATUSES = frozenset({"skipped", "pending"})
# Suite-level nodes are testcases in ginkgo v2's JUnit but not "Specs" in its summary: the
# names that start with one of these.
_SUITE_NODE_PREFIXES = (
    "[BeforeSuite]",
    "[AfterSuite]",
    "[SynchronizedBeforeSuite]",
    "[SynchronizedAfterSuite]",
    "[ReportBeforeSuite]",
    "[ReportAfterSuite]",
    "[DeferCleanup (Suite)]",
)
_MAX_REASON = 2000
_MAX_DEPTH = 64
_CHUNK = 64 * 1024
NOT_SELECTED = "not selected by the run's focus/skip (ginkgo recorded no reason)"
# Testsuite properties we read: the project's own export writes them (export.py).
_PROPERTIES = ("emulated", "proxier_detected", "cni_detected")


@dataclass
class Case:
    """One SCTP-related testcase: its normalised name, catalog key (or None), outcome."""

    name: str
    key: str | None
    outcome: str  # passed | failed | skipped | not_run
    reason: str


@dataclass
class JUnitResult:
    testcase_count: int = 0
    totals: dict[str, int] = field(default_factory=lambda: _zero())
    spec_totals: dict[str, int] = field(default_factory=lambda: _zero())
    cases: list[Case] = field(default_factory=list)
    run_at: datetime | None = None  # the earliest testsuite@timestamp
    properties: dict[str, str] = field(default_factory=dict)
    truncated_names: int = 0
    bad_timestamps: int = 0
    # Suite-level nodes ([SynchronizedBeforeSuite] …) that failed: the suite never really ran.
    suite_failures: list[str] = field(default_factory=list)
    # What identifies the run (identity.py), kept as the reader goes; merged by the caller
    # for the documents it chooses, not by merge().
    scan: JUnitScan = field(default_factory=JUnitScan, repr=False)

    def merge(self, other: JUnitResult) -> None:
        self.testcase_count += other.testcase_count
        for name in self.totals:
            self.totals[name] += other.totals[name]
            self.spec_totals[name] += other.spec_totals[name]
        self.cases.extend(other.cases)
        if other.run_at and (self.run_at is None or other.run_at < self.run_at):
            self.run_at = other.run_at
        for key, value in other.properties.items():
            self.properties.setdefault(key, value)
        self.truncated_names += other.truncated_names
        self.bad_timestamps += other.bad_timestamps
        self.suite_failures.extend(other.suite_failures)

    @property
    def emulated(self) -> bool:
        return self.properties.get("emulated", "").strip().lower() == "true"


def _zero() -> dict[str, int]:
    return {"passed": 0, "failed": 0, "skipped": 0}


def parse_junit(
    source: Readable,
    label: str = "JUnit file",
    limits: Limits | None = None,
    deadline: Deadline | None = None,
    sctp_cases_before: int = 0,
) -> JUnitResult:
    """Read one JUnit document from a stream; raise IngestError for anything that is not one."""
    limits = limits or Limits()
    reader = _Reader(label, limits, sctp_cases_before)
    parser = reader.parser
    parse = parser.Parse
    read = source.read
    max_member = limits.max_member_bytes
    max_token = limits.max_xml_token_bytes
    fed = 0
    try:
        while True:
            chunk = read(_CHUNK)
            if deadline is not None:
                deadline.check()
            if not chunk:
                parse(b"", True)
                break
            fed += len(chunk)
            if fed > max_member:
                raise IngestError(f"{label} refused: it is larger than {max_member >> 20} MB")
            parse(chunk, False)
            # What expat holds without having reported it: a tag, comment or PI it buffers
            # whole (text is reported as it comes, handler or none). After Parse returns,
            # CurrentByteIndex is where that unfinished token starts; past the bound, the
            # file is refused.
            if fed - parser.CurrentByteIndex > max_token:
                raise IngestError(
                    f"{label} refused: one tag, comment or processing instruction in it is "
                    f"longer than {max_token >> 20} MB"
                )
    except expat.ExpatError as exc:
        raise IngestError(
            f"{label} is not well-formed XML: {expat.ErrorString(exc.code)}: "
            f"line {exc.lineno}, column {exc.offset}"
        ) from None
    if reader.root is None:
        raise IngestError(f"{label} is not well-formed XML: no element found")
    reader.close_case()
    if reader.result.testcase_count == 0:
        raise IngestError(f"{label} is a JUnit report with no testcases")
    return reader.result


# A testcase's direct children that decide its outcome: failure and error mark it failed,
# skipped skipped (the bits of _Reader.kids).
_KID_BITS = {"failure": 1, "error": 1, "skipped": 2}


class _Reader:
    """expat handlers that keep only what the report needs.

    One Python call per element, at its start tag. End tags are recorded by a C-level
    ``list.append`` (the depth of an element is the start tags so far less the end tags),
    except within an SCTP testcase, whose end and whose failure or skip text need Python
    (:meth:`_end_kept`). Character data is reported only while such a text is read. A
    non-SCTP testcase is kept as three values (status, suite node or not, the outcome
    children it has) and counted when the next element outside it starts, or at the end.
    """

    __slots__ = (
        "capture_depth",
        "case",
        "case_depth",
        "elements",
        "ends",
        "kids",
        "label",
        "limits",
        "max_elements",
        "max_name",
        "name",
        "parser",
        "records",
        "result",
        "root",
        "scan",
        "sctp_before",
        "status",
        "suite_node",
        "text",
        "text_len",
        "time",
    )

    def __init__(self, label: str, limits: Limits, sctp_cases_before: int) -> None:
        self.label = label
        self.limits = limits
        self.result = JUnitResult()
        self.root: str | None = None
        self.elements = 0  # start tags so far
        self.ends: list[str] = []  # end tags so far (expat appends them; bounded by elements)
        self.max_elements = limits.max_xml_elements
        self.max_name = limits.max_name_chars
        # The open testcase: its depth (0: none), lower-cased status, the outcome children
        # seen (_KID_BITS), whether it is a suite node; for an SCTP one, ``case`` holds its
        # name, status and first failure/error/skipped (message, type, text) as _outcome reads.
        self.case_depth = 0
        self.name = ""
        self.time = ""
        self.status = ""
        self.kids = 0
        self.suite_node = False
        self.case: dict[str, object] | None = None
        self.text: list[str] = []  # the failure/skip text being read (SCTP testcases only)
        self.text_len = 0
        self.capture_depth = 0  # the depth of the element whose text is read (0: none)
        self.sctp_before = sctp_cases_before
        self.scan = self.result.scan
        self.records: list[str] = []  # this document's testcases, as identity.py keys them
        self.scan.parts.append(self.records)
        parser = expat.ParserCreate()
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        parser.StartDoctypeDeclHandler = self._forbidden
        parser.EntityDeclHandler = self._forbidden
        parser.UnparsedEntityDeclHandler = self._forbidden
        parser.ExternalEntityRefHandler = self._forbidden
        parser.NotationDeclHandler = self._forbidden
        parser.StartElementHandler = self._root  # then _start, from the second element on
        parser.EndElementHandler = self.ends.append
        # Text arrives in pieces of up to 64 KB (not one call per line), and only while
        # CharacterDataHandler is set: while an SCTP testcase's failure or skip text is read.
        parser.buffer_text = True
        parser.buffer_size = _CHUNK
        self.parser = parser

    def _forbidden(self, *args: object) -> NoReturn:
        raise IngestError(
            f"{self.label} was refused: XML with a DTD, entity declarations or external "
            "references is not accepted"
        )

    def _root(self, tag: str, attrs: dict[str, str]) -> None:
        self.root = tag
        if tag not in ("testsuites", "testsuite"):
            raise IngestError(
                f"{self.label} is XML but not a JUnit report "
                f"(root element <{tag[:100]}>, expected <testsuites> or <testsuite>)"
            )
        self.parser.StartElementHandler = self._start
        self._start(tag, attrs)

    def _start(self, tag: str, attrs: dict[str, str]) -> None:
        elements = self.elements = self.elements + 1
        depth = elements - len(self.ends)  # this element's (the root's is 1)
        if elements > self.max_elements or depth > _MAX_DEPTH:
            self._too_large(depth)
        case_depth = self.case_depth
        if case_depth:
            if depth > case_depth:  # inside the open testcase
                if depth == case_depth + 1 and tag in _KID_BITS:
                    self.kids |= _KID_BITS[tag]
                    case = self.case
                    if case is not None and tag not in case:
                        # The first of each kind, as ElementTree's find(); its text is read
                        # (up to _MAX_REASON characters) until its end tag.
                        case[tag] = attrs.get("message") or ""
                        case[f"{tag}_type"] = attrs.get("type") or ""
                        self.text, self.text_len = [], 0
                        case[f"{tag}_text"] = self.text
                        self.capture_depth = depth
                        self.parser.CharacterDataHandler = self._data
                return
            self.close_case()  # it ended before this element
        if tag == "testcase":
            name = attrs.get("name") or ""
            status = attrs.get("status") or ""
            if len(name) > self.max_name:
                name = name[: self.max_name]
                self.result.truncated_names += 1
            self.case_depth = depth
            self.name = name
            self.time = attrs.get("time") or ""
            self.status = status.lower()
            self.kids = 0
            self.suite_node = name.startswith(_SUITE_NODE_PREFIXES)
            # Only the SCTP cases are kept (with their failure and skip texts); the
            # thousands of others count by their JUnit-level outcome alone.
            if "sctp" in name.lower():
                self.case = {"name": name, "status": status}
                self.scan.sctp_names.append(name)
                self.parser.EndElementHandler = self._end_kept
        elif tag == "testsuite":
            self._suite(attrs)
        elif tag == "property":
            name = attrs.get("name") or ""
            value = attrs.get("value") or ""
            if name in _PROPERTIES and name not in self.result.properties:
                self.result.properties[name] = value[:100]
            properties = self.scan.properties
            if name and name not in properties and len(properties) < MAX_PROPERTIES:
                properties[name[:100]] = value[:PROPERTY_VALUE]

    def _too_large(self, depth: int) -> NoReturn:
        if depth > _MAX_DEPTH:
            raise IngestError(f"{self.label} refused: elements nested deeper than {_MAX_DEPTH}")
        raise IngestError(f"{self.label} refused: more than {self.max_elements:,} XML elements")

    def _data(self, text: str) -> None:
        if self.text_len < _MAX_REASON:
            piece = text[: _MAX_REASON - self.text_len]
            self.text.append(piece)
            self.text_len += len(piece)

    def _end_kept(self, tag: str) -> None:
        """The end tags within an SCTP testcase (and its own)."""
        depth = self.elements - len(self.ends)  # the element that ends
        self.ends.append(tag)
        if depth == self.case_depth:
            self.parser.EndElementHandler = self.ends.append
            self.close_case()
        elif depth == self.capture_depth:
            self.capture_depth = 0
            self.parser.CharacterDataHandler = None

    def close_case(self) -> None:
        """Count the testcase that ended (if one is open): an SCTP one is kept."""
        if not self.case_depth:
            return
        self.case_depth = 0
        result = self.result
        case = self.case
        if case is not None:
            self.case = None
            raw, outcome, reason = _outcome(case)
        else:
            # _raw_outcome's conditions, on the status and the children's bits.
            status = self.status
            kids = self.kids
            if status in _FAILED_STATUSES or (kids & 1 and status not in _SKIPPED_STATUSES):
                raw = "failed"
            elif status in _SKIPPED_STATUSES or kids & 2:
                raw = "skipped"
            else:
                raw = "passed"
        self.records.append(f"{self.name}{FIELD}{raw}{FIELD}{self.time}")
        result.testcase_count += 1
        result.totals[raw] += 1
        if not self.suite_node:
            result.spec_totals[raw] += 1
        elif raw == "failed" and len(result.suite_failures) < 20:
            result.suite_failures.append(self.name)
        if case is None:
            return
        if len(result.cases) + self.sctp_before >= self.limits.max_sctp_cases:
            raise IngestError(
                f"{self.label} refused: more than {self.limits.max_sctp_cases} SCTP "
                "testcases (a real run has 13 per JUnit file)"
            )
        normalised = normalise(str(case["name"]))
        result.cases.append(Case(normalised, catalog_key(normalised), outcome, reason))

    def _suite(self, attrs: dict[str, str]) -> None:
        value = attrs.get("timestamp")
        if value:
            self.scan.timestamps.append(value.strip()[:40])
        try:
            self.scan.suite_times.append(float(attrs.get("time") or ""))
        except ValueError:
            pass
        self._timestamp(value)

    def _timestamp(self, value: str | None) -> None:
        if not value:
            return
        try:
            when = datetime.fromisoformat(value.strip()[:40].replace("Z", "+00:00"))
        except ValueError:
            self.result.bad_timestamps += 1
            return
        if when.tzinfo is None:  # ginkgo writes local time without an offset; CI runs in UTC
            when = when.replace(tzinfo=UTC)
        if self.result.run_at is None or when < self.result.run_at:
            self.result.run_at = when


def _text(case: dict[str, object], tag: str) -> str:
    parts = case.get(f"{tag}_text")
    return "".join(parts) if isinstance(parts, list) else ""


def _raw_outcome(case: dict[str, object]) -> str:
    """The JUnit-level outcome alone (passed|failed|skipped): _outcome's first answer."""
    status = str(case["status"]).lower()
    failed = "failure" in case or "error" in case
    if status in _FAILED_STATUSES or (failed and status not in _SKIPPED_STATUSES):
        return "failed"
    if status in _SKIPPED_STATUSES or "skipped" in case:
        return "skipped"
    return "passed"


def _outcome(case: dict[str, object]) -> tuple[str, str, str]:
    """(JUnit-level outcome passed|failed|skipped, catalog-level outcome, reason)."""
    raw = _raw_outcome(case)
    status = str(case["status"]).lower()
    if raw == "failed":
        failure_tag = "failure" if "failure" in case else ("error" if "error" in case else None)
        kind = status if status in _FAILED_STATUSES else "failed"
        text = ""
        if failure_tag:
            kind = str(case[f"{failure_tag}_type"]) or kind
            text = str(case[failure_tag]) or _text(case, failure_tag)
        return "failed", "failed", _reason(kind, text)
    if raw == "skipped":
        message = str(case.get("skipped") or "") or _text(case, "skipped")
        outcome, reason = _skip(message, _text(case, "skipped"), status)
        return "skipped", outcome, reason
    return "passed", "passed", ""


def _reason(kind: str, text: str) -> str:
    text = " ".join(text.split())
    if len(text) > _MAX_REASON:
        text = text[:_MAX_REASON] + "…"
    return f"{kind}: {text}" if text else kind


def _skip(message: str, text: str, status: str) -> tuple[str, str]:
    """skipped (with the reason ginkgo recorded) or not_run (not selected, pending)."""
    if status == "pending":
        return "not_run", "pending (marked pending in the suite, not run)"
    message = " ".join(message.split())
    for prefix in ("skipped - ", "skipped: "):
        if message.lower().startswith(prefix):
            message = message[len(prefix) :]
            break
    if not message or message.lower() == "skipped":
        # ginkgo v2 also writes "[SKIPPED] reason" into the text of an in-spec skip.
        marker = text.find("[SKIPPED]")
        if marker < 0:
            return "not_run", NOT_SELECTED
        message = " ".join(text[marker + len("[SKIPPED]") :].split()) or "skipped in the spec"
    if len(message) > _MAX_REASON:
        message = message[:_MAX_REASON] + "…"
    return "skipped", message
