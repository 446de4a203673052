"""periodic-basic-passing: an enabled periodic schedule runs the basic battery on a cluster, its
last READINESS_PERIODIC_RUNS scheduled runs all finished with no basic test failed or errored,
and the newest is younger than twice the schedule's interval (`stale` when only the age fails)."""

from __future__ import annotations

from django.db.models import OuterRef, Subquery

from dashboard.catalog import Battery
from dashboard.models import Run, Schedule

from ..base import Context, EvidenceRef, Verdict, day, plural

KEY = "periodic-basic-passing"
TITLE = 'A periodic job runs the "Basic Tests", and it passes'

TERMINAL = [Run.State.FINISHED, Run.State.ERROR, Run.State.CANCELLED]


def evaluate(ctx: Context) -> Verdict:
    n = ctx.periodic_runs
    recent = Run.objects.filter(
        schedule=OuterRef("pk"), trigger=Run.Trigger.PERIODIC, state__in=TERMINAL
    ).order_by("-created")
    # The last n terminal runs of every schedule, as n correlated "LIMIT 1 OFFSET i" lookups
    # on the (schedule, -created) index: two queries in all, whatever the history.
    annotations = {f"run_{i}": Subquery(recent.values("id")[i : i + 1]) for i in range(n)}
    schedules = list(
        Schedule.objects.filter(enabled=True, battery__in=[Battery.BASIC, Battery.ALL], cluster__enabled=True)
        .select_related("cluster")
        .annotate(**annotations)
    )
    if not schedules:
        return Verdict(KEY, TITLE, "unmet", "no enabled periodic schedule runs the basic battery")
    run_ids = {getattr(s, f"run_{i}") for s in schedules for i in range(n)} - {None}
    runs = {
        r.id: r
        for r in Run.objects.filter(id__in=run_ids).only("id", "state", "created", "finished", "basic_ok", "error")
    }

    candidates = []
    for s in schedules:
        last = [runs[rid] for i in range(n) if (rid := getattr(s, f"run_{i}")) in runs]
        evidence = [EvidenceRef("run", r.id, f"{s.cluster.name} run {r.id}") for r in last]
        bad = [r for r in last if not (r.state == Run.State.FINISHED and r.basic_ok)]
        row = {"schedule": s.pk, "cluster": s.cluster.name, "interval_minutes": s.interval_minutes,
               "runs": [r.id for r in last], "passing": len(bad) == 0 and len(last) == n}
        if not last:
            status, why = "unmet", f"{s.cluster.name}: no scheduled run has ended yet; the last {n} must pass"
        elif len(last) < n:
            status, why = "unmet", f"{s.cluster.name}: only {plural(len(last), 'scheduled run')} of the last {n} needed"
        elif bad:
            r = bad[0]
            what = "did not pass its basic tests" if r.state == Run.State.FINISHED else f"ended {r.state}"
            status, why = "unmet", f"{s.cluster.name}: scheduled run {r.id} on {day(r.created)} {what}"
        else:
            newest = last[0]
            when = newest.finished or newest.created
            if ctx.now - when > 2 * s.interval:
                status = "stale"
                why = (f"{s.cluster.name}: last {n} scheduled runs passed, but the newest is from "
                       f"{day(when)}, older than twice the {s.interval_minutes}-minute interval")
            else:
                status = "met"
                why = f"{s.cluster.name}: last {n} scheduled basic runs passed, newest {day(when)}"
        row["status"] = status
        candidates.append((status, why, evidence, row))

    order = {"met": 0, "stale": 1, "unmet": 2}
    candidates.sort(key=lambda c: order[c[0]])
    status, why, evidence, _ = candidates[0]
    rows = [c[3] for c in candidates]
    if status == "met":
        return Verdict(KEY, TITLE, "met", why, evidence, rows)
    return Verdict(KEY, TITLE, status, why, evidence, rows)
