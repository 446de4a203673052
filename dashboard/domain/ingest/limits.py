"""Bounds on what one submission may make us read, decompress, hold in memory and spend."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

from dashboard.domain.ingest.errors import IngestError

MiB = 1024 * 1024


class Readable(Protocol):
    """All the readers ask of a stream: an upload, an archive member or an inflater alike."""

    def read(self, size: int = -1, /) -> bytes: ...


@dataclass(frozen=True)
class Limits:
    max_bytes: int = 50 * MiB  # the upload itself (413 above it)
    # Everything an archive may decompress to, members we skip included: a real
    # Sonobuoy tarball with a large resources/ dump stays well under this. Skipped
    # members are inflated and dropped chunk by chunk: this bounds time, not memory.
    max_uncompressed: int = 512 * MiB
    # The real (inflated) size of one JUnit file or e2e.log. Both are parsed as a stream,
    # so this bounds time; the per-token bound below bounds memory.
    max_member_bytes: int = 128 * MiB
    max_members: int = 10_000
    # The zip central directory is read only when the end-of-central-directory record
    # says it is no larger than this (10,000 entries with 150-character paths fit; even
    # minimal 46-byte entries then stay under 50,000 parsed entries, ~20 MB).
    max_zip_directory_bytes: int = 2 * MiB
    # A zip member that inflates more than this many times its compressed size is a bomb
    # (JUnit XML compresses about 20x; zeros about 1000x).
    max_zip_ratio: int = 200
    # The longest tag (with its attributes), comment or processing instruction: the XML
    # parser buffers each whole (a 40 MB attribute costs 128 MB), so this bounds its memory.
    # Text is streamed and needs no bound.
    max_xml_token_bytes: int = 4 * MiB
    # Elements in one JUnit file: the real v1.30 conformance report has 14,016 (7,201
    # testcases, 7x less); a flood of <property> (or any) children is refused before it costs time.
    max_xml_elements: int = 100_000
    # Real upstream names are under 300 characters; longer ones are truncated (one warning).
    max_name_chars: int = 1000
    # SCTP testcases kept from all JUnit files (13 per file in a real run).
    max_sctp_cases: int = 5_000
    # The whole ingest, from the first byte to the report.
    time_budget_seconds: float = 20.0
    max_warnings: int = 20
    max_warning_chars: int = 300


class Deadline:
    """The time budget of one ingest; ``check()`` refuses the file once it is spent."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    def check(self) -> None:
        if time.monotonic() > self._end:
            raise IngestError(
                f"file refused: reading it took longer than the {self.seconds:g} s budget "
                "for one submission (split it, or submit only the e2e results)",
                400,
            )


class Warnings:
    """Warnings for the uploader: deduplicated, each cut to a length, capped in number
    with one final "and N more" line, so no file can make the stored report large."""

    def __init__(self, limits: Limits) -> None:
        self._max = limits.max_warnings
        self._chars = limits.max_warning_chars
        self._kept: dict[str, None] = {}
        self._seen: set[int] = set()  # hashes of dropped ones: small whatever the text
        self._dropped = 0

    def add(self, text: str) -> None:
        if len(text) > self._chars:
            text = text[: self._chars - 1] + "…"
        if text in self._kept:
            return
        if len(self._kept) < self._max:
            self._kept[text] = None
            return
        digest = hash(text)
        if digest in self._seen:
            return
        if len(self._seen) < 20_000:  # beyond that, dropped ones are counted, not deduplicated
            self._seen.add(digest)
        self._dropped += 1

    def as_list(self) -> list[str]:
        out = list(self._kept)
        if self._dropped:
            out.append(f"… and {self._dropped} more warning{'s' if self._dropped > 1 else ''}")
        return out
