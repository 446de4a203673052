"""periodic-basic-passing: an enabled periodic schedule runs the basic battery on an approved,
non-emulated cluster, its last READINESS_PERIODIC_RUNS scheduled runs are all conclusive basic
runs (a basic test passed, none failed or errored, the sctp.ko invariant checked on a node where
the module was not loaded before), and the newest is younger than twice the schedule's interval
(`stale` when only the age fails)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from dashboard.domain import heads
from dashboard.domain.catalog import Battery, criterion_title
from dashboard.domain.models import Schedule
from dashboard.domain.policy import PERIODIC, Item, evidence_entry
from dashboard.domain.readiness.base import Context, Verdict, day, plural
from dashboard.domain.readiness.evidence_lookup import load, plugins_by_id, store_of
from dashboard.domain.readiness.whatif import with_what_if

KEY = PERIODIC
TITLE = criterion_title(KEY)


def evaluate(ctx: Context) -> Verdict:
    return with_what_if(_evaluate, ctx)


@dataclass(frozen=True)
class ScheduleRow:
    """What the criterion reads of a schedule: plain values, not model instances (an
    evaluation reads every enabled schedule, hundreds, with their clusters)."""

    pk: int
    interval_minutes: int
    cluster_name: str
    runs: tuple[int | None, ...]  # its last n terminal scheduled runs, newest first

    @property
    def interval(self) -> timedelta:
        return timedelta(minutes=self.interval_minutes)


def candidates(ctx: Context) -> tuple[list[ScheduleRow], set[int]]:
    """The enabled schedules of the basic battery and the ids of their last n terminal runs."""
    return ctx.memo("periodic-candidates", lambda: _candidates(ctx))  # type: ignore[no-any-return]


def _candidates(ctx: Context) -> tuple[list[ScheduleRow], set[int]]:
    n = ctx.periodic_runs
    schedules = Schedule.objects.filter(enabled=True, battery__in=[Battery.BASIC, Battery.ALL])
    fields = ("id", "interval_minutes", "cluster__name")  # what a row shows
    stored = None if ctx.plain else ctx.memo("heads", heads.read)["schedule"]
    if stored is None or any(h.get("n") != n for h in stored.values()):
        # The plain lookups (and, until the next rebuild, a changed READINESS_PERIODIC_RUNS):
        # the last n terminal runs of every schedule, as n correlated "LIMIT 1 OFFSET i"
        # lookups on the (schedule, -created) index.
        slots = heads.schedule_slots(n)
        found = [
            ScheduleRow(pk, minutes, name, tuple(ids))
            for pk, minutes, name, *ids in schedules.annotate(**slots).values_list(*fields, *slots)
        ]
    else:
        # The pre-aggregated rows (dashboard.domain.heads): no lookup at all.
        found = []
        for pk, minutes, name in schedules.values_list(*fields):
            ids = stored.get(pk, {}).get("runs", [])
            found.append(
                ScheduleRow(
                    pk, minutes, name, tuple(ids[i] if i < len(ids) else None for i in range(n))
                )
            )
    run_ids = {rid for s in found for rid in s.runs} - {None}
    return found, run_ids  # type: ignore[return-value]


def _schedules(ctx: Context) -> tuple[list[ScheduleRow], dict[tuple[str, int], Item]]:
    schedules, run_ids = candidates(ctx)
    plugins = ctx.memo("plugins", plugins_by_id)
    return schedules, load(run_ids, [], plugins, store_of(ctx))


def _evaluate(ctx: Context, relax: frozenset[str]) -> tuple[Verdict, set[str]]:
    n = ctx.periodic_runs
    schedules, items = ctx.memo("periodic", lambda: _schedules(ctx))
    if not schedules:
        return Verdict(
            KEY, TITLE, "unmet", "no enabled periodic schedule runs the basic battery"
        ), set()
    pol = ctx.policy
    candidates = []
    for s in schedules:
        last = [items[("run", rid)] for rid in s.runs if ("run", rid) in items]
        assessed = [(r, pol.assess(r, KEY, relax)) for r in last]
        evidence = [evidence_entry(r, a) for r, a in assessed]
        bad = [(r, a) for r, a in assessed if not a.counts]
        used = set().union(*(a.relied for _, a in assessed)) if assessed else set()
        row = {
            "schedule": s.pk,
            "cluster": s.cluster_name,
            "interval_minutes": s.interval_minutes,
            "runs": [r.id for r in last],
            "evidence": evidence,
            "passing": not bad and len(last) == n,
        }
        if not last:
            status, why = (
                "unmet",
                f"{s.cluster_name}: no scheduled run has ended yet; the last {n} must be conclusive",
            )
        elif bad:
            r, a = bad[0]
            status = "unmet"
            why = f"{s.cluster_name}: scheduled run {r.id} on {day(r.when)} {a.why}"
            if len(last) < n:
                why += f" (and only {plural(len(last), 'scheduled run')} of the {n} needed)"
        elif len(last) < n:
            status, why = (
                "unmet",
                (
                    f"{s.cluster_name}: only {plural(len(last), 'scheduled run')} "
                    f"of the last {n} needed (all conclusive so far)"
                ),
            )
        else:
            when = last[0].when
            if when is None or ctx.now - when > 2 * s.interval:
                status = "stale"
                why = (
                    f"{s.cluster_name}: last {n} scheduled runs were conclusive, but the newest is from "
                    f"{day(when)}, older than twice the {s.interval_minutes}-minute interval"
                )
            else:
                status = "met"
                why = f"{s.cluster_name}: last {n} scheduled basic runs conclusive and passing, newest {day(when)}"
        row["status"] = status
        candidates.append((status, why, evidence, row, used))

    order = {"met": 0, "stale": 1, "unmet": 2}
    candidates.sort(key=lambda c: order[c[0]])
    status, why, _evidence, _row, used = candidates[0]
    evidence = [e for c in candidates for e in c[2]]
    rows = [c[3] for c in candidates]
    if status != "met" and len(candidates) > 1:
        others = "; ".join(c[1] for c in candidates[1:4])
        why = f"{why}; {others}"
    return Verdict(KEY, TITLE, status, why, evidence, rows), used
