"""The Markdown report a maintainer pastes into the KEP PR: verdicts, evidence with hashes, coverage.

Every evidence line says whether it counts and why (dashboard.domain.policy's answer, frozen in the
evaluation); emulated evidence is labelled; verified submissions carry their reviewer and reason.
Links use SITE_URL (the public address) when it is set. What vendors wrote is escaped.
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings

from dashboard.domain import kep_history
from dashboard.domain.audit import head
from dashboard.domain.models import Run, SignOff, Submission
from dashboard.domain.signoffs import (
    current_override,
    override_reason,
    override_text,
    unmet_criteria,
)
from kernel.vocabulary import Criterion

ICON = {"met": "✅", "unmet": "❌", "at_risk": "⚠️", "stale": "⌛"}


def _evidence_facts(evaluation: dict[str, Any]) -> tuple[dict[int, Any], dict[int, Any]]:
    run_ids: set[int] = set()
    sub_ids: set[int] = set()
    for t in evaluation["transitions"]:
        for c in t["criteria"]:
            for e in c["evidence"]:
                (run_ids if e["kind"] == "run" else sub_ids).add(e["id"])
    runs = (
        {
            r.id: r
            for r in Run.objects.filter(id__in=run_ids)
            .select_related("cluster", "plugin")
            .only(
                "id",
                "finished",
                "battery",
                "proxier",
                "proxier_detected",
                "kubernetes_version",
                "plugin_version",
                "cluster__name",
                "plugin__slug",
            )
        }
        if run_ids
        else {}
    )
    subs = (
        {
            s.id: s
            for s in Submission.objects.without_content()
            .filter(id__in=sub_ids)
            .select_related("plugin", "vendor", "reviewed_by")
            .only(
                "id",
                "sha256",
                "created",
                "kind",
                "proxier",
                "kubernetes_version",
                "plugin_version",
                "plugin__slug",
                "status",
                "run_at",
                "run_at_source",
                "vendor__name",
                "reviewed_at",
                "review_reason",
                "reviewed_by__username",
            )
        }
        if sub_ids
        else {}
    )
    return runs, subs


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|<>~])")


def _cell(text: Any) -> str:
    """Text as inert Markdown: no links, images, HTML or table breaks from what anyone typed."""
    flat = " ".join(str(text).split())
    return _MARKDOWN_SPECIAL.sub(r"\\\1", flat)


CELL_WORDS = 20  # a table cell longer than this keeps its first clause; the rest is a footnote


class Notes:
    """Footnotes for long table cells (GitHub renders `[^n]` references and definitions)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def cell(self, text: Any) -> str:
        flat = " ".join(str(text).split())
        words = flat.split()
        if len(words) <= CELL_WORDS:
            return _cell(flat)
        first = flat.split("; ")[0]
        if len(first.split()) > CELL_WORDS:
            first = " ".join(words[:CELL_WORDS])
        self.lines.append(f"[^{len(self.lines) + 1}]: {_cell(flat)}")
        return f"{_cell(first.rstrip('.,;:'))} …[^{len(self.lines)}]"


def _counted(e: dict[str, Any]) -> str:
    if e.get("counts", True):
        return "**counted**"
    mark = "emulated, " if e.get("emulated") else ""
    return f"*{mark}not counted*: {_cell(str(e.get('why', '')).removeprefix('not counted: '))}"


