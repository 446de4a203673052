"""The suite runs from a clone alone: no test or benchmark reads outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
# the project's sibling folders, a home or work directory: what a user's clone does not have
OUTSIDE = re.compile(r"""["'](?:\.\./+shared|/work/|/home/|/root/|/tmp/)""")


def test_no_test_or_benchmark_reads_a_path_outside_the_repository() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for folder in ("tests", "bench")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != Path(__file__).resolve()
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert offenders == []


def test_the_upstream_files_the_tests_use_carry_their_licence_note() -> None:
    upstream = ROOT / "tests" / "fixtures" / "e2e-junit"
    note = (upstream / "NOTICE.md").read_text()
    assert "Apache License, Version 2.0" in note
    for data in upstream.iterdir():
        if data.name != "NOTICE.md":
            assert data.name in note, f"{data.name} has no entry in {upstream / 'NOTICE.md'}"
