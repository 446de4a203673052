"""Issue 39: after GA, / leads with today's question: do the GA criteria still hold on the
supported releases, per proxier and per plugin, with the evidence; and what changed since they
last held (a regression names the plugin, release, proxier, test, run and when). Regressions
notify like schedules do."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.domain import history, notify, publication, readiness
from dashboard.domain.models import NotificationChannel, NotificationLog, Run
from tests import factories as f

pytestmark = pytest.mark.django_db


def _fleet() -> dict[str, Run]:
    """calico on iptables and cilium on ipvs pass on 1.37; then cilium's newest ipvs run fails."""
    calico = f.cluster("calico-ipt", kubernetes_version="1.37.0")
    cilium = f.cluster(
        "cilium-ipvs", plugin_slug="cilium", proxier="ipvs", kubernetes_version="1.37.0"
    )
    good = f.run(calico, days_ago=3)
    held = f.run(cilium, days_ago=3)
    broke = f.run(cilium, f.with_outcome("pod-to-service", "failed", dict(f.PASSING)), days_ago=1)
    publication.invalidate()
    return {"good": good, "held": held, "broke": broke}


def test_the_watch_answers_per_release_proxier_and_plugin() -> None:
    runs = _fleet()
    w = readiness.evaluate()["watch"]
    assert w["minors"] == ["1.37", "1.36", "1.35"]
    newest = w["releases"][0]
    assert newest["release"] == "1.37" and newest["plugins"] == ["calico"]
    assert not newest["holds"] and "1 of 2 out-of-tree plugins qualify (calico)" in newest["why"]
    # ipvs stays demonstrated by the older fresh run, as in the KEP criterion; nftables never was
    ipvs = next(p for p in newest["proxiers"] if p["proxier"] == "ipvs")
    assert ipvs["demonstrated"] and ipvs["evidence"]["id"] == runs["held"].id
    assert not next(p for p in newest["proxiers"] if p["proxier"] == "nftables")["demonstrated"]
    calico = next(p for p in w["plugins"] if p["plugin"] == "calico")
    cell = next(c for c in calico["cells"] if (c["proxier"], c["release"]) == ("iptables", "1.37"))
    assert cell["status"] == "holds" and cell["evidence"]["id"] == runs["good"].id
    assert {c["status"] for c in calico["cells"] if c["release"] != "1.37"} == {"no evidence"}


def test_a_regression_names_plugin_release_proxier_test_run_and_when() -> None:
    runs = _fleet()
    (r,) = readiness.evaluate()["watch"]["regressions"]
    assert (r["plugin"], r["release"], r["proxier"]) == ("cilium", "1.37", "ipvs")
    assert r["tests"] == ["pod-to-service failed"]
    assert r["evidence"]["kind"] == "run" and r["evidence"]["id"] == runs["broke"].id
    finished = runs["broke"].finished
    assert finished is not None and r["when"] == finished.strftime("%Y-%m-%d")
    assert r["held"]["id"] == runs["held"].id


def test_the_page_leads_with_the_watch_and_what_changed(client: Client) -> None:
    runs = _fleet()
    body = client.get("/").content.decode()
    assert body.index("data-ga-watch") < body.index('class="stage-track"')
    assert (
        'data-watch="alarm"' in body and "Supported releases: Kubernetes 1.37, 1.36, 1.35" in body
    )
    changed = body[body.index('id="what-changed"') : body.index("Per supported release")]
    item = changed[changed.index('data-regression="cilium-ipvs-1.37"') :].split("</li>")[0]
    assert "on Kubernetes <strong>1.37</strong>" in item and "<strong>ipvs</strong>" in item
    assert "pod-to-service failed" in item
    assert (
        f'href="/runs/{runs["broke"].id}/"' in item and f'href="/runs/{runs["held"].id}/"' in item
    )
    assert 'data-release="1.37" data-holds="false"' in body
    assert "deprecated since Kubernetes 1.35 (KEP-5495)" in body
    assert 'data-plugin="cilium" data-status="regressed"' in body


def test_when_every_release_holds_the_page_says_so(client: Client) -> None:
    for minor in ("1.37", "1.36", "1.35"):
        for slug, proxier in (("calico", "iptables"), ("cilium", "ipvs")):
            f.run(
                f.cluster(
                    f"{slug}-{minor}", plugin_slug=slug, proxier=proxier, kubernetes_version=minor
                )
            )
    w = readiness.evaluate()["watch"]
    assert w["holds"] and [r["holds"] for r in w["releases"]] == [True, True, True]
    assert not w["regressions"]


def test_a_regression_notifies_once_per_run_and_channel(
    django_capture_on_commit_callbacks, monkeypatch
) -> None:
    NotificationChannel.objects.create(kind="email", target="oncall@example.org")
    monkeypatch.setattr(notify, "enqueue", lambda *a, **k: True)
    runs = _fleet()
    evaluation = readiness.evaluate()
    assert len(notify.on_watch_regressions(evaluation)) == 1
    assert notify.on_watch_regressions(evaluation) == []  # the same regression: not twice
    entry = NotificationLog.objects.get(event="watch.regressed")
    assert entry.payload["plugin"] == "cilium" and entry.payload["proxier"] == "ipvs"
    assert entry.payload["evidence"]["id"] == runs["broke"].id
    assert notify.subject_of(entry.payload) == (
        "[SCTP dashboard] cilium regressed on Kubernetes 1.37 (ipvs)"
    )
    assert notify.on_watch_regressions in history.EVALUATED  # every recorded evaluation


def test_the_kep_report_carries_the_watch_and_its_regressions() -> None:
    from dashboard.domain.kep_report import markdown_report

    runs = _fleet()
    report = markdown_report(readiness.evaluate(), "http://testserver")
    assert "### Post-GA watch: do the GA criteria still hold?" in report
    row = next(line for line in report.splitlines() if line.startswith("| 1.37 |"))
    assert "1 of 2 out-of-tree plugins qualify" in row and "| calico |" in row
    broke = runs["broke"].id
    assert f"- cilium on Kubernetes 1.37, ipvs: pod-to-service failed ([run {broke}]" in report
