"""The matrix (/matrix/): plugins × proxier modes, the latest outcome of every catalog test.

Each cell says which source it shows (our run, verified vendor, pending vendor, self-reported);
what the cells hold is the domain's (dashboard/domain/matrix.py), how they look is here.
"""

from __future__ import annotations

import functools
import html
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
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
    if shown.upstream is not None:
        # Upstream's e2e.test on the same cluster and release (issue 38), its outcome beside ours.
        out["upstream"] = _part(shown.upstream, key, main=False)
        out["disagree"] = evidence.disagree(shown.main, shown.upstream, key)
    out["html"] = mark_safe(_cell_html(out))  # every value in it went through _e
    return out


def _e(value: Any) -> str:
    """conditional_escape() without its lazy-string wrapper (a third of the page's time at
    ~1,000 cells): the same text, safe strings passed through. A page escapes ~13,000 values,
    mostly the same few hundred (test keys, outcomes, symbols, cluster names, URLs): a plain
    string's escaped text is remembered."""
    if type(value) is str:
        return _escaped(value)
    if hasattr(value, "__html__"):
        return str(value.__html__())
    return html.escape(str(value))


@functools.lru_cache(maxsize=8192)
def _escaped(text: str) -> str:
    return html.escape(text)


def _note(css: str, n: dict[str, Any]) -> str:
    return (
        f'<a href="{_e(n["url"])}" class="{css}" title="{_e(n["trust_label"])}: {_e(n["label"])}">'
        f'<span class="o o-{_e(n["outcome"])} trust-{_e(n["trust"])}">{_e(n["symbol"])}</span> '
        f'<span class="trust trust-{_e(n["trust"])}">{_e(n["source"])} · '
        f"{_e(TRUST_SHORT[n['trust']])}</span></a>"
    )


def _cell_html(c: dict[str, Any]) -> str:
    """A cell's markup, built here: up to 21 rows × 8 cells of template lookups cost more than
    every query of the page together. Everything a tooltip says is also written in the cell
    (phones have no hover): the source (cluster or submission), its release and trust. Every
    value is escaped (_e)."""
    if c.get("url"):
        title = f"{c['label']} · {c['trust_label']} · {c['source']} · k8s {c['kubernetes_version']} · {c['when']:%Y-%m-%d}"
        if c.get("reason"):
            title += f" · {c['reason']}"
        url, title, trust = _e(c["url"]), _e(title), _e(c["trust"])
        out = (
            f'<a href="{url}" class="o o-{_e(c["outcome"])} trust-{trust}" title="{title}" '
            f'aria-label="{title}">{_e(c["symbol"])}</a>'
            f'<span class="src"><a href="{url}">{_e(c["source"])}</a> '
            f'<span class="rel">{_e(c["kubernetes_version"] or "?")}</span></span>'
            f'<span class="trust trust-{trust}">{_e(c["trust_short"])}'
            f"{' · emulated' if c.get('emulated') else ''}</span>"
        )
    else:
        out = (
            f'<span class="o o-missing" title="no evidence">{_e(c["symbol"])}</span>'
            '<span class="src muted">no evidence</span>'
        )
    if b := c.get("beside"):
        out += _note("beside-note", b)
    if p := c.get("pending"):
        out += _note("pending-note", p)
    if u := c.get("upstream"):
        words = f"upstream's e2e.test {u['label']} · run {u['url'].strip('/').rsplit('/', 1)[-1]}"
        out += (
            f'<a href="{_e(u["url"])}" class="upstream-note" title="{_e(words)}">'
            f'<span class="o o-{_e(u["outcome"])}">{_e(u["symbol"])}</span> '
            f'<span class="trust">upstream e2e.test: {_e(u["label"])}</span></a>'
        )
        if c.get("disagree"):
            out += (
                '<span class="disagree-flag" data-flag="disagree" title="our battery and '
                "upstream's e2e.test disagree on this test: neither pass counts\">"
                "⚠ batteries disagree</span>"
            )
    return out


def _cell_td(c: dict[str, Any]) -> str:
    """The cell's whole <td> (the template would look up five values in each of ~1,000)."""
    return (
        f'<td class="cell" data-label="{_e(c["key"])}" data-key="{_e(c["key"])}" '
        f'data-outcome="{_e(c["outcome"])}" data-trust="{_e(c["trust"] or "")}"'
        f"{_upstream_attrs(c)}>{c['html']}</td>"
    )


def _upstream_attrs(c: dict[str, Any]) -> str:
    u = c.get("upstream")
    if not u:
        return ""
    flag = ' data-disagree="true"' if c.get("disagree") else ""
    return f' data-upstream="{_e(u["outcome"])}"{flag}'


VERDICT_WORDS = {
    "holds": ("✔", "connectivity qualifies"),
    "regressed": ("✘", "connectivity no longer qualifies"),
    "fails": ("✘", "connectivity does not qualify"),
    "stale": ("⌛", "connectivity qualified only with stale evidence"),
    "not counted": ("✘", "connectivity not counted"),
}


def row_verdict(found: dict[str, Any] | None) -> dict[str, Any] | None:
    """A row's answer before its cells: does its connectivity qualify, and why not (the
    evaluation's per-row verdicts: dashboard.domain.readiness.watch.row_verdicts)."""
    if found is None:
        return None
    symbol, words = VERDICT_WORDS.get(found["status"], ("?", found["status"]))
    return {**found, "symbol": symbol, "words": words, "ok": found["status"] == "holds"}


def build_matrix(verdicts: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    by_row = {(v["plugin"], v["proxier"], v["minor"]): v for v in verdicts or []}
    rows = []
    for row in evidence.rows():
        cells = [
            {"key": key, "short": SHORT[key], **_cell(shown, key)}
            for key, shown in row.cells.items()
        ]
        rows.append(
            {
                "plugin": row.plugin,
                "proxier": row.proxier,
                "minor": row.minor,
                "cells": cells,
                "cells_html": mark_safe("".join(_cell_td(c) for c in cells)),  # escaped: _e
                "kubernetes_versions": row.kubernetes_versions,
                "first": row.first,
                "verdict": row_verdict(by_row.get((row.plugin["slug"], row.proxier, row.minor))),
            }
        )
    return {
        "rows": rows,
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
            {
                "matrix": build_matrix((evaluation.get("watch") or {}).get("rows")),
                "trust": TRUST,
                "proxiers": proxier_verdicts(evaluation),
            },
        )
    )


def matrix(request: HttpRequest) -> HttpResponse:
    return published_page(request, "matrix", "Matrix", matrix_body)
