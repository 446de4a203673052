"""Plugin status for the SVG badge vendors embed: "SCTP | connectivity passing".

The status follows the plugin's newest counted connectivity evidence per plugin version and
proxier (dashboard.domain.policy decides what counts): passing when such evidence qualifies and none
of the plugin's fresh counted groups fails; failing when the newest counted evidence of some
version and proxier does not qualify; so one legacy cluster below the release floor never flips
it. Emulated evidence is never counted: a plugin with only that says so, in grey; so does one
with only self-reported (agent) runs no maintainer verified, and a badge passing on a verified
self-reported run says "(self-reported)".
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from html import escape
from typing import Any

from django.utils.timezone import now

from dashboard.domain.models import Plugin
from dashboard.domain.policy import (
    BADGE,
    EMULATED,
    TRUST,
    Assessment,
    Item,
    Policy,
    evidence_entry,
    on_proxier,
)
from dashboard.domain.readiness.evidence_lookup import connectivity_candidates, plugins_by_id

COLOURS = {
    "passing": "#1a7f37",
    "failing": "#cf222e",
    "stale": "#6e7781",
    "no evidence": "#8c959f",
    "emulated only": "#8c959f",
    "self-reported only": "#8c959f",
}


@dataclass
class PluginStatus:
    status: str  # passing | failing | stale | no evidence | emulated only | self-reported only
    qualifying: dict[str, Any] | None  # evidence_entry of the newest counted qualifying evidence
    latest: dict[str, Any] | None  # evidence_entry of the newest counted connectivity evidence
    why: str = ""
    groups: list[dict[str, Any]] = field(default_factory=list)  # per plugin version and proxier

    @property
    def message(self) -> str:
        if self.status == "no evidence":
            return "no evidence"
        if self.status == "emulated only":
            return "emulated only (not counted)"
        if self.status == "self-reported only":
            return "self-reported, unverified"
        if self.status == "passing" and (self.qualifying or {}).get("trust") == "self-reported":
            return "connectivity passing (self-reported)"
        return f"connectivity {self.status}"


def plugin_status(
    plugin: Plugin,
    at: datetime | None = None,
    candidates: list[Item] | None = None,
    policy: Policy | None = None,
    proxier: str | None = None,
) -> PluginStatus:
    """`candidates` and `policy`: the plugin's connectivity candidates when already found and
    the policy that assessed them (the publication finds every plugin's with the evaluation's).
    `proxier`: the status on that proxier mode only (the per-proxier badges)."""
    pol = policy or Policy(now=at or now())
    items = (
        candidates
        if candidates is not None
        else connectivity_candidates(plugins_by_id(), plugin_id=plugin.pk)
    )
    if proxier is not None:
        items = [i for i in items if on_proxier(i, proxier)]
    assessed: list[tuple[Item, Assessment]] = [
        (i, pol.assess(i, BADGE)) for i in items
    ]  # newest first
    groups: dict[tuple[str, str], tuple[Item, Assessment]] = {}
    for item, a in assessed:
        if a.counts or a.outcome_only:  # counted connectivity evidence, qualifying or not
            groups.setdefault(
                (item.plugin_version, item.proxier or item.declared_proxier), (item, a)
            )
    rows = [
        {"plugin_version": v, "proxier": p, "qualifies": a.counts, "evidence": evidence_entry(i, a)}
        for (v, p), (i, a) in groups.items()
    ]
    passing = [(i, a) for i, a in groups.values() if a.counts]
    failing = [(i, a) for i, a in groups.values() if not a.counts]
    if groups:
        latest = evidence_entry(*max(groups.values(), key=lambda ia: ia[0].when or pol.now))
        best = evidence_entry(*passing[0]) if passing else None
        if failing:
            i, a = failing[0]
            why = (
                f"{i.plugin_version or 'unversioned'} on {i.proxier or i.declared_proxier}: {a.why}"
            )
            return PluginStatus("failing", best, latest, why, rows)
        return PluginStatus("passing", best, latest, passing[0][1].why, rows)
    stale = next(((i, a) for i, a in assessed if a.stale_only), None)
    if stale is not None:
        return PluginStatus(
            "stale", evidence_entry(*stale), evidence_entry(*stale), stale[1].why, rows
        )
    emulated = next(((i, a) for i, a in assessed if EMULATED in a.blocked), None)
    if emulated is not None:
        return PluginStatus("emulated only", None, evidence_entry(*emulated), emulated[1].why, rows)
    unverified = next(((i, a) for i, a in assessed if i.self_reported and TRUST in a.blocked), None)
    if unverified is not None:
        return PluginStatus(
            "self-reported only", None, evidence_entry(*unverified), unverified[1].why, rows
        )
    if assessed:
        return PluginStatus(
            "no evidence", None, evidence_entry(*assessed[0]), assessed[0][1].why, rows
        )
    return PluginStatus("no evidence", None, None, "no connectivity evidence", rows)


def _text_width(text: str) -> int:
    # Verdana 11px averages about 6.5 px a character: good enough without font metrics.
    return int(len(text) * 6.5) + 12


def render_svg(label: str, message: str, colour: str) -> str:
    lw, mw = _text_width(label), _text_width(message)
    total = lw + mw
    label_e, message_e = escape(label), escape(message)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="20" role="img" '
        f'aria-label="{label_e}: {message_e}"><title>{label_e}: {message_e}</title>'
        f'<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/>'
        f'<stop offset="1" stop-opacity=".1"/></linearGradient>'
        f'<clipPath id="r"><rect width="{total}" height="20" rx="3" fill="#fff"/></clipPath>'
        f'<g clip-path="url(#r)"><rect width="{lw}" height="20" fill="#555"/>'
        f'<rect x="{lw}" width="{mw}" height="20" fill="{colour}"/>'
        f'<rect width="{total}" height="20" fill="url(#s)"/></g>'
        f'<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">'
        f'<text x="{lw / 2}" y="14">{label_e}</text><text x="{lw + mw / 2}" y="14">{message_e}</text></g></svg>'
    )


def badge(plugin: Plugin) -> str:
    """The badge computed now (the view serves the published one: dashboard.domain.readiness)."""
    st = plugin_status(plugin)
    return render_svg("SCTP", st.message, COLOURS[st.status])


def etag_of(body: str) -> str:
    return '"' + hashlib.sha256(body.encode()).hexdigest()[:32] + '"'
