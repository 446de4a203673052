"""The evidence policy (contract: Evidence policy), table-driven: one item of evidence and one
criterion in, `counts` and a one-line `why` out."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import timedelta

import pytest
from django.utils.timezone import now

from dashboard.domain.catalog import (
    ALL_KEYS,
    BASIC_KEYS,
    Outcome,
    kubernetes_minor,
    parse_minor_setting,
)
from dashboard.domain.policy import (
    BADGE,
    PERIODIC,
    PROXIERS,
    TESTS_WRITTEN,
    TWO_PLUGINS,
    WHAT_IF_EMULATED,
    Item,
    PluginFacts,
    Policy,
    invariant_state,
)

NOW = now()
CALICO = PluginFacts("calico", in_tree=False, implements_network_policy=True)
FLANNEL = PluginFacts("flannel", in_tree=False, implements_network_policy=False)
FLANNEL_EXEMPT = replace(FLANNEL, netpol_exemption="accepted by SIG Network for KEP-614")
KUBENET = PluginFacts("kubenet", in_tree=True, implements_network_policy=False)
PASSING = dict.fromkeys(ALL_KEYS, Outcome.PASSED)

RUN = Item(
    kind="run",
    id=1,
    plugin=CALICO,
    source="cluster calico-prod",
    when=NOW - timedelta(days=1),
    when_source="finished",
    emulated=False,
    untrusted="",
    minor=34,
    outcomes=PASSING,
    proxier="iptables",
    proxier_source="detected",
    declared_proxier="iptables",
    battery="all",
    scheduled=True,
    invariant="conclusive",
    state="finished",
)
SUB = replace(
    RUN,
    kind="submission",
    id=2,
    source="submission of calico 3.28.0",
    when_source="file",
    proxier_source="declared",
    invariant="",
    scheduled=False,
)


def with_outcomes(item: Item, **changes: str) -> Item:
    outcomes = dict(item.outcomes)
    outcomes.update({k.replace("_", "-"): v for k, v in changes.items()})
    return replace(item, outcomes=outcomes)


CASES = [
    # kind and trust
    ("run approved", RUN, TWO_PLUGINS, True, "netpol-allow-deny passed"),
    (
        "run unapproved",
        replace(RUN, untrusted="cluster calico-prod is not approved by a maintainer"),
        TWO_PLUGINS,
        False,
        "not approved by a maintainer",
    ),
    (
        "run disabled",
        replace(RUN, untrusted="cluster calico-prod is disabled"),
        PROXIERS,
        False,
        "disabled",
    ),
    ("submission verified", SUB, TWO_PLUGINS, True, "counts"),
    (
        "submission pending",
        replace(SUB, untrusted="pending review: submissions count once a maintainer verifies them"),
        TWO_PLUGINS,
        False,
        "pending review",
    ),
    (
        "submission rejected",
        replace(SUB, untrusted="rejected by a maintainer"),
        TESTS_WRITTEN,
        False,
        "rejected",
    ),
    # real cluster
    ("run emulated", replace(RUN, emulated=True), TWO_PLUGINS, False, "emulated"),
    ("submission emulated", replace(SUB, emulated=True), PROXIERS, False, "emulated"),
    ("emulated basic run", replace(RUN, emulated=True), PERIODIC, False, "emulated"),
    # outcomes
    (
        "netpol skipped",
        with_outcomes(RUN, netpol_allow_deny=Outcome.SKIPPED),
        TWO_PLUGINS,
        False,
        "netpol-allow-deny skipped",
    ),
    (
        "pod-to-pod not run",
        with_outcomes(RUN, pod_to_pod=Outcome.NOT_RUN),
        TWO_PLUGINS,
        False,
        "pod-to-pod not run",
    ),
    (
        "a connectivity error",
        with_outcomes(RUN, pod_to_loadbalancer=Outcome.ERROR),
        TWO_PLUGINS,
        False,
        "pod-to-loadbalancer error",
    ),
    (
        "lb skipped is fine",
        with_outcomes(RUN, pod_to_loadbalancer=Outcome.SKIPPED),
        TWO_PLUGINS,
        True,
        "counts",
    ),
    (
        "pod-to-service skipped",
        with_outcomes(RUN, pod_to_service=Outcome.SKIPPED),
        PROXIERS,
        False,
        "pod-to-service skipped",
    ),
    (
        "all skipped, tests-written",
        replace(RUN, outcomes=dict.fromkeys(ALL_KEYS, Outcome.SKIPPED)),
        TESTS_WRITTEN,
        False,
        "no test reached a verdict",
    ),
    (
        "a failure is a verdict",
        replace(RUN, outcomes=dict.fromkeys(ALL_KEYS, Outcome.FAILED)),
        TESTS_WRITTEN,
        True,
        "verdicts for",
    ),
    # invariant (periodic)
    ("basic conclusive", RUN, PERIODIC, True, "sctp.ko invariant checked"),
    ("basic inconclusive", replace(RUN, invariant="inconclusive"), PERIODIC, False, "inconclusive"),
    ("basic unchecked", replace(RUN, invariant="unchecked"), PERIODIC, False, "not checked"),
    # issue 40: the tests passed as upstream judges them, our every-node invariant broke
    ("basic violated", replace(RUN, invariant="violated"), PERIODIC, False, "did not hold"),
    (
        "basic all skipped",
        replace(RUN, outcomes=dict.fromkeys(BASIC_KEYS, Outcome.SKIPPED)),
        PERIODIC,
        False,
        "no basic test passed",
    ),
    (
        "basic one failed",
        with_outcomes(RUN, declare_sctp_ports=Outcome.FAILED),
        PERIODIC,
        False,
        "declare-sctp-ports failed",
    ),
    (
        "basic errored run",
        replace(RUN, finished_ok=False, state="error"),
        PERIODIC,
        False,
        "ended error",
    ),
    (
        "periodic ignores the freshness window",
        replace(RUN, when=NOW - timedelta(days=400)),
        PERIODIC,
        True,
        "counts",
    ),
    # proxier
    ("proxier detected", RUN, PROXIERS, True, "iptables (detected)"),
    (
        "proxier undetermined: the declared mode never counts",
        replace(RUN, proxier=None, proxier_source=""),
        PROXIERS,
        False,
        "could not be determined",
    ),
    ("submission proxier declared", SUB, PROXIERS, True, "iptables (declared)"),
    # release
    ("release at the floor", replace(RUN, minor=32), TWO_PLUGINS, True, "counts"),
    (
        "release below the floor",
        replace(RUN, minor=31),
        TWO_PLUGINS,
        False,
        "1.31 is older than 1.32",
    ),
    ("release unknown", replace(RUN, minor=None), TESTS_WRITTEN, False, "release unknown"),
    # age
    ("fresh", replace(RUN, when=NOW - timedelta(days=89)), TWO_PLUGINS, True, "counts"),
    (
        "stale",
        replace(RUN, when=NOW - timedelta(days=91)),
        TWO_PLUGINS,
        False,
        "older than 90 days",
    ),
    (
        "stale submission (its e2e run time)",
        replace(SUB, when=NOW - timedelta(days=200)),
        PROXIERS,
        False,
        "older than 90 days",
    ),
    ("no time", replace(SUB, when=None), TESTS_WRITTEN, False, "no run time"),
    # NetworkPolicy exemption
    (
        "no NetworkPolicy, no exemption",
        replace(with_outcomes(RUN, netpol_allow_deny=Outcome.SKIPPED), plugin=FLANNEL),
        TWO_PLUGINS,
        False,
        "does not implement NetworkPolicy and has no exemption",
    ),
    (
        "no NetworkPolicy, exempted",
        replace(with_outcomes(RUN, netpol_allow_deny=Outcome.SKIPPED), plugin=FLANNEL_EXEMPT),
        TWO_PLUGINS,
        True,
        "NetworkPolicy exemption: accepted by SIG Network",
    ),
    (
        "exempted but pod-to-service failed",
        replace(with_outcomes(RUN, pod_to_service=Outcome.FAILED), plugin=FLANNEL_EXEMPT),
        TWO_PLUGINS,
        False,
        "pod-to-service failed",
    ),
    (
        "in-tree never counts for two plugins",
        replace(RUN, plugin=replace(KUBENET, netpol_exemption="x")),
        TWO_PLUGINS,
        False,
        "in-tree",
    ),
    (
        "in-tree still gets a badge",
        replace(RUN, plugin=replace(KUBENET, netpol_exemption="x")),
        BADGE,
        True,
        "counts",
    ),
]


@pytest.mark.parametrize(
    ("item", "criterion", "counts", "why"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_policy_table(item, criterion, counts, why):
    a = Policy(now=NOW, fresh_days=90, minimum=32).assess(item, criterion)
    assert a.counts is counts, a.why
    assert why in a.why
    assert a.why.startswith("counts: " if counts else "not counted: ")
    assert "\n" not in a.why


def test_several_failed_conditions_are_all_named():
    item = replace(
        RUN, emulated=True, minor=20, untrusted="cluster x is not approved by a maintainer"
    )
    a = Policy(now=NOW, fresh_days=90, minimum=32).assess(item, TWO_PLUGINS)
    assert not a.counts
    assert {"trust", "emulated", "release"} <= a.blocked
    assert "not approved" in a.why and "emulated" in a.why and "1.20" in a.why


def test_the_what_if_relaxes_only_what_it_names_and_says_so():
    pol = Policy(now=NOW, fresh_days=90, minimum=32)
    emulated = replace(RUN, emulated=True)
    relaxed = pol.assess(emulated, TWO_PLUGINS, relax=WHAT_IF_EMULATED)
    assert relaxed.counts and relaxed.relied == {"emulated"} and "were allowed" in relaxed.why
    assert not pol.assess(replace(emulated, minor=20), TWO_PLUGINS, relax=WHAT_IF_EMULATED).counts


def test_a_stale_item_is_only_stale():
    pol = Policy(now=NOW, fresh_days=90, minimum=32)
    assert pol.assess(replace(RUN, when=NOW - timedelta(days=100)), TWO_PLUGINS).stale_only
    failing_and_old = with_outcomes(
        replace(RUN, when=NOW - timedelta(days=100)), pod_to_pod=Outcome.FAILED
    )
    assert not pol.assess(failing_and_old, TWO_PLUGINS).stale_only


@pytest.mark.parametrize(
    ("before", "state"),
    [
        ({"n1": False, "n2": True}, "conclusive"),
        ({"n1": True, "n2": True}, "inconclusive"),
        ({"n1": None}, "unchecked"),
        ({}, "unchecked"),
        (None, "unchecked"),
    ],
)
def test_the_invariant_state_comes_from_the_module_states_before_the_tests(before, state):
    assert invariant_state({"sctp_module_before": before}) == state


def test_our_invariant_broken_during_a_basic_test_makes_the_run_violated_not_conclusive():
    before = {"n1": False, "n2": False}
    assert invariant_state({"sctp_module_before": before, "sctp_invariant_held": False}) == (
        "violated"
    )
    held = {"sctp_module_before": before, "sctp_invariant_held": True}
    assert invariant_state(held) == "conclusive"


@pytest.mark.parametrize(
    ("text", "minor"),
    [
        ("1.31.2", 31),
        ("v1.35.0-gke.1", 35),
        ("1.9", 9),
        ("", None),
        ("latest", None),
        ("2.0.1", None),
    ],
)
def test_kubernetes_minor(text, minor):
    assert kubernetes_minor(text) == minor


def test_the_release_floor_defaults_to_three_minors_below_the_newest_known_release():
    from dashboard.domain.catalog import NEWEST_KNOWN_MINOR
    from dashboard.domain.ingest.upstream_names import RELEASES

    assert RELEASES[-1] == f"v1.{NEWEST_KNOWN_MINOR}"
    assert parse_minor_setting("") == NEWEST_KNOWN_MINOR - 3
    assert parse_minor_setting("1.30") == 30
    with pytest.raises(ValueError):
        parse_minor_setting("thirty")


# -- through the pages that freeze or print verdicts ------------------------------------------


@pytest.mark.django_db
def test_the_sign_off_snapshot_and_the_report_say_emulated_and_not_counted(client, maintainer):
    from dashboard.domain.models import Cluster, Run, SignOff
    from tests import factories as f

    lab = f.cluster("calico-lab", lab=True, emulated=True)
    run = f.run(lab)
    real = f.run(f.cluster("cilium-prod", plugin_slug="cilium"))
    client.force_login(maintainer)
    assert (
        client.post(
            "/review/signoff/",
            {
                "from_stage": "alpha",
                "to_stage": "beta",
                "comment": "looked at it",
                "kubernetes_release": "1.19",
                "override": "confirmed",
                "override_reason": "emulated evidence is enough here",
            },
        ).status_code
        == 302
    )
    snapshot = SignOff.objects.get().snapshot
    entries = [e for t in snapshot["transitions"] for c in t["criteria"] for e in c["evidence"]]
    lab_entries = [e for e in entries if e["kind"] == "run" and e["id"] == run.id]
    assert lab_entries and all(
        e["counts"] is False and e["emulated"] and "emulated" in e["why"] for e in lab_entries
    )
    assert any(e["id"] == real.id and e["counts"] for e in entries)
    # Later changes do not rewrite what the sign-off saw.
    Cluster.objects.filter(pk=lab.pk).update(emulated=False, lab=False)
    Run.objects.filter(pk=run.pk).update(emulated=False)
    assert SignOff.objects.get().snapshot == snapshot

    report = client.get("/review/report.md").content.decode()
    line = next(line for line in report.splitlines() if line.startswith(f"- [run {run.id}]"))
    assert "(emulated cluster)" in line and "*emulated, not counted*" in line
    real_line = next(line for line in report.splitlines() if line.startswith(f"- [run {real.id}]"))
    assert "**counted**" in real_line


@pytest.mark.django_db
def test_the_report_lists_verified_submissions_with_reviewer_and_reason_and_escapes_vendor_text(
    client, maintainer, settings
):
    from dashboard.domain.submissions import review
    from tests import factories as f

    settings.SITE_URL = "https://sctp.example.org"
    sub = f.submission(
        "cilium", status="pending_review", plugin_version="1.16 <img src=x onerror=alert(1)>"
    )
    review(
        sub,
        user=maintainer,
        verify=True,
        reason="matches [the Sonobuoy run](http://evil) | in PR 123",
    )
    client.force_login(maintainer)
    report = client.get("/review/report.md").content.decode()
    row = next(line for line in report.splitlines() if line.startswith(f"| [{sub.id}]"))
    assert f"(https://sctp.example.org/submissions/{sub.id}/)" in row
    assert "maria" in row and "matches \\[the Sonobuoy run\\]\\(http://evil\\) \\| in PR 123" in row
    assert not re.search(r"(?<!\\)<img", report) and "\\<img" in report


@pytest.mark.django_db
def test_one_legacy_cluster_does_not_flip_the_plugin_badge():
    from dashboard.domain.badges import plugin_status
    from dashboard.domain.models import Plugin
    from tests import factories as f

    f.run(f.cluster("calico-prod"), days_ago=2)
    legacy = f.cluster("calico-legacy", kubernetes_version="1.18.20")
    f.run(legacy, f.with_outcome("pod-to-service", Outcome.FAILED), days_ago=1)
    calico = Plugin.objects.get(slug="calico")
    status = plugin_status(calico)
    assert status.status == "passing", status.why
    # A failure of a counted version and proxier does flip it, and says which.
    f.run(
        f.cluster("calico-ipvs", proxier="ipvs", plugin_version="3.29.0"),
        f.with_outcome("pod-to-pod", Outcome.FAILED),
        days_ago=0.5,
    )
    status = plugin_status(calico)
    assert (
        status.status == "failing"
        and "3.29.0 on ipvs" in status.why
        and "pod-to-pod failed" in status.why
    )


@pytest.mark.django_db
def test_a_plugin_with_only_emulated_evidence_says_so_on_its_badge(client):
    from tests import factories as f

    f.run(f.cluster("calico-lab", lab=True, emulated=True))
    body = client.get("/badge/calico.svg").content.decode()
    assert "emulated only (not counted)" in body
