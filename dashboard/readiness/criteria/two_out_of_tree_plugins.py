"""two-out-of-tree-plugins: at least two distinct out-of-tree plugins each have fresh qualifying
connectivity evidence. One vote per plugin, however many versions, clusters or runs it has.
`at_risk` when met but a counted plugin's newest connectivity evidence is not qualifying;
`stale` when it would be met only with evidence older than the freshness window."""

from __future__ import annotations

from django.db.models import OuterRef, Subquery

from dashboard.models import Plugin

from ..base import Context, Verdict, day, plural
from ..evidence_lookup import finished_runs, load, newest, verified_submissions

KEY = "two-out-of-tree-plugins"
TITLE = "At least 2 out-of-tree network plugins pass the [Feature:SCTPConnectivity] tests"
NEEDED = 2


def evaluate(ctx: Context) -> Verdict:
    def newest_id(qs, order):  # type: ignore[no-untyped-def]
        return Subquery(qs.filter(plugin=OuterRef("pk")).order_by(order).values("id")[:1])

    runs, subs = finished_runs(), verified_submissions()
    # "flag__in=[True]", not "flag=True": SQLite compiles the latter to a bare column test that
    # cannot use the (plugin, state, flag, -time) indexes.
    plugins = list(
        Plugin.objects.annotate(
            q_run=newest_id(runs.filter(qualifying__in=[True]), "-finished"),
            c_run=newest_id(runs.filter(has_connectivity__in=[True]), "-finished"),
            q_sub=newest_id(subs.filter(qualifying__in=[True]), "-created"),
            c_sub=newest_id(subs.filter(has_connectivity__in=[True]), "-created"),
        ).order_by("name")
    )
    found = load(
        [p.q_run for p in plugins] + [p.c_run for p in plugins],
        [p.q_sub for p in plugins] + [p.c_sub for p in plugins],
    )

    counted, stale_only, in_tree_qualifying, at_risk, rows = [], [], [], [], []
    failing: list[str] = []
    evidence = []
    for p in plugins:
        best = newest(found.get(("run", p.q_run)), found.get(("submission", p.q_sub)))
        latest = newest(found.get(("run", p.c_run)), found.get(("submission", p.c_sub)))
        row = {"plugin": p.slug, "name": p.name, "in_tree": p.in_tree, "status": "no evidence",
               "qualifying": best.ref.to_dict() if best else None,
               "latest": latest.ref.to_dict() if latest else None}
        if best is None:
            if latest is not None:
                row["status"] = "not qualifying"
                if not p.in_tree:
                    failing.append(f"{p.slug}: {latest.qualifying_reason} on {day(latest.when)}")
            if latest is not None or not p.in_tree:
                rows.append(row)
            continue
        if p.in_tree:
            row["status"] = "in-tree (does not count)"
            in_tree_qualifying.append(p.slug)
        elif ctx.is_fresh(best.when):
            row["status"] = "counted"
            counted.append(p.slug)
            evidence.append(best.ref)
            if latest is not None and not latest.qualifying:
                row["status"] = "counted, at risk"
                at_risk.append(f"{p.slug}: newest connectivity evidence ({latest.kind} {latest.id}, "
                               f"{day(latest.when)}) does not qualify: {latest.qualifying_reason}")
                evidence.append(latest.ref)
        else:
            row["status"] = "stale"
            stale_only.append(f"{p.slug} (last qualified {day(best.when)})")
            evidence.append(best.ref)
        rows.append(row)

    if len(counted) >= NEEDED:
        if at_risk:
            return Verdict(KEY, TITLE, "at_risk", f"{len(counted)} plugins counted ({', '.join(counted)}); "
                           + "; ".join(at_risk), evidence, rows)
        return Verdict(KEY, TITLE, "met", f"{len(counted)} out-of-tree plugins pass: {', '.join(counted)}",
                       evidence, rows)
    missing = NEEDED - len(counted)
    have = f"counted: {', '.join(counted)}" if counted else "none counted yet"
    if len(counted) + len(stale_only) >= NEEDED:
        return Verdict(KEY, TITLE, "stale", f"{have}; only stale evidence (older than {ctx.fresh_days} days) "
                       f"for {', '.join(stale_only)}", evidence, rows)
    detail = f"needs {plural(missing, 'more out-of-tree plugin')} with fresh qualifying evidence ({have})"
    if failing:
        detail += "; " + "; ".join(failing)
    if stale_only:
        detail += "; stale: " + ", ".join(stale_only)
    if in_tree_qualifying:
        detail += f"; in-tree {', '.join(in_tree_qualifying)} qualifies but does not count"
    return Verdict(KEY, TITLE, "unmet", detail, evidence, rows)
