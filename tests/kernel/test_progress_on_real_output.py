"""The live progress reader (kernel.upstream.ProgressReader) on the REAL console output of
upstream's e2e.test v1.36.3 against this project's cluster, and its JUnit through our ingest as
a vendor's file (tests/fixtures/realcluster/e2e-v1.36.3-sctp-part*, see
e2e-v1.36.3-NOTICE.md there: the battery's 13 specs in four e2e.test processes, each focused
on a part of them, run at once because one process takes about 46 min on this cluster).

What the real output showed that the stand-in did not: a spec's name is printed again after a
skipped or failed spec ends ("S [SKIPPED] [0.088 seconds]" then the name with "[It]" inside),
and "Ran N of 942 Specs" counts only the specs that ran, not those skipped at run time.
"""

from __future__ import annotations

import gzip
import re
from datetime import UTC, datetime
from pathlib import Path

from dashboard.domain.ingest import ingest
from kernel.upstream import ProgressReader, spec_key
from workers.upstream import spec_names

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "realcluster"
PARTS = "ABCD"
NAMES = spec_names(36)
CASE = re.compile(
    rb'<testcase name="([^"]*)" classname="[^"]*" status="([^"]*)"[^>]*>\s*(<skipped message="skipped">)?'
)


def log(part: str) -> list[str]:
    path = FIXTURES / f"e2e-v1.36.3-sctp-part{part}.log.gz"
    return gzip.decompress(path.read_bytes()).decode().splitlines()


def junit(part: str) -> bytes:
    path = FIXTURES / f"e2e-v1.36.3-sctp-part{part}-junit_01.xml.gz"
    return gzip.decompress(path.read_bytes())


def junit_specs(part: str) -> dict[str, str]:
    """Spec name (as our key reduces it) -> status of the SCTP specs this part selected, read
    from upstream's own file (ginkgo lists all 942 specs; those outside the focus are
    `<skipped message="skipped">`, a run-time skip says why: "skipped - Skipping SCTP …")."""
    found = {}
    for name, status, unselected in CASE.findall(junit(part)):
        text = name.decode().replace("&#39;", "'")
        if ("SCTP" in text or "sctp" in text) and not unselected:
            found[spec_key(text)] = status.decode()
    return found


def test_each_real_spec_is_shown_running_once_and_every_end_is_counted() -> None:
    every: list[str] = []
    for part in PARTS:
        specs = junit_specs(part)
        reader = ProgressReader(NAMES)
        shown: list[str] = []
        for line in log(part):
            before = reader.progress.running
            reader.feed(line)
            now = reader.progress.running
            if now and now != before:
                shown.append(now)
                # A spec shown running has not ended yet: done counts the ones before it.
                assert reader.progress.done == len(shown) - 1, (part, now, reader.progress)
        # Every spec of the part once, never again after its end (the old reader showed a
        # skipped or failed spec again when ginkgo printed its name under its end line).
        assert len(shown) == len(set(shown)) == len(specs), (part, shown)
        assert {spec_key(n) for n in shown} == set(specs)
        assert reader.progress.as_dict() == {"running": "", "done": len(specs), "total": len(specs)}
        every += shown
    assert sorted(every) == sorted(NAMES)  # the four parts are the battery's 13 specs


def test_the_real_junit_parses_through_the_ingest_as_a_vendors_file() -> None:
    for part in PARTS:
        report = ingest(junit(part), received_at=datetime(2026, 12, 7, 13, 0, tzinfo=UTC))
        statuses = junit_specs(part)
        assert len(report.cases) == 13
        assert all(c.key for c in report.cases)  # every spec mapped to a catalog key
        dry = report.provenance["dry_run"]
        assert isinstance(dry, dict) and dry["value"] == "no"
        ran = {c.name: c.outcome for c in report.cases if spec_key(c.name) in statuses}
        assert len(ran) == len(statuses)
        for name, outcome in ran.items():
            assert statuses[spec_key(name)] == outcome, name
        # The rest of the 13 are outside this part's focus: not run, never a verdict.
        assert {c.outcome for c in report.cases if c.name not in ran} <= {"not_run"}
