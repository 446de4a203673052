"""The evaluation's fast path gives exactly the plain evaluation's verdicts, on random histories.

The fast path (what the pages publish) finds every criterion's candidates first, reads them in
one load shared by the criteria, finds the fleet's and every plugin's connectivity candidates in
one set of ranking queries, and answers each assessment once. The plain evaluation
(Context(plain=True), and each plugin's badge on its own) finds and reads everything per
criterion and per plugin with the plain lookups. Hypothesis builds random histories (plugins
in and out of tree, with and without NetworkPolicy, clusters approved or not, emulated or not,
on releases under and over the floor, runs finished or not with random outcomes and ages,
scheduled runs, agent runs verified or not, submissions of every status) and compares both
answers whole: statuses, details, evidence lists and rows, and every badge.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils.timezone import now
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboard.domain import heads
from dashboard.domain.badges import plugin_status
from dashboard.domain.catalog import ALL_KEYS, Outcome
from dashboard.domain.models import Plugin, Run, Submission
from dashboard.domain.publication import _badges
from dashboard.domain.readiness import Context, evaluate
from dashboard.domain.readiness.evidence_lookup import connectivity_candidates, plugins_by_id
from kernel.vocabulary import PROXIERS
from tests import factories as f

pytestmark = pytest.mark.django_db

PLUGINS = [("calico", False, True), ("cilium", False, True), ("flannel", False, False)]
PLUGINS += [("kubenet", True, False)]
OUTCOMES = [Outcome.PASSED] * 4 + [Outcome.FAILED, Outcome.ERROR, Outcome.SKIPPED, Outcome.NOT_RUN]
VERSIONS = ["1.34.2", "1.33.1", "1.29.0"]

outcomes = st.fixed_dictionaries({k: st.sampled_from(OUTCOMES) for k in ALL_KEYS})
runs = st.lists(
    st.fixed_dictionaries(
        {
            "outcomes": outcomes,
            "days_ago": st.floats(0.01, 130),
            "state": st.sampled_from(["finished"] * 4 + ["error", "cancelled"]),
            "periodic": st.booleans(),
            "battery": st.sampled_from(["all", "basic", "connectivity"]),
            "detected": st.sampled_from(["same", None, "ipvs"]),
            "module_before": st.sampled_from([None, {"node-1": True}, {}]),
            "agent": st.sampled_from([None, None, None, "unverified", "verified"]),
        }
    ),
    max_size=5,
)
clusters = st.lists(
    st.fixed_dictionaries(
        {
            "plugin": st.sampled_from(PLUGINS),
            "proxier": st.sampled_from(["iptables", "ipvs", "nftables"]),
            "approved": st.booleans(),
            "emulated": st.sampled_from([False, False, True]),
            "version": st.sampled_from(VERSIONS),
            "schedule": st.sampled_from([None, "basic", "all"]),
            "runs": runs,
        }
    ),
    max_size=5,
)
submissions = st.lists(
    st.fixed_dictionaries(
        {
            "plugin": st.sampled_from(PLUGINS),
            "outcomes": outcomes,
            "status": st.sampled_from(["verified", "verified", "pending_review", "rejected"]),
            "days_ago": st.floats(0.01, 130),
            "proxier": st.sampled_from(["iptables", "ipvs", "nftables"]),
            "version": st.sampled_from(VERSIONS),
        }
    ),
    max_size=6,
)


def build(cluster_specs: list[dict], submission_specs: list[dict]) -> None:
    for slug, in_tree, netpol in PLUGINS:
        f.plugin(slug, in_tree=in_tree, netpol=netpol)
    for spec in cluster_specs:
        slug = spec["plugin"][0]
        c = f.cluster(
            plugin_slug=slug,
            proxier=spec["proxier"],
            approved=spec["approved"],
            emulated=spec["emulated"],
            kubernetes_version=spec["version"],
        )
        schedule = f.schedule(c, battery=spec["schedule"]) if spec["schedule"] else None
        for r in spec["runs"]:
            periodic = bool(r["periodic"] and schedule)
            run = f.run(
                c,
                r["outcomes"],
                battery=r["battery"],
                days_ago=r["days_ago"],
                state=r["state"],
                trigger=Run.Trigger.PERIODIC if periodic else Run.Trigger.MANUAL,
                schedule=schedule if periodic else None,
                detected=r["detected"],
                module_before=r["module_before"],
            )
            if r["agent"]:
                verified = now() if r["agent"] == "verified" else None
                Run.objects.filter(pk=run.pk).update(
                    trigger=Run.Trigger.AGENT, agent_verified_at=verified
                )
                heads.refresh_runs([run.pk])  # a bulk UPDATE: as the application's own do
    for spec in submission_specs:
        f.submission(
            spec["plugin"][0],
            spec["outcomes"],
            status=spec["status"],
            days_ago=spec["days_ago"],
            proxier=spec["proxier"],
            kubernetes_version=spec["version"],
        )


def plain(at) -> tuple[dict, dict]:
    evaluation = evaluate(Context(now=at, plain=True))
    badges: dict[str, dict] = {}
    for plugin in Plugin.objects.all():
        st_ = plugin_status(plugin, at)
        badges[plugin.slug] = {"status": st_.status, "message": st_.message, "why": st_.why}
        # The plugin's own candidates (its own lookups, not the fast path's), on each mode.
        mine = connectivity_candidates(plugins_by_id(), plugin_id=plugin.pk)
        badges[plugin.slug]["proxiers"] = {
            mode: {"status": s.status, "message": s.message, "why": s.why}
            for mode in PROXIERS
            for s in [plugin_status(plugin, at, mine, proxier=mode)]
        }
    return evaluation, badges


def fast(at) -> tuple[dict, dict]:
    ctx = Context(now=at)
    evaluation = evaluate(ctx)
    return evaluation, _badges(ctx)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(cluster_specs=clusters, submission_specs=submissions)
def test_the_fast_path_gives_the_plain_evaluations_verdicts(cluster_specs, submission_specs):
    with transaction.atomic():
        build(cluster_specs, submission_specs)
        at = now() + timedelta(seconds=1)
        assert heads.stale() == []
        assert fast(at) == plain(at)
        transaction.set_rollback(True)


def test_the_fast_path_and_the_plain_evaluation_agree_past_the_newest_200_submissions():
    """Each plugin's newest 200 connectivity submissions and the fleet's newest 200 come from
    one ranking query on the fast path: the same ones as the plain lookups find."""
    for i in range(230):
        f.submission(
            ("calico", "cilium")[i % 2],
            status=Submission.Status.VERIFIED if i % 3 else Submission.Status.PENDING,
            days_ago=(i % 50) / 7,
        )
    f.run(f.cluster(plugin_slug="calico", proxier="ipvs"))
    at = now() + timedelta(seconds=1)
    assert fast(at) == plain(at)
