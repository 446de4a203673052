"""Which releases the product follows (issue 39 item 2): the newest three minors the catalog
knows (1.37, 1.36, 1.35) and the floor three below (1.34), both overridable
(READINESS_WATCH_MINORS, READINESS_MIN_KUBERNETES); and what it says of a release newer than
the catalog knows (a 1.38 run or file): shown, marked as read with 1.37's names, never dropped."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.domain import publication, readiness
from dashboard.domain.catalog import DEFAULT_MIN_MINOR, NEWEST_KNOWN_MINOR, newer_than_known
from dashboard.domain.ingest import ingest
from dashboard.domain.ingest.upstream_names import RELEASE_NAMES, RELEASES
from dashboard.domain.policy import min_minor
from dashboard.domain.readiness.watch import supported_minors
from tests import factories as f
from tests.junit import junit_v2

pytestmark = pytest.mark.django_db

NEWER = "Kubernetes 1.38 is newer than the releases whose upstream SCTP spec names this dashboard knows (1.19 to 1.37): its names were mapped with 1.37's"


def _holding(minor: str) -> None:
    """Two out-of-tree plugins, one on iptables and one on ipvs, passing on MINOR."""
    for slug, proxier in (("calico", "iptables"), ("cilium", "ipvs")):
        f.run(
            f.cluster(
                f"{slug}-{minor}", plugin_slug=slug, proxier=proxier, kubernetes_version=minor
            )
        )


def _watch() -> dict:
    publication.invalidate()
    return readiness.evaluate()["watch"]


def test_the_defaults_follow_the_newest_known_release(settings):
    assert NEWEST_KNOWN_MINOR == 37 and RELEASES[-1] == "v1.37"
    assert DEFAULT_MIN_MINOR == 34
    settings.READINESS_MIN_KUBERNETES = ""
    assert min_minor() == 34
    assert supported_minors() == [37, 36, 35]


def test_the_watch_follows_as_many_minors_as_the_setting_says(settings):
    _holding("1.37.2")
    _holding("1.35.4")
    settings.READINESS_WATCH_MINORS = 1
    w = _watch()
    assert w["minors"] == ["1.37"] and [r["release"] for r in w["releases"]] == ["1.37"]
    assert w["holds"]
    settings.READINESS_WATCH_MINORS = 3
    w = _watch()
    assert w["minors"] == ["1.37", "1.36", "1.35"]
    assert [r["holds"] for r in w["releases"]] == [True, False, True] and not w["holds"]


def test_the_floor_setting_moves_what_counts_on_the_watch(settings):
    _holding("1.35.4")
    assert next(r for r in _watch()["releases"] if r["release"] == "1.35")["holds"]
    settings.READINESS_MIN_KUBERNETES = "1.36"
    row = next(r for r in _watch()["releases"] if r["release"] == "1.35")
    assert not row["holds"] and "0 of 2 out-of-tree plugins qualify" in row["why"]
    calico = next(p for p in _watch()["plugins"] if p["plugin"] == "calico")
    cell = next(c for c in calico["cells"] if (c["proxier"], c["release"]) == ("iptables", "1.35"))
    assert cell["status"] == "not counted"
    assert "Kubernetes 1.35 is older than 1.36, the oldest release that counts" in cell["why"]


def test_a_newer_release_than_the_catalog_knows_is_shown_marked_never_dropped(settings):
    for minor in ("1.37.2", "1.36.3", "1.35.4"):
        _holding(minor)
    newer = f.cluster("calico-138", plugin_slug="calico", kubernetes_version="1.38.0")
    f.run(newer, days_ago=3)
    broke = f.run(newer, f.with_outcome("pod-to-service", "failed", dict(f.PASSING)), days_ago=1)
    w = _watch()
    assert w["minors"] == ["1.37", "1.36", "1.35"] and w["newer"] == ["1.38"]
    top = w["releases"][0]
    assert top["release"] == "1.38" and not top["supported"] and not top["holds"]
    assert top["note"].startswith(NEWER) and "not among the supported releases" in top["note"]
    assert all(r["note"] == "" and r["supported"] for r in w["releases"][1:])
    # the supported releases' verdict is theirs; 1.38's regression is still said
    assert w["holds"]
    (r,) = w["regressions"]
    assert (r["plugin"], r["release"], r["evidence"]["id"]) == ("calico", "1.38", broke.id)
    calico = next(p for p in w["plugins"] if p["plugin"] == "calico")
    assert any(c["release"] == "1.38" for c in calico["cells"])

    body = Client().get("/").content.decode()
    row = body[body.index('data-release="1.38"') :].split("</tr>")[0]
    assert "data-newer-release" in row and "newer than the releases whose upstream SCTP" in row

    from dashboard.domain.kep_report import markdown_report

    report = markdown_report(readiness.evaluate(), "http://testserver")
    assert any(line.startswith("| 1.38 |") for line in report.splitlines())
    note = next(line for line in report.splitlines() if line.startswith("- 1.38: "))
    assert "Kubernetes 1.38 is newer than the releases" in note and "1.37" in note


def test_a_newer_release_file_is_read_with_the_newest_names_and_says_so():
    names = list(RELEASE_NAMES[RELEASES[-1]])
    report = ingest(junit_v2([(n, "passed") for n in names]), declared_kubernetes_version="1.38.1")
    assert all(c.key for c in report.cases) and len(report.cases) == 13
    assert report.counts["passed"] == len(set(RELEASE_NAMES["v1.37"].values())) == 6
    (warning,) = report.warnings
    assert warning.startswith(NEWER) and "declared" in warning
    assert report.release == "v1.29-v1.37"
    # a known release says nothing of the kind
    known = ingest(junit_v2([(n, "passed") for n in names]), declared_kubernetes_version="1.37.2")
    assert known.warnings == []
    assert newer_than_known(37) == "" and newer_than_known(None) == ""


def test_the_worker_says_it_read_a_newer_release_with_the_newest_names(settings):
    import gzip
    from pathlib import Path

    from kernel import upstream as e2e
    from workers.upstream import UpstreamReport, _judge, spec_names

    assert spec_names(38) == spec_names(37)
    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "e2e-junit"
    junit = gzip.decompress((fixture / "dry-run-v1.37.2-junit_01.xml.gz").read_bytes())
    settings.E2E_TIME_LIMIT_SECONDS = 60
    result = e2e.E2EResult(exit_code=0, junit=junit, log="", progress=e2e.Progress())
    state: dict = {}
    _judge(result, state, UpstreamReport(), "1.38.0")
    assert state["warnings"][0] == NEWER
    assert len(state["specs"]) == 13 and all(s["key"] for s in state["specs"])
