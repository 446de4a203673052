"""Upstream's real e2e.test of each supported minor, in a Ginkgo dry run with the `upstream`
battery's own focus (tests/fixtures/e2e-junit/dry-run-*, see NOTICE.md there).

What these files prove: the focus the worker passes for that minor selects exactly the release's
SCTP specs, by the exact names the names table holds, and no SCTP spec the binary has is left
out; and the file goes through the vendor-file ingest as a dry run: refused as evidence, and
the worker's run ends in error with nothing counted.
"""

from __future__ import annotations

import gzip
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from dashboard.domain.ingest import IngestError, ingest
from dashboard.domain.ingest.upstream_names import (
    RELEASE_NAMES,
    catalog_key,
    guess_release,
    normalise,
)
from kernel import upstream as e2e
from workers.upstream import UpstreamReport, _judge, spec_names

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "e2e-junit"
# minor -> (the tag its binary was built from, how many specs that binary holds)
BINARIES = {
    34: ("v1.34.4", 765),
    35: ("v1.35.4", 927),
    36: ("v1.36.3", 942),
    37: ("v1.37.2", 1001),
}
MINORS = sorted(BINARIES)


def _file(minor: int) -> bytes:
    tag = BINARIES[minor][0]
    return gzip.decompress((FIXTURES / f"dry-run-{tag}-junit_01.xml.gz").read_bytes())


def _cases(minor: int) -> list[ET.Element]:
    return list(ET.fromstring(_file(minor)).iter("testcase"))


def _specs(minor: int) -> list[ET.Element]:
    return [c for c in _cases(minor) if c.get("name", "").startswith("[It] ")]


def _selected(minor: int) -> list[str]:
    return [c.get("name", "") for c in _specs(minor) if c.find("skipped") is None]


def _property(minor: int, name: str) -> str:
    for prop in ET.fromstring(_file(minor)).iter("property"):
        if prop.get("name") == name:
            return prop.get("value", "")
    raise AssertionError(f"no {name} property")


@pytest.mark.parametrize("minor", MINORS)
def test_the_file_was_written_with_the_focus_the_worker_passes_today(minor):
    assert _property(minor, "FocusStrings") == e2e.focus_regex(spec_names(minor))
    assert _property(minor, "DryRun") == "true"


@pytest.mark.parametrize("minor", MINORS)
def test_the_focus_selects_exactly_the_releases_sctp_specs_by_their_names(minor):
    selected = _selected(minor)
    assert len(selected) == 13
    assert {normalise(n) for n in selected} == {normalise(n) for n in spec_names(minor)}
    assert all(catalog_key(n) for n in selected)


@pytest.mark.parametrize("minor", MINORS)
def test_the_names_table_holds_the_releases_own_names(minor):
    # The table's own row for the release, not the newest row lent to a newer release.
    selected = {normalise(n) for n in _selected(minor)}
    assert selected == {normalise(n) for n in RELEASE_NAMES[f"v1.{minor}"]}
    assert guess_release(selected, prefer=f"v1.{minor}") == f"v1.{minor}"


@pytest.mark.parametrize("minor", MINORS)
def test_no_sctp_spec_of_the_binary_is_left_out(minor):
    specs = _specs(minor)
    assert len(specs) == BINARIES[minor][1]
    sctp = [c.get("name", "") for c in specs if "sctp" in c.get("name", "").casefold()]
    assert sorted(sctp) == sorted(_selected(minor))


@pytest.mark.parametrize("minor", MINORS)
def test_the_ingest_reads_it_as_a_dry_run_and_refuses_it_as_evidence(minor):
    data = _file(minor)
    version = BINARIES[minor][0].lstrip("v")
    with pytest.raises(IngestError) as refused:
        ingest(data, declared_kubernetes_version=version)
    assert refused.value.status == 422
    assert "a Ginkgo dry run is no evidence: its Ginkgo DryRun property is true" in (
        refused.value.message
    )
    read = ingest(data, declared_kubernetes_version=version, check_evidence=False)
    assert read.provenance["dry_run"]["value"] == "yes"
    assert len(read.cases) == 13 and all(c.key for c in read.cases)
    assert read.warnings == []


@pytest.mark.parametrize("minor", MINORS)
def test_the_worker_ends_a_run_that_wrote_it_in_error_counting_nothing(minor, settings):
    settings.E2E_TIME_LIMIT_SECONDS = 60
    result = e2e.E2EResult(exit_code=0, junit=_file(minor), log="", progress=e2e.Progress())
    report = UpstreamReport()
    state: dict = {}
    error = _judge(result, state, report, BINARIES[minor][0].lstrip("v"))
    assert error.startswith("upstream's JUnit is no evidence: a Ginkgo dry run is no evidence")
    assert report.results == {}
    assert len(state["specs"]) == 13  # listed on the run page, not counted