def markdown_report(evaluation: dict[str, Any], base_url: str) -> str:
    base_url = settings.SITE_URL or base_url
    runs, subs = _evidence_facts(evaluation)
    stage, unmet = current_override()
    over = f" ({override_text(unmet)})" if unmet and stage == evaluation["stage"] else ""
    source = evaluation.get("stage_source")
    if source == "kep":
        over += " (from KEP-614's history; no sign-off recorded on this dashboard)"
    elif source == "signoff":
        over += " (this dashboard's own sign-off)"
    lines = [
        "## KEP-614 SCTP support: graduation evidence",
        "",
        (
            f"Current stage: **{evaluation['stage']}**{over}. Evaluated at {evaluation['evaluated_at']} by the SCTP "
            f"readiness dashboard ({base_url}/). Evidence counts when younger than {evaluation['fresh_days']} days; "
            "only finished battery runs and *verified* vendor submissions count."
        ),
        "",
    ]
    lines += kep_history_lines(evaluation)
    plugins: set[str] = set()
    proxiers: set[str] = set()
    notes = Notes()
    for t in evaluation["transitions"]:
        lines += [
            f"### {t['from']} → {t['to']}: {'ready' if t['ready'] else 'not ready'}",
            "",
            "| criterion | verdict | detail |",
            "|---|---|---|",
        ]
        for c in t["criteria"]:
            lines.append(
                f"| `{c['key']}` {_cell(c['title'])} | {ICON.get(c['status'], '')} {c['status']} | "
                f"{notes.cell(c['detail'])} |"
            )
        lines.append("")
        for c in t["criteria"]:
            if c.get("what_if"):
                lines.append(f"- `{c['key']}`: {_cell(c['what_if'])}")
        lines.append("")
        for c in t["criteria"]:
            if not c["evidence"]:
                continue
            lines.append(f"Evidence for `{c['key']}`:")
            lines.append("")
            for e in c["evidence"]:
                url = f"{base_url}{e['url']}"
                counted = _counted(e)
                if e["kind"] == "run" and e["id"] in runs:
                    r = runs[e["id"]]
                    if e.get("counts", True):
                        plugins.add(r.plugin.slug)
                        proxiers.add(r.proxier_detected or r.proxier)
                    when = r.finished.strftime("%Y-%m-%d") if r.finished else "unfinished"
                    emulated = " (emulated cluster)" if e.get("emulated") else ""
                    lines.append(
                        f"- [run {r.id}]({url}): {r.battery} battery on cluster `{_cell(r.cluster.name)}`"
                        f"{emulated} ({r.plugin.slug} {_cell(r.plugin_version)}, Kubernetes "
                        f"{_cell(r.kubernetes_version)}, proxier "
                        f"{r.proxier_detected + ' detected' if r.proxier_detected else 'undetermined'}), "
                        f"finished {when}: {counted}"
                    )
                elif e["kind"] == "submission" and e["id"] in subs:
                    s = subs[e["id"]]
                    if e.get("counts", True):
                        plugins.add(s.plugin.slug)
                        proxiers.add(s.proxier)
                    ran = (
                        f"run {s.run_at:%Y-%m-%d}"
                        + ("" if s.run_at_source == "file" else " (upload time)")
                        if s.run_at
                        else f"uploaded {s.created:%Y-%m-%d}"
                    )
                    review = ""
                    if s.status == "verified":
                        who = s.reviewed_by.get_username() if s.reviewed_by else "a maintainer"
                        on = f" on {s.reviewed_at:%Y-%m-%d}" if s.reviewed_at else ""
                        review = f", verified by {_cell(who)}{on}" + (
                            f": {_cell(s.review_reason)}" if s.review_reason else ""
                        )
                    emulated = " (emulated)" if e.get("emulated") else ""
                    lines.append(
                        f"- [submission {s.id}]({url}){emulated}: {s.kind} from {_cell(s.vendor.name)} for "
                        f"{s.plugin.slug} {_cell(s.plugin_version)} (Kubernetes {_cell(s.kubernetes_version)}, "
                        f"{s.proxier}), {s.status}{review}, {ran}, sha256 `{s.sha256}`: {counted}"
                    )
                else:
                    lines.append(f"- [{_cell(e.get('label') or e['kind'])}]({url}): {counted}")
            lines.append("")
    for t in evaluation["transitions"]:
        for c in t["criteria"]:
            if c["key"] == Criterion.TWO_OUT_OF_TREE_PLUGINS and c.get("rows"):
                lines += [
                    "Plugins (connectivity evidence):",
                    "",
                    "| plugin | status | why |",
                    "|---|---|---|",
                ]
                lines += [
                    f"| {_cell(r['name'])}{' (in-tree)' if r['in_tree'] else ''} | {r['status']} | "
                    f"{notes.cell(r.get('why', ''))} |"
                    for r in c["rows"]
                ]
                lines.append("")
            if c["key"] == Criterion.IPTABLES_AND_IPVS and c.get("rows"):
                lines += [
                    "Proxier modes (pod-to-service):",
                    "",
                    "| proxier | required | status | why |",
                    "|---|---|---|---|",
                ]
                lines += [
                    f"| {r['proxier']} | {'yes' if r['required'] else 'no'} | {r['status']} | "
                    f"{notes.cell(r.get('why', ''))} |"
                    for r in c["rows"]
                ]
                lines.append("")
    lines.append(
        f"Plugins covered by counted evidence: {', '.join(sorted(plugins)) or 'none'}; "
        f"proxier modes: {', '.join(sorted(proxiers)) or 'none'}."
    )
    lines.append("")
    lines += watch_lines(evaluation, base_url)
    lines += _verified_submissions(evaluation, base_url)
    signoffs = list(SignOff.objects.select_related("maintainer")[:10])
    if signoffs:
        lines += ["Sign-offs (made on this dashboard, apart from the KEP's history):", ""]
        for s in signoffs:
            missed = unmet_criteria(s.snapshot, s.from_stage)
            said = (
                f" **{override_text(missed)}** (reason: {_cell(override_reason(s.snapshot))});"
                if missed
                else ""
            )
            anchor = f"; audit entry `{s.audit_seq}:{s.audit_head}`" if s.audit_head else ""
            lines.append(
                f"- {s.created:%Y-%m-%d} {s.from_stage} → {s.to_stage} by {s.maintainer.get_username()}:"
                f"{said} {_cell(s.comment)} (sign-off `{s.uuid}`{anchor})"
            )
        lines.append("")
    if notes.lines:
        lines += notes.lines
        lines.append("")
    lines += audit_anchor_lines()
    return "\n".join(lines)


