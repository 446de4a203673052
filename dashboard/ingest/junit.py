"""Streaming reader for e2e JUnit XML (ginkgo v1 and v2 shapes).

One pass with ``defusedxml``'s iterparse (DTDs, entity declarations and external
references forbidden), each ``<testcase>`` dropped as soon as it is read, so a 50 MB
report never becomes a 50 MB tree. Only names that mention SCTP are normalised and
looked up: every catalog name does, and it keeps 7,000 other names off the slow path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import IO
from xml.etree.ElementTree import Element, ParseError

import defusedxml.ElementTree as safe_et
from defusedxml import DefusedXmlException

from .errors import IngestError
from .upstream_names import catalog_key, normalise

# ginkgo v2 writes status=; anything that is not a pass or a skip is a failure for us.
_FAILED_STATUSES = frozenset({"failed", "timedout", "aborted", "panicked", "interrupted"})
_SKIPPED_STATUSES = frozenset({"skipped", "pending"})
# Suite-level nodes are testcases in ginkgo v2's JUnit but not "Specs" in its summary.
_SUITE_NODE = re.compile(
    r"^\[(?:Synchronized)?(?:Before|After)Suite\]|^\[Report(?:Before|After)Suite\]"
    r"|^\[DeferCleanup \(Suite\)\]"
)
_MAX_REASON = 2000


@dataclass
class Case:
    """One SCTP-related testcase: its normalised name, catalog key (or None), outcome."""

    name: str
    key: str | None
    outcome: str  # passed | failed | skipped
    reason: str


@dataclass
class JUnitResult:
    testcase_count: int = 0
    totals: dict[str, int] = field(default_factory=lambda: _zero())
    spec_totals: dict[str, int] = field(default_factory=lambda: _zero())
    cases: list[Case] = field(default_factory=list)

    def merge(self, other: JUnitResult) -> None:
        self.testcase_count += other.testcase_count
        for name in self.totals:
            self.totals[name] += other.totals[name]
            self.spec_totals[name] += other.spec_totals[name]
        self.cases.extend(other.cases)


def _zero() -> dict[str, int]:
    return {"passed": 0, "failed": 0, "skipped": 0}


def parse_junit(source: IO[bytes], label: str = "JUnit file") -> JUnitResult:
    """Read one JUnit document; raise IngestError for anything that is not one."""
    result = JUnitResult()
    stack: list[Element] = []
    try:
        for event, element in safe_et.iterparse(
            source, events=("start", "end"), forbid_dtd=True
        ):
            if event == "start":
                if not stack and element.tag not in ("testsuites", "testsuite"):
                    raise IngestError(
                        f"{label} is XML but not a JUnit report "
                        f"(root element <{element.tag}>, expected <testsuites> or <testsuite>)"
                    )
                stack.append(element)
                continue
            stack.pop()
            if element.tag != "testcase":
                continue
            _read_testcase(element, result)
            element.clear()
            if stack:  # drop it from its suite too, so the tree never grows
                stack[-1].remove(element)
    except IngestError:
        raise
    except DefusedXmlException as exc:
        raise IngestError(
            f"{label} was refused: XML with a DTD, entity declarations or external "
            f"references is not accepted ({type(exc).__name__})"
        ) from None
    except ParseError as exc:
        raise IngestError(f"{label} is not well-formed XML: {exc}") from None
    if result.testcase_count == 0:
        raise IngestError(f"{label} is a JUnit report with no testcases")
    return result


def _read_testcase(element: Element, result: JUnitResult) -> None:
    name = element.get("name") or ""
    outcome, reason = _outcome(element)
    result.testcase_count += 1
    result.totals[outcome] += 1
    if not _SUITE_NODE.match(name):
        result.spec_totals[outcome] += 1
    if "sctp" in name.lower():
        normalised = normalise(name)
        result.cases.append(Case(normalised, catalog_key(normalised), outcome, reason))


def _outcome(element: Element) -> tuple[str, str]:
    status = (element.get("status") or "").lower()
    failure = element.find("failure")
    if failure is None:
        failure = element.find("error")
    if status in _FAILED_STATUSES or (failure is not None and status not in _SKIPPED_STATUSES):
        kind = status if status in _FAILED_STATUSES else "failed"
        if failure is not None:
            kind = failure.get("type") or kind
            text = failure.get("message") or (failure.text or "")
        else:
            text = ""
        return "failed", _reason(kind, text)
    skipped = element.find("skipped")
    if status in _SKIPPED_STATUSES or skipped is not None:
        message = "" if skipped is None else (skipped.get("message") or skipped.text or "")
        return "skipped", _skip_reason(message, status)
    return "passed", ""


def _reason(kind: str, text: str) -> str:
    text = " ".join(text.split())
    if len(text) > _MAX_REASON:
        text = text[:_MAX_REASON] + "…"
    return f"{kind}: {text}" if text else kind


def _skip_reason(message: str, status: str) -> str:
    message = " ".join(message.split())
    # ginkgo v2: "skipped - <reason given to ginkgo.Skip>"; a bare "skipped" means the
    # spec was filtered out (focus/skip/labels) and ginkgo recorded no reason.
    for prefix in ("skipped - ", "skipped: "):
        if message.lower().startswith(prefix):
            message = message[len(prefix):]
            break
    if not message or message.lower() == "skipped":
        if status == "pending":
            return "pending (marked pending in the suite)"
        return "skipped (ginkgo gave no reason: not selected by the run's focus/skip)"
    if len(message) > _MAX_REASON:
        message = message[:_MAX_REASON] + "…"
    return message
