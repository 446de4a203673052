"""The evidence heads (dashboard/domain/heads.py): per cluster, plugin and schedule, the newest
evidence of each kind, pre-aggregated into one row each and kept up to date by every path that
changes evidence. (Every database test also checks them when it ends: tests/conftest.py.)"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils.timezone import now

from dashboard.domain import heads, trust, withdrawals
from dashboard.domain.history import record_evaluation
from dashboard.domain.models import EvidenceHead, Run, Submission
from dashboard.domain.readiness import Context, evaluate
from tests import factories as f

pytestmark = pytest.mark.django_db


def cluster_heads(cluster) -> dict:
    return EvidenceHead.objects.get(cluster=cluster).heads


def verdicts(at=None) -> dict:
    at = at or now() + timedelta(seconds=1)
    fast = evaluate(Context(now=at))
    plain = evaluate(Context(now=at, plain=True))
    assert fast == plain
    return {c["key"]: c["status"] for t in fast["transitions"] for c in t["criteria"]}


def test_a_finished_run_becomes_its_clusters_newest_evidence_of_each_kind():
    c = f.cluster(proxier="ipvs")
    old = f.run(c, days_ago=3)
    new = f.run(c, days_ago=1)
    assert cluster_heads(c) == {"c_run": new.pk, "q_run": new.pk, "p_run": new.pk}
    failing = f.run(c, f.with_outcome("pod-to-service", "failed"), days_ago=0.5)
    assert cluster_heads(c) == {"c_run": failing.pk, "q_run": new.pk, "p_run": new.pk}
    assert old.pk not in cluster_heads(c).values()


def test_a_runs_end_and_its_heads_commit_together(monkeypatch):
    """A worker that dies between ending a run and refreshing its heads leaves neither: nobody
    sees the run ended while its cluster's heads still say it is not (CI's e2e test did)."""
    from dashboard.domain import runs

    c = f.cluster()
    run = f.run(c, days_ago=0.1, state=Run.State.RUNNING)

    def killed(**kwargs):
        raise KeyboardInterrupt("the worker was killed here")

    monkeypatch.setattr(heads, "refresh", killed)
    with pytest.raises(KeyboardInterrupt):
        runs.finish(
            Run.objects.select_related("cluster__plugin").get(pk=run.pk), "finished", "", None
        )
    assert Run.objects.get(pk=run.pk).state == Run.State.RUNNING
    monkeypatch.undo()
    runs.finish(Run.objects.select_related("cluster__plugin").get(pk=run.pk), "finished", "", None)
    assert Run.objects.get(pk=run.pk).state == Run.State.FINISHED
    assert heads.stale() == []


def test_a_queued_or_running_run_moves_nothing():
    c = f.cluster()
    done = f.run(c, days_ago=1)
    f.run(c, days_ago=0.1, state=Run.State.RUNNING)
    assert cluster_heads(c)["c_run"] == done.pk


def test_withdrawing_and_reinstating_a_run_moves_the_counted_heads(maintainer):
    c = f.cluster()
    older, newer = f.run(c, days_ago=2), f.run(c, days_ago=1)
    withdrawals.withdraw(newer, actor=maintainer, reason="the cluster was misconfigured")
    # still the newest connectivity run (shown, as withdrawn), no longer a counted candidate
    assert cluster_heads(c) == {"c_run": newer.pk, "q_run": older.pk, "p_run": older.pk}
    withdrawals.reinstate(newer, actor=maintainer, reason="it was not")
    assert cluster_heads(c)["q_run"] == newer.pk


def test_verifying_a_self_reported_run_makes_it_a_candidate(maintainer):
    c = f.cluster()
    trusted = f.run(c, days_ago=2)
    agent = f.run(c, days_ago=1)
    Run.objects.filter(pk=agent.pk).update(trigger=Run.Trigger.AGENT)
    heads.refresh_runs([agent.pk])
    assert cluster_heads(c)["q_run"] == trusted.pk  # an unverified claim hides nothing
    trust.verify_agent_run(Run.objects.get(pk=agent.pk), maintainer, "checked its facts")
    assert cluster_heads(c)["q_run"] == agent.pk
    trust.unverify_agent_run(Run.objects.get(pk=agent.pk), maintainer, "wrong cluster")
    assert cluster_heads(c)["q_run"] == trusted.pk


def test_deleting_a_run_or_its_cluster_keeps_the_heads_right():
    c = f.cluster()
    older, newer = f.run(c, days_ago=2), f.run(c, days_ago=1)
    newer.delete()
    assert cluster_heads(c)["c_run"] == older.pk
    schedule = f.schedule(c)
    f.run(c, days_ago=0.5, trigger=Run.Trigger.PERIODIC, schedule=schedule)
    cluster_id, schedule_id = c.pk, schedule.pk
    c.delete()  # its runs go first (post_delete), then the cluster and its rows
    assert not EvidenceHead.objects.filter(cluster_id=cluster_id).exists()
    assert not EvidenceHead.objects.filter(schedule_id=schedule_id).exists()


def test_a_schedules_heads_are_its_last_terminal_scheduled_runs():
    c = f.cluster()
    s = f.schedule(c)
    made = [
        f.run(c, battery="basic", days_ago=d, trigger=Run.Trigger.PERIODIC, schedule=s)
        for d in (5, 4, 3, 2)
    ]
    f.run(
        c,
        battery="basic",
        days_ago=0.1,
        state=Run.State.RUNNING,
        trigger=Run.Trigger.PERIODIC,
        schedule=s,
    )
    f.run(c, battery="basic", days_ago=0.2)  # not scheduled
    stored = EvidenceHead.objects.get(schedule=s).heads
    assert stored == {"n": 3, "runs": [made[3].pk, made[2].pk, made[1].pk]}


def test_a_submissions_verification_and_withdrawal_move_its_plugins_heads(maintainer):
    first = f.submission("cilium", days_ago=3)
    pending = f.submission("cilium", status=Submission.Status.PENDING, days_ago=1)
    plugin_heads = EvidenceHead.objects.get(plugin__slug="cilium").heads
    assert plugin_heads == {"q_sub": first.pk, "c_sub": first.pk}
    pending.status = Submission.Status.VERIFIED
    pending.save()
    assert EvidenceHead.objects.get(plugin__slug="cilium").heads["q_sub"] == pending.pk
    withdrawals.withdraw(pending, actor=maintainer, reason="edited file")
    assert EvidenceHead.objects.get(plugin__slug="cilium").heads["q_sub"] == first.pk


@pytest.mark.heads_unchecked
def test_a_change_behind_the_applications_back_lasts_until_the_next_recording():
    c = f.cluster()
    older, newer = f.run(c, days_ago=2), f.run(c, days_ago=1)
    Run.objects.filter(pk=newer.pk).update(
        qualifying=False, has_connectivity=False
    )  # a SQL console
    stored = f'{{"c_run": {newer.pk}, "p_run": {newer.pk}, "q_run": {newer.pk}}}'
    history = f'{{"c_run": {older.pk}, "p_run": {newer.pk}, "q_run": {older.pk}}}'
    assert heads.stale() == [f"cluster {c.pk}: stored {stored}, history says {history}"]
    record_evaluation(reason="every minute")  # beat's readiness recording rebuilds them
    assert heads.stale() == []


@pytest.mark.heads_unchecked
def test_the_evaluation_reads_the_stored_rows_and_migrate_fills_them():
    f.run(f.cluster(proxier="iptables"))
    f.run(f.cluster(plugin_slug="cilium", proxier="ipvs"))
    assert verdicts()["iptables-and-ipvs"] == "met"
    EvidenceHead.objects.all().delete()
    # The fast path no longer finds the runs: it reads the rows, not the history.
    fast = evaluate(Context(now=now() + timedelta(seconds=1)))
    found = {c["key"]: c["status"] for t in fast["transitions"] for c in t["criteria"]}
    assert found["iptables-and-ipvs"] == "unmet"
    call_command("migrate", verbosity=0)  # post_migrate: every row from the history
    assert heads.stale() == []
    assert verdicts()["iptables-and-ipvs"] == "met"


def test_a_changed_number_of_periodic_runs_reads_the_history_until_the_rows_follow(settings):
    c = f.cluster()
    s = f.schedule(c)
    for d in (4, 3, 2, 1):
        f.run(c, battery="basic", days_ago=d / 24, trigger=Run.Trigger.PERIODIC, schedule=s)
    assert verdicts()["periodic-basic-passing"] == "met"
    settings.READINESS_PERIODIC_RUNS = 5  # the stored rows hold 3: the plain lookups answer
    assert verdicts()["periodic-basic-passing"] == "unmet"
    heads.rebuild()
    assert EvidenceHead.objects.get(schedule=s).heads["n"] == 5
    assert verdicts()["periodic-basic-passing"] == "unmet"
