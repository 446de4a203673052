"""two-out-of-tree-plugins: at least two distinct out-of-tree plugins each have fresh, counted,
qualifying connectivity evidence (one vote per plugin, however many versions, clusters or runs).
`at_risk` when met but a counted plugin's newest counted connectivity evidence does not qualify;
`stale` when it would be met only with evidence older than the freshness window."""

from __future__ import annotations

import re
from dataclasses import replace

from dashboard.domain.catalog import criterion_title
from dashboard.domain.policy import (
    QUALIFYING_KEYS,
    TWO_PLUGINS,
    Assessment,
    Item,
    evidence_entry,
    qualifying,
)
from dashboard.domain.readiness.base import Context, Verdict, plural
from dashboard.domain.readiness.evidence_lookup import connectivity, plugins_by_id
from dashboard.domain.readiness.whatif import with_what_if
from kernel.vocabulary import VERDICTS

KEY = TWO_PLUGINS
TITLE = criterion_title(KEY)
NEEDED = 2


def evaluate(ctx: Context) -> Verdict:
    return with_what_if(_evaluate, ctx)


def _day(item: Item) -> str:
    return item.when.strftime("%Y-%m-%d") if item.when else "no date"


def _version(text: str) -> tuple[int, ...]:
    """ "1.17.0", "v1.17", "3.28.0-rc1" -> (1, 17, 0) …; () when it has no number."""
    return tuple(int(part) for part in re.findall(r"\d+", (text or "").split("-")[0])[:4])


def _regression(eligible: list[tuple[Item, Assessment]]) -> tuple[Item, Assessment] | None:
    """The counted connectivity evidence that puts a counted plugin at risk: its newest one
    (eligible is newest first), or the newest of its newest plugin version, whatever the
    cluster or proxier, when that one does not qualify (a regression in the latest release,
    however many older versions still qualify)."""
    if not eligible:
        return None
    newest = eligible[0]
    if not newest[1].counts:
        return newest
    top = max(_version(item.plugin_version) for item, _ in eligible)
    if not top:
        return None
    latest = next((pair for pair in eligible if _version(pair[0].plugin_version) == top), None)
    if latest is not None and not latest[1].counts:
        return latest
    return None


def conclusive(item: Item) -> bool:
    """A verdict (passed or failed) on at least one of the tests that qualify a plugin."""
    return any(item.outcome(k) in VERDICTS for k in QUALIFYING_KEYS)


def _evaluate(ctx: Context, relax: frozenset[str]) -> tuple[Verdict, set[str]]:
    plugins = ctx.memo("plugins", plugins_by_id)
    items = connectivity(ctx)
    pol = ctx.policy
    assessed: dict[str, list[tuple[Item, Assessment]]] = {}
    for item in items:  # newest first
        assessed.setdefault(item.plugin.slug, []).append((item, pol.assess(item, KEY, relax)))

    counted, stale_only, at_risk, notes, rows, evidence = [], [], [], [], [], []
    used: set[str] = set()
    for p in sorted(plugins.values(), key=lambda plugin: plugin.name.lower()):
        pairs = assessed.get(p.slug, [])
        evidence += [evidence_entry(i, a) for i, a in pairs]
        good = [(i, a) for i, a in pairs if a.counts]
        eligible = [(i, a) for i, a in pairs if a.counts or a.outcome_only]
        # The most telling evidence: the newest with a verdict on a qualifying test, so an
        # all-skipped legacy run never hides a real result; the newest attempt is shown beside it.
        telling = [(i, a) for i, a in pairs if conclusive(i)]
        row = {
            "plugin": p.slug,
            "name": p.name,
            "in_tree": p.in_tree,
            "status": "no evidence",
            "qualifying": evidence_entry(*good[0]) if good else None,
            "latest": evidence_entry(*pairs[0]) if pairs else None,
            "conclusive": evidence_entry(*telling[0]) if telling else None,
            "why": (telling or pairs)[0][1].why if pairs else "no connectivity evidence",
        }
        if good:
            counted.append(p.slug)
            for _, a in good:
                used |= a.relied
            row["status"] = "counted"
            row["why"] = good[0][1].why
            regressed = _regression(eligible)
            if regressed is not None:
                newest_item, newest = regressed
                version = newest_item.plugin_version or "an unknown version"
                row["status"] = "counted, at risk"
                at_risk.append(
                    f"{p.slug} {version}: newest counted connectivity evidence "
                    f"({newest_item.kind} {newest_item.id}, {_day(newest_item)}) does not "
                    f"qualify: {newest.why.removeprefix('not counted: ')}"
                )
        elif any(a.stale_only for _, a in pairs):
            item, _a = next((i, a) for i, a in pairs if a.stale_only)
            row["status"] = "stale"
            stale_only.append(f"{p.slug} (last qualified {_day(item)})")
        elif pairs:
            item, a = (telling or pairs)[0]
            row["status"] = "in-tree (does not count)" if p.in_tree else "not counted"
            if p.in_tree:
                as_exempt = replace(pairs[0][0].plugin, netpol_exemption="in-tree")
                if any(qualifying(i.outcomes, as_exempt)[0] for i, _ in pairs):
                    notes.append(f"in-tree {p.slug} qualifies but does not count")
            elif a.outcome_only:
                notes.append(f"{p.slug}: {a.why.removeprefix('not counted: ')} on {_day(item)}")
            else:
                notes.append(f"{p.slug}: {item.kind} {item.id} on {_day(item)} {a.why}")
        if pairs or not p.in_tree:
            rows.append(row)

    if len(counted) >= NEEDED:
        if at_risk:
            return Verdict(
                KEY,
                TITLE,
                "at_risk",
                f"{len(counted)} plugins counted ({', '.join(counted)}); " + "; ".join(at_risk),
                evidence,
                rows,
            ), used
        return Verdict(
            KEY,
            TITLE,
            "met",
            f"{len(counted)} out-of-tree plugins pass: {', '.join(counted)}",
            evidence,
            rows,
        ), used
    have = f"counted: {', '.join(counted)}" if counted else "none counted yet"
    if len(counted) + len(stale_only) >= NEEDED:
        return Verdict(
            KEY,
            TITLE,
            "stale",
            f"{have}; only stale evidence (older than {ctx.fresh_days} days) "
            f"for {', '.join(stale_only)}",
            evidence,
            rows,
        ), used
    missing = NEEDED - len(counted)
    detail = f"needs {plural(missing, 'more out-of-tree plugin')} with fresh counted qualifying evidence ({have})"
    if notes:
        detail += (
            "; " + "; ".join(notes[:6]) + (f"; and {len(notes) - 6} more" if len(notes) > 6 else "")
        )
    if stale_only:
        detail += "; stale: " + ", ".join(stale_only)
    return Verdict(KEY, TITLE, "unmet", detail, evidence, rows), used
