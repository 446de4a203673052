"""Plugin status for the SVG badge vendors embed: "SCTP | connectivity passing".

The status is the plugin's connectivity evidence as the criteria see it: the newest fresh
qualifying run or verified submission passes; newer evidence that does not qualify fails it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from html import escape

from django.db.models import OuterRef, Subquery
from django.utils.timezone import now

from dashboard.models import Plugin
from dashboard.readiness.base import Context
from dashboard.readiness.evidence_lookup import (
    Evidence,
    finished_runs,
    load,
    newest,
    verified_submissions,
)

COLOURS = {"passing": "#1a7f37", "failing": "#cf222e", "stale": "#6e7781", "no evidence": "#8c959f"}


@dataclass
class PluginStatus:
    status: str  # passing | failing | stale | no evidence
    qualifying: Evidence | None
    latest: Evidence | None

    @property
    def message(self) -> str:
        return "no evidence" if self.status == "no evidence" else f"connectivity {self.status}"


def plugin_status(plugin: Plugin, at: datetime | None = None) -> PluginStatus:
    def newest_id(qs, order):  # type: ignore[no-untyped-def]
        return Subquery(qs.filter(plugin=OuterRef("pk")).order_by(order).values("id")[:1])

    # `__in=[True]`, not `=True`: SQLite compiles the latter to a bare column test its planner
    # cannot match to the (plugin, state, qualifying|has_connectivity, -finished) indexes.
    runs, subs = finished_runs(), verified_submissions()
    ids = Plugin.objects.filter(pk=plugin.pk).annotate(
        q_run=newest_id(runs.filter(qualifying__in=[True]), "-finished"),
        c_run=newest_id(runs.filter(has_connectivity__in=[True]), "-finished"),
        q_sub=newest_id(subs.filter(qualifying__in=[True]), "-created"),
        c_sub=newest_id(subs.filter(has_connectivity__in=[True]), "-created"),
    ).values("q_run", "c_run", "q_sub", "c_sub").get()
    found = load([ids["q_run"], ids["c_run"]], [ids["q_sub"], ids["c_sub"]])
    best = newest(found.get(("run", ids["q_run"])), found.get(("submission", ids["q_sub"])))
    latest = newest(found.get(("run", ids["c_run"])), found.get(("submission", ids["c_sub"])))
    ctx = Context(now=at or now())
    if latest is None:
        status = "no evidence"
    elif not latest.qualifying:
        status = "failing"
    elif best is not None and ctx.is_fresh(best.when):
        status = "passing"
    else:
        status = "stale"
    return PluginStatus(status, best, latest)


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
    st = plugin_status(plugin)
    return render_svg("SCTP", st.message, COLOURS[st.status])


def etag_of(body: str) -> str:
    return '"' + hashlib.sha256(body.encode()).hexdigest()[:32] + '"'
