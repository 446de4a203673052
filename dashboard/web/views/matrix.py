"""The matrix (/matrix/): plugins × proxier modes, the latest outcome of every catalog test.

Each cell says which source it shows (our run, verified vendor, pending vendor, self-reported);
what the cells hold is the domain's (dashboard/domain/matrix.py), how they look is here.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from dashboard.domain import matrix as evidence
from dashboard.domain.catalog import BASIC_KEYS, CATALOG, CONNECTIVITY_KEYS
from dashboard.web.views.outcomes import SHORT, cell
from dashboard.web.views.published import published_page
from kernel.vocabulary import Criterion

TRUST = {
    "run": "our run",
    "verified": "verified vendor",
    "pending": "pending vendor",
    "agent": "self-reported, verified",
    "agent-pending": "self-reported, unverified",
}
TRUST_SHORT = {
    "run": "ours",
    "verified": "vendor ✓",
    "pending": "vendor ?",
    "agent": "self-reported ✓",
    "agent-pending": "self-reported ?",
}


def _part(source: evidence.Source, key: str, *, main: bool) -> dict[str, Any]:
    """One source in a cell: the main one with its reason and marks, or a note beside it."""
    out = cell(
        source.outcome(key),
        trust=source.trust,
        trust_label=TRUST[source.trust],
        url=source.url,
        when=source.when,
        kubernetes_version=source.kubernetes_version,
        source=source.name,
    )
    if main:
        out.update(
            trust_short=TRUST_SHORT[source.trust],
            reason=source.reasons.get(key, ""),
            emulated=source.emulated,
        )
    return out


def _cell(shown: evidence.Shown, key: str) -> dict[str, Any]:
    out = cell("missing", trust=None) if shown.main is None else _part(shown.main, key, main=True)
    if shown.beside is not None:
        out["beside"] = _part(shown.beside, key, main=False)
    if shown.pending is not None:
        out["pending"] = _part(shown.pending, key, main=False)
    out["html"] = _cell_html(out)
    return out


def _cell_html(c: dict[str, Any]) -> str:
    """A cell's markup, built here: up to 21 rows × 8 cells of template lookups cost more than
    every query of the page together. Everything a tooltip says is also written in the cell
    (phones have no hover): the source (cluster or submission), its release and trust."""
    if c.get("url"):
        title = f"{c['label']} · {c['trust_label']} · {c['source']} · k8s {c['kubernetes_version']} · {c['when']:%Y-%m-%d}"
        if c.get("reason"):
            title += f" · {c['reason']}"
        html = format_html(
            '<a href="{}" class="o o-{} trust-{}" title="{}" aria-label="{}">{}</a>'
            '<span class="src"><a href="{}">{}</a> <span class="rel">{}</span></span>'
            '<span class="trust trust-{}">{}{}</span>',
            c["url"],
            c["outcome"],
            c["trust"],
            title,
            title,
            c["symbol"],
            c["url"],
            c["source"],
            c["kubernetes_version"] or "?",
            c["trust"],
            c["trust_short"],
            " · emulated" if c.get("emulated") else "",
        )
    else:
        html = format_html(
            '<span class="o o-missing" title="no evidence">{}</span><span class="src muted">no evidence</span>',
            c["symbol"],
        )
    if b := c.get("beside"):
        html += format_html(
            '<a href="{}" class="beside-note" title="{}: {}">'
            '<span class="o o-{} trust-{}">{}</span> <span class="trust trust-{}">{} · {}</span></a>',
            b["url"],
            b["trust_label"],
            b["label"],
            b["outcome"],
            b["trust"],
            b["symbol"],
            b["trust"],
            b["source"],
            TRUST_SHORT[b["trust"]],
        )
    if p := c.get("pending"):
        html += format_html(
            '<a href="{}" class="pending-note" title="{}: {}">'
            '<span class="o o-{} trust-{}">{}</span> <span class="trust trust-{}">{} · {}</span></a>',
            p["url"],
            p["trust_label"],
            p["label"],
            p["outcome"],
            p["trust"],
            p["symbol"],
            p["trust"],
            p["source"],
            TRUST_SHORT[p["trust"]],
        )
    return mark_safe(html)  # every piece went through format_html


def build_matrix() -> dict[str, Any]:
    return {
        "rows": [
            {
                "plugin": row.plugin,
                "proxier": row.proxier,
                "minor": row.minor,
                "cells": [
                    {"key": key, "short": SHORT[key], **_cell(shown, key)}
                    for key, shown in row.cells.items()
                ],
                "kubernetes_versions": row.kubernetes_versions,
                "first": row.first,
            }
            for row in evidence.rows()
        ],
        "tests": [
            {
                "key": t["key"],
                "title": t["title"],
                "battery": t["battery"],
                "short": SHORT[t["key"]],
            }
            for t in CATALOG
        ],
        "basic_count": len(BASIC_KEYS),
        "connectivity_count": len(CONNECTIVITY_KEYS),
    }


def proxier_verdicts(evaluation: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-proxier verdict of the publication (iptables, ipvs, nftables: the rules of the
    criterion iptables-and-ipvs, nftables followed beside it), as `/` shows it."""
    for transition in evaluation.get("transitions") or []:
        for criterion in transition.get("criteria") or []:
            if criterion.get("key") == Criterion.IPTABLES_AND_IPVS:
                return list(criterion.get("rows") or [])
    return []


def matrix_body(evaluation: dict[str, Any], maintainer: bool) -> SafeString:
    """The matrix for one publication: every source it reads (runs, results, submissions,
    clusters, plugins) bumps the publication when it changes."""
    return mark_safe(  # the template's own autoescaped output
        render_to_string(
            "matrix/_matrix_body.html",
            {"matrix": build_matrix(), "trust": TRUST, "proxiers": proxier_verdicts(evaluation)},
        )
    )


def matrix(request: HttpRequest) -> HttpResponse:
    return published_page(request, "matrix", "Matrix", matrix_body)
