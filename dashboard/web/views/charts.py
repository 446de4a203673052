"""Pictures drawn on the server as inline SVG (no CDN, no build step, readable without
JavaScript): each criterion's status by day, and a plugin's pass rate per Kubernetes release."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django.utils.timezone import now

from dashboard.domain.catalog import TRANSITIONS

DAYS = 30
COLOURS = {"met": "#1a7f37", "unmet": "#cf222e", "at_risk": "#9a6700", "stale": "#656d76"}
WORDS = {"met": "met", "unmet": "unmet", "at_risk": "at risk", "stale": "stale"}
CRITERIA = [key for t in TRANSITIONS for key, _title in t["criteria"]]


def criterion_days(
    snapshots: list[tuple[datetime, dict[str, str]]], days: int = DAYS
) -> dict[str, list[tuple[date, str | None]]]:
    """Each criterion's status at the end of each of the last `days` days (None: not known yet).

    `snapshots` are (when, statuses) oldest first: a snapshot is stored whenever a status changed,
    so a day's status is the newest snapshot's at or before the day's end."""
    today = now().date()
    first = today - timedelta(days=days - 1)
    out: dict[str, list[tuple[date, str | None]]] = {k: [] for k in CRITERIA}
    i, current = 0, None
    for n in range(days):
        day = first + timedelta(days=n)
        while i < len(snapshots) and snapshots[i][0].date() <= day:
            current = snapshots[i][1]
            i += 1
        for key in CRITERIA:
            out[key].append((day, (current or {}).get(key)))
    return out


def criterion_history_svg(history: dict[str, list[tuple[date, str | None]]]) -> SafeString:
    """Rows of day squares per criterion, coloured by status; every square has its words."""
    cell, gap, label_w = 12, 2, 190
    days = len(next(iter(history.values()), []))
    width, height = label_w + days * (cell + gap), len(history) * (cell + 8) + 18
    rows = []
    for r, (key, statuses) in enumerate(history.items()):
        y = r * (cell + 8)
        squares = format_html_join(
            "",
            '<rect x="{}" y="{}" width="{}" height="{}" rx="2" fill="{}"><title>{} on {}: {}</title></rect>',
            (
                (
                    label_w + d * (cell + gap),
                    y,
                    cell,
                    cell,
                    COLOURS.get(status or "", "#eaeef2"),
                    key,
                    day.isoformat(),
                    WORDS.get(status or "", "not evaluated yet"),
                )
                for d, (day, status) in enumerate(statuses)
            ),
        )
        rows.append(
            format_html(
                '<g data-criterion="{}"><text x="0" y="{}" font-size="12" fill="#1f2328">{}</text>{}</g>',
                key,
                y + cell - 2,
                key,
                squares,
            )
        )
    first = next(iter(history.values()))[0][0] if days else None
    axis = (
        format_html(
            '<text x="{}" y="{}" font-size="12" fill="#57606a">{}</text>'
            '<text x="{}" y="{}" font-size="12" fill="#57606a" text-anchor="end">today</text>',
            label_w,
            height - 2,
            first.isoformat() if first else "",
            width - gap,
            height - 2,
        )
        if days
        else ""
    )
    return format_html(
        '<svg class="chart criterion-history" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {} {}" '
        'width="{}" height="{}" role="img" aria-labelledby="criterion-history-title">'
        '<title id="criterion-history-title">Each criterion by day over the last {} days: '
        "green met, red unmet, amber at risk, grey stale</title>{}{}</svg>",
        width,
        height,
        width,
        height,
        days,
        mark_safe("".join(rows)),
        axis,
    )


def pass_rate_svg(rates: list[dict[str, Any]]) -> SafeString:
    """Bars: one per Kubernetes release, the share of connectivity verdicts that passed."""
    bar, gap, top, chart_h = 36, 14, 16, 100
    width = max(1, len(rates)) * (bar + gap) + gap
    height = top + chart_h + 34
    bars = []
    for i, r in enumerate(rates):
        x = gap + i * (bar + gap)
        h = round(chart_h * r["rate"])
        colour = "#1a7f37" if r["rate"] >= 0.9 else ("#9a6700" if r["rate"] >= 0.5 else "#cf222e")
        bars.append(
            format_html(
                '<g data-release="{}"><rect x="{}" y="{}" width="{}" height="{}" fill="{}">'
                "<title>Kubernetes {}: {} of {} connectivity verdicts passed ({}%)</title></rect>"
                '<text x="{}" y="{}" font-size="12" text-anchor="middle" fill="#1f2328">{}%</text>'
                '<text x="{}" y="{}" font-size="12" text-anchor="middle" fill="#57606a">{}</text></g>',
                r["minor"],
                x,
                top + chart_h - h,
                bar,
                max(h, 1),
                colour,
                r["minor"],
                r["passed"],
                r["verdicts"],
                round(r["rate"] * 100),
                x + bar / 2,
                top + chart_h - h - 3,
                round(r["rate"] * 100),
                x + bar / 2,
                top + chart_h + 16,
                r["minor"],
            )
        )
    return format_html(
        '<svg class="chart pass-rate" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {} {}" '
        'width="{}" height="{}" role="img" aria-labelledby="pass-rate-title">'
        '<title id="pass-rate-title">Connectivity pass rate per Kubernetes release</title>'
        '<line x1="0" y1="{}" x2="{}" y2="{}" stroke="#d0d7de"/>{}</svg>',
        width,
        height,
        width,
        height,
        top + chart_h,
        width,
        top + chart_h,
        mark_safe("".join(bars)),
    )