def kep_history_lines(evaluation: dict[str, Any]) -> list[str]:
    """KEP-614's milestones with their PRs: history from the KEP, never this dashboard's sign-offs."""
    history = evaluation.get("kep_history") or []
    if not history:
        return []
    lines = [
        f"KEP-614's history (from [the KEP]({kep_history.KEP_URL}), not sign-offs made here):",
        "",
    ]
    for m in history:
        links = ", ".join(
            f"[{link['label']}]({link['url']}) ({_cell(link['what'])})" for link in m["links"]
        )
        lines.append(f"- {m['label']}: Kubernetes {m['release']}, released {m['date']}; {links}")
    lines.append("")
    return lines


def watch_lines(evaluation: dict[str, Any], base_url: str) -> list[str]:
    """After GA, today's question: the GA criteria per supported release, and the regressions."""
    watch = evaluation.get("watch") or {}
    if evaluation.get("stage") != "stable" or not watch.get("releases"):
        return []
    lines = [
        "### Post-GA watch: do the GA criteria still hold?",
        "",
        "| Kubernetes | GA criteria | plugins qualifying | iptables | nftables | ipvs |",
        "|---|---|---|---|---|---|",
    ]
    for r in watch["releases"]:
        shown = {p["proxier"]: p for p in r["proxiers"]}
        marks = [
            f"[{p['evidence']['kind']} {p['evidence']['id']}]({base_url}{p['evidence']['url']})"
            if p.get("demonstrated") and p.get("evidence")
            else "not demonstrated"
            for p in (shown.get(m, {}) for m in ("iptables", "nftables", "ipvs"))
        ]
        verdict = "hold" if r["holds"] else _cell(r["why"])
        plugins = ", ".join(r["plugins"]) or "none"
        lines.append(f"| {r['release']} | {verdict} | {plugins} | " + " | ".join(marks) + " |")
    lines.append("")
    for r in watch["releases"]:
        if r.get("note"):
            lines.append(f"- {r['release']}: {_cell(r['note'])}")
    for p in watch.get("proxiers") or []:
        if p.get("note"):
            lines.append(f"- {p['proxier']}: {_cell(p['note'])}")
    regressions = watch.get("regressions") or []
    lines += [
        "",
        "Regressions since the criteria last held:" if regressions else "Regressions: none.",
        "",
    ]
    for g in regressions:
        e = g.get("evidence") or {}
        lines.append(
            f"- {_cell(g['plugin'])} on Kubernetes {g['release']}, {g['proxier']}: "
            f"{_cell(', '.join(g.get('tests') or []) or g.get('why', ''))} "
            f"([{e.get('kind', '')} {e.get('id', '')}]({base_url}{e.get('url', '')}), {g.get('when', '')})"
        )
    if regressions:
        lines.append("")
    return lines


def audit_anchor_lines() -> list[str]:
    """The audit chain's head when the report was made: kept with the report, outside the
    database, so a later rewrite or truncation of the trail shows (dashboard/domain/audit.py)."""

    current = head()
    if current is None:
        return ["Audit trail: no entries yet.", ""]
    line = (
        f"Audit trail head at this report: entry {current.seq}, hash `{current.hash}` "
        f"(check it with `manage.py verify_audit_chain --checkpoint {current}`)."
    )
    return [line, ""]


VERIFIED_SHOWN = 50


def _verified_submissions(evaluation: dict[str, Any], base_url: str) -> list[str]:
    """Every recently verified vendor submission, with its reviewer, reason and what it counted for."""
    used: dict[int, list[str]] = {}
    why: dict[int, str] = {}
    for t in evaluation["transitions"]:
        for c in t["criteria"]:
            for e in c["evidence"]:
                if e["kind"] == "submission":
                    if e.get("counts"):
                        used.setdefault(e["id"], []).append(c["key"])
                    else:
                        why.setdefault(e["id"], str(e.get("why", "")))
    subs = list(
        Submission.objects.without_content()
        .filter(status=Submission.Status.VERIFIED)
        .select_related("plugin", "vendor", "reviewed_by")
        .defer("results", "report", "warnings")
        .order_by("-reviewed_at", "-created")[:VERIFIED_SHOWN]
    )
    if not subs:
        return ["Verified vendor submissions: none.", ""]
    lines = [
        "Verified vendor submissions:",
        "",
        "| submission | plugin | verified by | reason | counts for |",
        "|---|---|---|---|---|",
    ]
    for s in subs:
        who = s.reviewed_by.get_username() if s.reviewed_by else "?"
        on = f" ({s.reviewed_at:%Y-%m-%d})" if s.reviewed_at else ""
        if s.id in used:
            counts = ", ".join(f"`{k}`" for k in used[s.id])
        else:
            mark = "emulated, " if s.emulated else ""
            counts = f"{mark}not counted" + (
                f": {_cell(why[s.id].removeprefix('not counted: '))}" if s.id in why else ""
            )
        lines.append(
            f"| [{s.id}]({base_url}/submissions/{s.id}/) | {s.plugin.slug} {_cell(s.plugin_version)} "
            f"({s.proxier}) | {_cell(who)}{on} | {_cell(s.review_reason) or '—'} | {counts} |"
        )
    lines.append("")
    return lines
