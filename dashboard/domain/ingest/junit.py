"""Streaming reader for e2e JUnit XML (ginkgo v1 and v2 shapes).

One pass with expat's push parser, fed 64 KB at a time from the (decompressing) stream.
No tree is built: the handlers keep counters, the attributes of the few elements that
matter (``testsuite@timestamp``, the ``emulated`` property, testcase names) and at most
``_MAX_REASON`` characters of a failure or skip text, so a 50 MB report, a million
``<property>`` children or a 40 MB failure message cost a few megabytes at most. The one
thing expat holds whole is a single token (a tag with its attributes, or a text run), so
the feeder refuses the file once expat holds more than ``Limits.max_xml_token_bytes``
it has not reported (a tag, comment or processing instruction: text is reported as it
comes, so a long text node costs nothing).

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

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import NoReturn
from xml.parsers import expat

from dashboard.domain.ingest.errors import IngestError
from dashboard.domain.ingest.limits import Deadline, Limits, Readable
from dashboard.domain.ingest.upstream_names import catalog_key, normalise

# ginkgo v2 writes status=; anything that is not a pass or a skip is a failure for us.
_FAILED_STATUSES = frozenset({"failed", "timedout", "aborted", "panicked", "interrupted"})
_SKIPPED_STATUSES = frozenset({"skipped", "pending"})
# Suite-level nodes are testcases in ginkgo v2's JUnit but not "Specs" in its summary.
_SUITE_NODE = re.compile(
    r"^\[(?:Synchronized)?(?:Before|After)Suite\]|^\[Report(?:Before|After)Suite\]"
    r"|^\[DeferCleanup \(Suite\)\]"
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
    fed = 0
    try:
        while True:
            chunk = source.read(_CHUNK)
            if deadline is not None:
                deadline.check()
            if not chunk:
                parser.Parse(b"", True)
                break
            fed += len(chunk)
            if fed > limits.max_member_bytes:
                raise IngestError(
                    f"{label} refused: it is larger than {limits.max_member_bytes >> 20} MB"
                )
            parser.Parse(chunk, False)
            # What expat holds without having reported it: a tag, comment or PI it buffers
            # whole (text is reported as it comes). Past the bound, the file is refused.
            if fed - max(reader.position, parser.CurrentByteIndex) > limits.max_xml_token_bytes:
                raise IngestError(
                    f"{label} refused: one tag, comment or processing instruction in it is "
                    f"longer than {limits.max_xml_token_bytes >> 20} MB"
                )
    except expat.ExpatError as exc:
        raise IngestError(
            f"{label} is not well-formed XML: {expat.ErrorString(exc.code)}: "
            f"line {exc.lineno}, column {exc.offset}"
        ) from None
    if reader.root is None:
        raise IngestError(f"{label} is not well-formed XML: no element found")
    if reader.result.testcase_count == 0:
        raise IngestError(f"{label} is a JUnit report with no testcases")
    return reader.result


class _Reader:
    """expat handlers that keep only what the report needs."""

    def __init__(self, label: str, limits: Limits, sctp_cases_before: int) -> None:
        self.label = label
        self.limits = limits
        self.result = JUnitResult()
        self.root: str | None = None
        self.depth = 0
        self.case: dict[str, object] | None = None
        self.case_depth = 0
        self.text: list[str] | None = None  # capturing the text of failure/skipped
        self.text_len = 0
        self.sctp_before = sctp_cases_before
        parser = expat.ParserCreate()
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        parser.StartDoctypeDeclHandler = self._forbidden
        parser.EntityDeclHandler = self._forbidden
        parser.UnparsedEntityDeclHandler = self._forbidden
        parser.ExternalEntityRefHandler = self._forbidden
        parser.NotationDeclHandler = self._forbidden
        parser.StartElementHandler = self._start
        parser.EndElementHandler = self._end
        # Text arrives in pieces of up to 64 KB (not one call per line); outside a captured
        # failure/skip text only its position is kept.
        parser.buffer_text = True
        parser.buffer_size = _CHUNK
        parser.CharacterDataHandler = self._data
        self.parser = parser
        self.elements = 0
        self.max_elements = limits.max_xml_elements
        self.position = 0  # byte index of the newest event expat reported

    def _forbidden(self, *args: object) -> NoReturn:
        raise IngestError(
            f"{self.label} was refused: XML with a DTD, entity declarations or external "
            "references is not accepted"
        )

    def _start(self, tag: str, attrs: dict[str, str]) -> None:
        self.position = self.parser.CurrentByteIndex
        self.depth += 1
        self.elements += 1
        if self.elements > self.max_elements or self.depth > _MAX_DEPTH:
            self._too_large()
        if self.root is None:
            self.root = tag
            if tag not in ("testsuites", "testsuite"):
                raise IngestError(
                    f"{self.label} is XML but not a JUnit report "
                    f"(root element <{tag[:100]}>, expected <testsuites> or <testsuite>)"
                )
        if self.case is not None:
            if self.depth == self.case_depth + 1 and tag in ("failure", "error", "skipped"):
                if tag not in self.case:  # the first of each kind, as ElementTree's find()
                    self.case[tag] = attrs.get("message") or ""
                    self.case[f"{tag}_type"] = attrs.get("type") or ""
                    self.text, self.text_len = [], 0
                    self.case[f"{tag}_text"] = self.text
            return
        if tag == "testcase":
            self.case = {"name": attrs.get("name") or "", "status": attrs.get("status") or ""}
            self.case_depth = self.depth
        elif tag == "testsuite":
            self._timestamp(attrs.get("timestamp"))
        elif tag == "property":
            name = attrs.get("name") or ""
            if name in _PROPERTIES and name not in self.result.properties:
                self.result.properties[name] = (attrs.get("value") or "")[:100]

    def _too_large(self) -> NoReturn:
        if self.depth > _MAX_DEPTH:
            raise IngestError(f"{self.label} refused: elements nested deeper than {_MAX_DEPTH}")
        raise IngestError(f"{self.label} refused: more than {self.max_elements:,} XML elements")

    def _data(self, text: str) -> None:
        self.position = self.parser.CurrentByteIndex
        if self.text is not None and self.text_len < _MAX_REASON:
            piece = text[: _MAX_REASON - self.text_len]
            self.text.append(piece)
            self.text_len += len(piece)

    def _end(self, tag: str) -> None:
        self.position = self.parser.CurrentByteIndex
        if self.case is not None:
            if self.depth == self.case_depth:
                self._testcase(self.case)
                self.case = None
            elif self.depth == self.case_depth + 1:
                self.text = None
        self.depth -= 1

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

    def _testcase(self, case: dict[str, object]) -> None:
        result = self.result
        name = str(case["name"])
        if len(name) > self.limits.max_name_chars:
            name = name[: self.limits.max_name_chars]
            result.truncated_names += 1
        sctp = "sctp" in name.lower()
        # The outcome's reason (failure and skip texts) only for the SCTP cases kept; the
        # thousands of others count by their JUnit-level outcome alone.
        raw, outcome, reason = _outcome(case) if sctp else (_raw_outcome(case), "", "")
        result.testcase_count += 1
        result.totals[raw] += 1
        if not _SUITE_NODE.match(name):
            result.spec_totals[raw] += 1
        if sctp:
            if len(result.cases) + self.sctp_before >= self.limits.max_sctp_cases:
                raise IngestError(
                    f"{self.label} refused: more than {self.limits.max_sctp_cases} SCTP "
                    "testcases (a real run has 13 per JUnit file)"
                )
            normalised = normalise(name)
            result.cases.append(Case(normalised, catalog_key(normalised), outcome, reason))


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
