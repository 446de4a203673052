"""The post-GA watch (issue 39): do the GA criteria still hold on the supported releases, per
proxier and per plugin, with the evidence; and what regressed since it last held.

Supported releases are the newest READINESS_WATCH_MINORS minors (default 3) of the releases the
catalog knows. Evidence of a release newer than the catalog knows (a 1.38 run or file) is never
dropped: its release gets a row of its own above them, marked as read with the newest known
names, and outside the supported releases' verdict until the catalog knows it. A *cell* is one plugin × proxier × release: it **holds** when its newest eligible
connectivity evidence (counted, or failing only on its outcomes) is qualifying; it **regressed**
when that newest evidence does not qualify while older evidence of the same cell did (the
regression names the plugin, release, proxier, the tests, the run or file, and when). A release
holds when at least two out-of-tree plugins hold on it and pod-to-service is demonstrated on
both iptables and ipvs (the KEP's GA criteria, read per release). nftables is followed beside
them; ipvs is deprecated since 1.35 (KEP-5495).

It reads only the evaluation's shared candidates (evidence_lookup.connectivity): no query of its
own. Whether one item counts is the evidence policy's answer, as everywhere.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from dashboard.domain.catalog import (
    CONNECTIVITY_KEYS,
    NEWEST_KNOWN_MINOR,
    Outcome,
    Proxier,
    newer_than_known,
)
from dashboard.domain.policy import (
    BADGE,
    PROXIERS,
    QUALIFYING_KEYS,
    Assessment,
    Item,
    evidence_entry,
    on_proxier,
)
from dashboard.domain.readiness.base import Context
from dashboard.domain.readiness.criteria.iptables_and_ipvs import NOTES
from dashboard.domain.readiness.evidence_lookup import connectivity, plugins_by_id

# The order a reader scans: the default, the new default, the deprecated one.
MODES = (Proxier.IPTABLES, Proxier.NFTABLES, Proxier.IPVS)
REQUIRED = (Proxier.IPTABLES, Proxier.IPVS)
NEEDED = 2
DEFAULT_MINORS = 3


def supported_minors() -> list[int]:
    """The newest READINESS_WATCH_MINORS minors the catalog knows, newest first."""
    count = int(getattr(settings, "READINESS_WATCH_MINORS", DEFAULT_MINORS) or DEFAULT_MINORS)
    return [NEWEST_KNOWN_MINOR - i for i in range(max(1, count))]


def newer_minors(items: list[Item]) -> list[int]:
    """The minors of evidence newer than the catalog knows, newest first."""
    return sorted(
        {i.minor for i in items if i.minor is not None and i.minor > NEWEST_KNOWN_MINOR},
        reverse=True,
    )


def _day(item: Item) -> str:
    return item.when.strftime("%Y-%m-%d") if item.when else "no date"


def broken_tests(item: Item) -> list[str]:
    """The connectivity tests that keep this evidence from qualifying: failed or errored ones,
    then the qualifying tests that did not pass."""
    bad = [
        f"{k} {item.outcome(k).replace('_', ' ')}"
        for k in CONNECTIVITY_KEYS
        if item.outcome(k) in (Outcome.FAILED, Outcome.ERROR)
    ]
    named = {b.split(" ")[0] for b in bad}
    bad += [
        f"{k} {item.outcome(k).replace('_', ' ')}"
        for k in QUALIFYING_KEYS
        if k not in named and item.outcome(k) != Outcome.PASSED
    ]
    return bad


def closest(pairs: list[tuple[Item, Assessment]]) -> tuple[Item, Assessment]:
    """The candidate closest to counting: the fewest blocking conditions, the newest among those
    (pairs are newest first, and min() keeps the first of equals)."""
    return min(pairs, key=lambda pair: len(pair[1].blocked))


def row_label(item: Item) -> str:
    """The proxier a matrix row is under for this item (dashboard.domain.matrix.demonstrated):
    the demonstrated mode, else the declared one marked as not demonstrated."""
    if item.proxier:
        return item.proxier
    return f"{item.declared_proxier} (not demonstrated)" if item.declared_proxier else ""


def row_verdicts(ctx: Context) -> list[dict[str, Any]]:
    """Per plugin × proxier × Kubernetes minor (the matrix's rows, issue 39): does its
    connectivity qualify, and why not, from the candidate closest to counting."""
    pol = ctx.policy
    groups: dict[tuple[str, str, int], list[tuple[Item, Assessment]]] = {}
    for item in connectivity(ctx):  # newest first
        label = row_label(item)
        if item.minor is None or not label:
            continue
        groups.setdefault((item.plugin.slug, label, item.minor), []).append(
            (item, pol.assess(item, BADGE))
        )
    return [
        {"plugin": slug, "proxier": label, "minor": f"1.{minor}", **_cell(pairs)}
        for (slug, label, minor), pairs in sorted(groups.items())
    ]


def _cell(pairs: list[tuple[Item, Assessment]]) -> dict[str, Any]:
    """One plugin × proxier × release from its candidates (newest first)."""
    eligible = [(i, a) for i, a in pairs if a.counts or a.outcome_only]
    if eligible:
        newest, verdict = eligible[0]
        if verdict.counts:
            return {
                "status": "holds",
                "why": verdict.why.removeprefix("counts: "),
                "evidence": evidence_entry(newest, verdict),
                "when": _day(newest),
            }
        held = next(((i, a) for i, a in eligible[1:] if a.counts), None)
        cell: dict[str, Any] = {
            "status": "regressed" if held else "fails",
            "why": verdict.why.removeprefix("not counted: "),
            "tests": broken_tests(newest),
            "evidence": evidence_entry(newest, verdict),
            "when": _day(newest),
            "kubernetes_version": newest.kubernetes_version,
            "plugin_version": newest.plugin_version,
        }
        if held:
            cell["held"] = evidence_entry(*held)
            cell["held_when"] = _day(held[0])
        return cell
    stale = next(((i, a) for i, a in pairs if a.stale_only), None)
    if stale:
        return {
            "status": "stale",
            "why": f"last qualified {_day(stale[0])}",
            "evidence": evidence_entry(*stale),
            "when": _day(stale[0]),
        }
    if pairs:
        item, a = closest(pairs)
        return {
            "status": "not counted",
            "why": a.why.removeprefix("not counted: "),
            "evidence": evidence_entry(item, a),
            "when": _day(item),
        }
    return {"status": "no evidence", "why": "no connectivity evidence", "evidence": None}


def watch(ctx: Context) -> dict[str, Any]:
    plugins = ctx.memo("plugins", plugins_by_id)
    items = connectivity(ctx)  # newest first
    pol = ctx.policy
    supported = supported_minors()
    newer = newer_minors(items)
    minors = newer + supported
    by_plugin: dict[str, list[Item]] = {}
    for item in items:
        if item.minor in minors:
            by_plugin.setdefault(item.plugin.slug, []).append(item)

    rows: list[dict[str, Any]] = []
    regressions: list[dict[str, Any]] = []
    holding: dict[int, set[str]] = {m: set() for m in minors}
    for p in sorted(plugins.values(), key=lambda plugin: plugin.name.lower()):
        mine = by_plugin.get(p.slug, [])
        if not mine and p.in_tree:
            continue
        cells: list[dict[str, Any]] = []
        for mode in MODES:
            for minor in minors:
                pairs = [
                    (i, pol.assess(i, BADGE))
                    for i in mine
                    if i.minor == minor and on_proxier(i, mode)
                ]
                cell = {"proxier": str(mode), "release": f"1.{minor}", **_cell(pairs)}
                cells.append(cell)
                if cell["status"] == "holds" and not p.in_tree:
                    holding[minor].add(p.slug)
                if cell["status"] == "regressed":
                    regressions.append({"plugin": p.slug, "name": p.name, **cell})
        statuses = {c["status"] for c in cells}
        rows.append(
            {
                "plugin": p.slug,
                "name": p.name,
                "in_tree": p.in_tree,
                "status": (
                    "regressed"
                    if "regressed" in statuses
                    else "holds"
                    if "holds" in statuses
                    else "fails"
                    if "fails" in statuses
                    else "no evidence"
                    if statuses == {"no evidence"}
                    else "not counted"
                ),
                "cells": cells,
            }
        )

    releases = []
    for minor in minors:
        demonstrated: dict[str, dict[str, Any] | None] = {}
        for mode in MODES:
            found = None
            for item in items:
                if item.minor == minor and item.proxier == mode:
                    a = pol.assess(item, PROXIERS)
                    if a.counts:
                        found = evidence_entry(item, a)
                        break
            demonstrated[str(mode)] = found
        ok_plugins = sorted(holding[minor])
        missing = []
        if len(ok_plugins) < NEEDED:
            missing.append(
                f"{len(ok_plugins)} of {NEEDED} out-of-tree plugins qualify"
                + (f" ({', '.join(ok_plugins)})" if ok_plugins else "")
            )
        missing += [
            f"pod-to-service not demonstrated on {m}" for m in REQUIRED if not demonstrated[m]
        ]
        releases.append(
            {
                "release": f"1.{minor}",
                "holds": not missing,
                "plugins": ok_plugins,
                "proxiers": [
                    {
                        "proxier": str(mode),
                        "required": mode in REQUIRED,
                        "demonstrated": demonstrated[str(mode)] is not None,
                        "evidence": demonstrated[str(mode)],
                    }
                    for mode in MODES
                ],
                "why": "; ".join(missing) if missing else "the GA criteria hold",
                "supported": minor in supported,
                "note": newer_than_known(minor)
                + (
                    "; not among the supported releases until the catalog knows it"
                    if minor in newer
                    else ""
                ),
            }
        )
    return {
        "releases": releases,
        "minors": [f"1.{m}" for m in supported],
        "newer": [f"1.{m}" for m in newer],
        "holds": all(r["holds"] for r in releases if r["supported"]),
        "proxiers": [
            {"proxier": str(mode), "required": mode in REQUIRED, "note": NOTES.get(str(mode), "")}
            for mode in MODES
        ],
        "plugins": rows,
        "regressions": regressions,
        "rows": row_verdicts(ctx),
    }
